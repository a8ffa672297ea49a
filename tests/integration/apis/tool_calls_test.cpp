// Tool calls and structured output end to end (issue 19): llmload's --tools and --json-schema
// against llmload-server, whose tool calls and JSON answers follow the request's schemas unless
// its invalid-output fault breaks them on purpose. The fault's own counter on the server's
// /metrics is the ground truth: llmload must find exactly the responses the server broke, of the
// kind it broke them, through chat, the Responses API and the Messages API. Agent sessions send
// the tool results back, and previous_response_id threads a Responses conversation.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::testing::tool_calls_test {

using nlohmann::json;
using namespace std::chrono_literals;

// The value of one series of the server's /metrics (curl, as the engine tests read it).
double server_metric(const ServerHandle& server, const std::string& series) {
  const RunResult r = run({"curl", "-sS", "--max-time", "10", server.base_url + "/metrics"}, 20s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find(series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(r.out.substr(at + series.size() + 1));
}

std::map<std::string, int> verdicts(const std::vector<json>& records) {
  std::map<std::string, int> out;
  for (const auto& r : records) {
    if (r.contains("structured_verdict") && r["structured_verdict"].is_string()) ++out[r["structured_verdict"]];
  }
  return out;
}

const std::string kInjected =
    R"(llmload:faults_injected_total{engine="0",kind="invalid-output",model_name="llmload-mock"})";

TEST(ToolCalls, ValidityMatchesTheServersGroundTruthOnEveryApi) {
  struct Case {
    std::string backend, mode, expect;
  };
  for (const Case& c : {Case{"openai-chat", "json", "invalid_json"}, Case{"openai-responses", "schema", "schema_violation"},
                        Case{"anthropic", "json", "invalid_json"}}) {
    auto server = start_server({"--latency-model", "fixed", "--ttft", "2ms", "--itl", "1ms", "--fault",
                                "0.25:invalid-output=" + c.mode});
    TempDir out;
    auto run = run_llmload(out, {"--base-url", server.base_url, "--backend", c.backend, "--tools", "builtin",
                                 "--json-schema", "builtin", "--tool-ratio", "0.5", "--num-requests", "120",
                                 "--concurrency", "4", "--input-tokens", "16", "--output-tokens", "200"});
    ASSERT_EQ(run.proc.exit_code, 0) << c.backend << ": " << run.proc.err;
    const double injected = server_metric(server, kInjected);
    const auto v = verdicts(run.records);
    EXPECT_GT(injected, 10) << c.backend << ": a quarter of 120 requests";
    EXPECT_EQ(v.count(c.expect) ? v.at(c.expect) : 0, injected) << c.backend << ": every broken response found, no other";
    EXPECT_EQ(v.at("valid") + injected, 120) << c.backend;
    const json& so = run.result["structured_output"];
    ASSERT_TRUE(so.is_object()) << c.backend;
    EXPECT_EQ(so["judged"], 120) << c.backend;
    EXPECT_NEAR(so["invalid_rate"].get<double>(), injected / 120.0, 1e-9) << c.backend;
    EXPECT_EQ(so["by_kind"].size(), 2u) << c.backend << ": tools and json_schema requests, " << so.dump();
    int tool_requests = 0;
    for (const auto& r : run.records) {
      if (r["structured"].get<std::string>().find("tools") == std::string::npos) continue;
      ++tool_requests;
      // The server called the tool it was asked to call; TTFO is the call's first token.
      ASSERT_TRUE(r.contains("tool_calls")) << c.backend << ": " << r.dump();
      EXPECT_EQ(r["tool_calls"].size(), 1u) << c.backend;
      EXPECT_TRUE(r["ttfo_ms"].is_number()) << c.backend;
      EXPECT_EQ(r["finish_reason"], "tool_calls") << c.backend;
    }
    EXPECT_GT(tool_requests, 30) << c.backend << ": about half carried tools";
  }
}

TEST(ToolCalls, AgentSessionsSendToolResultsAndResponsesThreadsByPreviousResponseId) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "2ms", "--itl", "1ms"});
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--backend", "openai-chat"}, std::vector<std::string>{"--backend", "anthropic"},
        std::vector<std::string>{"--backend", "openai-responses"},
        std::vector<std::string>{"--backend", "openai-responses", "--conversation-state", "server"}}) {
    TempDir out;
    std::vector<std::string> args = {"--base-url", server.base_url, "--tools", "builtin", "--turns", "3",
                                     "--num-requests", "30", "--concurrency", "3", "--input-tokens", "32"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto run = run_llmload(out, args);
    const std::string what = extra.back();
    ASSERT_EQ(run.proc.exit_code, 0) << what << ": " << run.proc.err;
    ASSERT_EQ(run.records.size(), 30u) << what;
    // Every turn succeeded: the server accepted the tool calls and results sent back (or the
    // previous_response_id it issued), and each turn called a tool again.
    std::map<std::int64_t, std::vector<json>> sessions;
    for (const auto& r : run.records) {
      ASSERT_TRUE(r["ok"].get<bool>()) << what << ": " << r.dump();
      EXPECT_EQ(r["structured_verdict"], "valid") << what << ": " << r.dump();
      sessions[r["session"].get<std::int64_t>()].push_back(r);
    }
    for (auto& [id, turns] : sessions) {
      std::sort(turns.begin(), turns.end(), [](const json& a, const json& b) { return a["turn"] < b["turn"]; });
      for (std::size_t k = 1; k < turns.size(); ++k) {
        // The server saw the conversation grow: its prompt count includes the earlier turns.
        EXPECT_GT(turns[k]["input_tokens"].get<int>(), turns[k - 1]["input_tokens"].get<int>()) << what;
      }
    }
    if (what == "server") {
      EXPECT_EQ(run.result["conditions"]["scenario"]["conversation_state"], "server");
    }
  }
}

// Trials pool the sections: the judged requests of every trial, the invalid rate of their sum.
TEST(ToolCalls, TrialsPoolTheValidityOfEveryTrial) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "2ms", "--itl", "1ms", "--fault",
                              "0.3:invalid-output"});
  TempDir out;
  auto run = run_llmload(out, {"--base-url", server.base_url, "--backend", "openai-chat", "--tools", "builtin",
                               "--trials", "2", "--num-requests", "30", "--concurrency", "3", "--input-tokens", "16"});
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  ASSERT_EQ(run.result["artifact"], "trials") << run.result.dump().substr(0, 300);
  const json& so = run.result["structured_output"];
  ASSERT_TRUE(so.is_object()) << run.result.dump().substr(0, 300);
  EXPECT_EQ(so["judged"], 60);
  const double injected = server_metric(server, kInjected);
  EXPECT_EQ(so["invalid"], injected) << "both trials' broken responses";
  EXPECT_NEAR(so["invalid_rate"].get<double>(), injected / 60.0, 1e-9);
}

TEST(ToolCalls, BadFlagsNameTheFix) {
  TempDir out;
  auto run = run_llmload(out, {"--base-url", "http://127.0.0.1:9", "--backend", "openai-completions", "--tools", "builtin"});
  EXPECT_EQ(run.proc.exit_code, 2);
  EXPECT_NE(run.proc.err.find("--backend openai-chat"), std::string::npos) << run.proc.err;
  TempDir out2, out3;
  auto missing = run_llmload(out2, {"--base-url", "http://127.0.0.1:9", "--backend", "openai-chat", "--tools",
                                   out.file("none.json")});
  EXPECT_EQ(missing.proc.exit_code, 2);
  EXPECT_NE(missing.proc.err.find("none.json"), std::string::npos) << missing.proc.err;
  auto state = run_llmload(out3, {"--base-url", "http://127.0.0.1:9", "--backend", "openai-chat", "--turns", "2",
                                 "--conversation-state", "server"});
  EXPECT_EQ(state.proc.exit_code, 2);
  EXPECT_NE(state.proc.err.find("openai-responses"), std::string::npos) << state.proc.err;
}

}  // namespace llmload::testing::tool_calls_test
