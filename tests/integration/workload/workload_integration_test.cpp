// Issue 5 end to end: the real llmload drives the real llmload-server over loopback with each
// backend, workload source, trace format, timeout and the vLLM-compatible flags, and what a user
// would check shows up in result.json and requests.jsonl.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kTraces = LLMLOAD_TRACES_DIR;

// The sample traces ship in data/traces/; a missing one fails its test with this message.
std::string trace_sample(const std::string& name) {
  const std::string path = kTraces + "/" + name;
  if (!std::ifstream(path)) {
    throw std::runtime_error("test data file " + path +
                             " cannot be read: the trace samples live in data/traces/ of the repository (see its README)");
  }
  return path;
}

LlmloadRun run_at(const TempDir& dir, const ServerHandle& server, std::vector<std::string> args,
                  const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), {"--base-url", server.base_url});
  return testing::run_llmload(dir, args, env);
}

// A fast server: fixed latencies, so the tests spend their time on what they check.
ServerHandle fast_server(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--latency-model", "fixed", "--ttft", "2ms", "--itl", "1ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  return start_server(args);
}

std::vector<json> measured(const LlmloadRun& r) {
  std::vector<json> out;
  for (const auto& rec : r.records) {
    if (!rec["warmup"].get<bool>()) out.push_back(rec);
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Backends, EachBackendStreamedAndNotGivesExactTokensAndGroundTruth) {
  auto server = fast_server();
  for (const std::string backend : {"openai-completions", "openai-chat", "sglang"}) {
    for (const bool stream : {true, false}) {
      SCOPED_TRACE(backend + (stream ? " streaming" : " non-streaming"));
      TempDir dir;
      std::vector<std::string> args = {"--backend", backend, "--num-requests", "6", "--concurrency", "2",
                                       "--input-tokens", "20", "--output-tokens", "7"};
      if (!stream) args.push_back("--no-stream");
      auto r = run_at(dir, server, args);
      ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
      auto recs = measured(r);
      ASSERT_EQ(recs.size(), 6u);
      for (const auto& rec : recs) {
        EXPECT_TRUE(rec["ok"].get<bool>()) << rec.dump();
        EXPECT_EQ(rec["output_tokens"], 7);
        EXPECT_EQ(rec["input_tokens"], rec["requested_input_tokens"]) << "calibrated prompts count exactly";
        EXPECT_TRUE(rec["tokens_from_usage"].get<bool>());
        EXPECT_FALSE(rec["ended_early"].get<bool>());
        ASSERT_TRUE(rec.contains("server")) << "the server's ground truth is recorded";
        EXPECT_GT(rec["server"]["first_token_s"].get<double>(), 0);
        if (stream) {
          EXPECT_EQ(rec["output_events"], 7);
        } else {
          EXPECT_EQ(rec["ttft_ms"], rec["e2e_ms"]) << "non-streaming: TTFT equals E2E";
          EXPECT_TRUE(rec["tpot_ms"].is_null()) << "no time between tokens observed: " << rec.dump();
        }
      }
      if (!stream) {  // null, not a measured 0 ms (a sweep's table and compare read it)
        EXPECT_TRUE(r.result["p99_tpot_ms"].is_null()) << r.result["p99_tpot_ms"];
        EXPECT_TRUE(r.result["mean_itl_ms"].is_null()) << r.result["mean_itl_ms"];
        EXPECT_TRUE(r.result["latency"]["tpot"].is_null()) << r.result["latency"]["tpot"];
        EXPECT_TRUE(r.result["p99_ttft_ms"].is_number());
      }
      const auto& c = r.result["conditions"];
      EXPECT_EQ(c["scenario"]["backend"], backend);
      EXPECT_EQ(c["scenario"]["stream"], stream);
      EXPECT_EQ(c["prompts"]["method"], "tokenize");
      EXPECT_EQ(r.result["non_streaming_note"].is_null(), stream);
    }
  }
}

TEST(Backends, ExtraBodyReachesTheServerAndEarlyEndsAreFlagged) {
  auto server = fast_server();
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--num-requests", "5", "--output-tokens", "9", "--no-ignore-eos", "--extra-body",
                   R"({"max_tokens": 3})"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  for (const auto& rec : measured(r)) {
    EXPECT_EQ(rec["output_tokens"], 3);
    EXPECT_EQ(rec["requested_output_tokens"], 9);
    EXPECT_TRUE(rec["ended_early"].get<bool>());
  }
  EXPECT_EQ(r.result["tokens"]["ended_early"], 5);
  EXPECT_EQ(r.result["tokens"]["output_tokens"], 15);
  EXPECT_NE(r.proc.out.find("fewer output tokens than requested"), std::string::npos) << r.proc.out;
  EXPECT_EQ(r.result["conditions"]["scenario"]["ignore_eos"], false);
}

TEST(Backends, ExtraHeadersAndApiKeysNeverWrittenOut) {
  const std::string secret = "sk-very-secret-4711";
  auto server = fast_server({"--api-key", secret});
  {
    TempDir dir;
    auto r = run_at(dir, server, {"--num-requests", "3", "--header", "Authorization: Bearer " + secret});
    ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
    EXPECT_EQ(r.result["conditions"]["scenario"]["extra_headers"], json::array({"Authorization"}));
    EXPECT_EQ(slurp(dir.file("result.json")).find(secret), std::string::npos) << "header values are not written";
  }
  TempDir dir;
  auto r = run_at(dir, server, {"--num-requests", "4"}, {"OPENAI_API_KEY=" + secret});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  EXPECT_EQ(r.result["completed"], 4);
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(slurp(f.path().string()).find(secret), std::string::npos) << f.path();
  }
  EXPECT_EQ(r.proc.out.find(secret), std::string::npos);
  EXPECT_EQ(r.proc.err.find(secret), std::string::npos);
  TempDir wrong;
  auto denied = run_at(wrong, server, {"--num-requests", "2"}, {"OPENAI_API_KEY=wrong-key-99"});
  EXPECT_EQ(denied.proc.exit_code, 2);
  EXPECT_NE(denied.proc.err.find("API key"), std::string::npos) << denied.proc.err;
  EXPECT_EQ(denied.proc.err.find("wrong-key-99"), std::string::npos) << denied.proc.err;
}

TEST(Timeouts, FirstTokenAndInterTokenAreTheirOwnErrorClasses) {
  auto server = fast_server();
  TempDir a;
  auto first = run_at(a, server,
                      {"--num-requests", "3", "--concurrency", "3", "--first-token-timeout", "200ms", "--header",
                       "X-Llmload-Fault: slow-first-byte=3s"});
  ASSERT_EQ(first.proc.exit_code, 6) << first.proc.err;  // every request timed out: nothing measured
  EXPECT_EQ(first.result["errors"]["by_class"]["first_token_timeout"]["count"], 3) << first.result["errors"].dump();
  for (const auto& rec : measured(first)) EXPECT_LT(rec["t_done_ms"].get<double>() - rec["t_send_ms"].get<double>(), 2500);
  TempDir b;
  auto gap = run_at(b, server,
                    {"--num-requests", "3", "--concurrency", "3", "--output-tokens", "10", "--inter-token-timeout",
                     "200ms", "--header", "X-Llmload-Fault: stall=3s@4"});
  ASSERT_EQ(gap.proc.exit_code, 6) << gap.proc.err;
  EXPECT_EQ(gap.result["errors"]["by_class"]["inter_token_timeout"]["count"], 3) << gap.result["errors"].dump();
  for (const auto& rec : measured(gap)) EXPECT_GE(rec["output_events"].get<int>(), 1);
}

TEST(Workloads, LengthDistributionsAreCountedExactlyByTheServer) {
  auto server = fast_server();
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--num-requests", "40", "--concurrency", "8", "--input-dist", "uniform:10,60", "--output-dist",
                   "normal:12,3", "--seed", "5"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  std::set<std::int64_t> inputs;
  for (const auto& rec : measured(r)) {
    const auto in = rec["requested_input_tokens"].get<std::int64_t>();
    EXPECT_GE(in, 10);
    EXPECT_LE(in, 60);
    inputs.insert(in);
    EXPECT_EQ(rec["input_tokens"], in);
    EXPECT_EQ(rec["output_tokens"], rec["requested_output_tokens"]);
  }
  EXPECT_GT(inputs.size(), 10u) << "lengths vary";
  TempDir g;
  auto genai = run_at(g, server, {"--num-requests", "5", "--traffic-scenario", "D(33,4)"});
  ASSERT_EQ(genai.proc.exit_code, 0) << genai.proc.err;
  for (const auto& rec : measured(genai)) {
    EXPECT_EQ(rec["input_tokens"], 33);
    EXPECT_EQ(rec["output_tokens"], 4);
  }
}

TEST(Workloads, SharedPrefixesHitThePrefixCache) {
  auto server = start_server({"--profile", "tiny"});
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--num-requests", "24", "--concurrency", "1", "--prefix-groups", "2", "--prefix-tokens", "128",
                   "--input-tokens", "16", "--output-tokens", "2"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  int hits = 0;
  for (const auto& rec : measured(r)) {
    EXPECT_EQ(rec["input_tokens"], rec["requested_input_tokens"]);
    if (rec["cached_tokens"].is_number() && rec["cached_tokens"].get<int>() >= 96) ++hits;
  }
  EXPECT_GE(hits, 20) << "after the first request of each group, the prefix is cached";
}

TEST(Workloads, MultiTurnSessionsCarryTheConversation) {
  auto server = fast_server();
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--backend", "openai-chat", "--turns", "3", "--think-time", "50ms", "--concurrency", "2",
                   "--num-requests", "12", "--input-tokens", "10", "--output-tokens", "5"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  std::map<std::int64_t, std::vector<json>> sessions;
  for (const auto& rec : measured(r)) sessions[rec["session"].get<std::int64_t>()].push_back(rec);
  EXPECT_GE(sessions.size(), 4u);
  for (auto& [id, turns] : sessions) {
    std::sort(turns.begin(), turns.end(), [](const json& a, const json& b) { return a["turn"] < b["turn"]; });
    for (std::size_t t = 0; t < turns.size(); ++t) {
      EXPECT_EQ(turns[t]["turn"], t);
      // Each turn carries every earlier prompt and answer: 10 + t * (10 + 5) tokens.
      EXPECT_EQ(turns[t]["input_tokens"], 10 + 15 * static_cast<int>(t)) << turns[t].dump();
      EXPECT_EQ(turns[t]["input_tokens"], turns[t]["requested_input_tokens"]);
      if (t > 0) {
        EXPECT_GE(turns[t]["t_intended_ms"].get<double>(), turns[t - 1]["t_done_ms"].get<double>() + 50 - 0.01)
            << "the next turn is due a think time after the previous completes";
      }
    }
  }
}

// A reasoning model's earlier answers go back without their reasoning: the requested input counts
// the answers' tokens only (it counted the reasoning too, 24% over the server's count).
TEST(Workloads, MultiTurnInputCountsTheAnswersNotTheirReasoning) {
  auto server = fast_server({"--reasoning-tokens", "4"});
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--backend", "openai-chat", "--turns", "3", "--concurrency", "2", "--num-requests", "12",
                   "--input-tokens", "10", "--output-tokens", "9"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  int later_turns = 0;
  for (const auto& rec : measured(r)) {
    EXPECT_EQ(rec["input_tokens"], rec["requested_input_tokens"]) << rec.dump();
    later_turns += rec["turn"].get<int>() > 0 ? 1 : 0;
  }
  EXPECT_GE(later_turns, 6);
}

// A shared prefix with sessions opens each conversation once, like a system prompt: later turns
// carry it in their history, not again (each turn carried another group's prefix in its message).
TEST(Workloads, ASessionsSharedPrefixOpensItsConversationOnce) {
  auto server = fast_server();
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--backend", "openai-chat", "--turns", "3", "--concurrency", "2", "--num-requests", "12",
                   "--input-tokens", "10", "--output-tokens", "5", "--prefix-groups", "2", "--prefix-tokens", "64"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  std::size_t checked = 0;
  for (const auto& rec : measured(r)) {
    const int t = rec["turn"].get<int>();
    // The prefix and the first prompt, then each turn's answer and new prompt: 64 + 10 + t * (5 + 10).
    EXPECT_EQ(rec["input_tokens"], 64 + 10 + 15 * t) << rec.dump();
    EXPECT_EQ(rec["input_tokens"], rec["requested_input_tokens"]) << rec.dump();
    ++checked;
  }
  EXPECT_EQ(checked, 12u);
}

TEST(Datasets, ShareGptAndCustomJsonl) {
  auto server = fast_server();
  TempDir dir;
  json convs = json::array();
  for (int i = 0; i < 12; ++i) {
    std::string human, gpt;
    for (int w = 0; w < 10 + i; ++w) human += "word ";
    for (int w = 0; w < 5 + i; ++w) gpt += "reply ";
    convs.push_back({{"id", std::to_string(i)},
                     {"conversations", json::array({{{"from", "human"}, {"value", human}}, {{"from", "gpt"}, {"value", gpt}}})}});
  }
  convs.push_back({{"id", "single"}, {"conversations", json::array({{{"from", "human"}, {"value", "only one turn"}}})}});
  TempDir in;  // inputs beside, not in, the output directory (a used one is refused)
  std::ofstream(in.file("sg.json")) << convs.dump();
  auto r = run_at(dir, server, {"--dataset-name", "sharegpt", "--dataset-path", in.file("sg.json"), "--num-prompts", "8"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  EXPECT_EQ(r.result["completed"], 8);
  EXPECT_EQ(r.result["conditions"]["workload"]["dataset"], "sharegpt") << r.result["conditions"]["workload"].dump();

  TempDir c;
  std::ofstream(in.file("custom.jsonl")) << R"({"prompt": "hello there world", "output_tokens": 3, "timestamp": 0.0})" << "\n"
                                        << R"({"prompt": "one two", "output_tokens": 4, "timestamp": 0.2})" << "\n"
                                        << R"({"prompt": "three four five six", "timestamp": 0.4})" << "\n";
  auto cr = run_at(c, server, {"--dataset-name", "custom", "--dataset-path", in.file("custom.jsonl"), "--output-tokens", "2"});
  ASSERT_EQ(cr.proc.exit_code, 0) << cr.proc.err;
  auto recs = measured(cr);
  ASSERT_EQ(recs.size(), 3u);
  std::sort(recs.begin(), recs.end(), [](const json& a, const json& b) { return a["index"] < b["index"]; });
  EXPECT_EQ(recs[0]["output_tokens"], 3);
  EXPECT_EQ(recs[1]["output_tokens"], 4);
  EXPECT_EQ(recs[2]["output_tokens"], 2) << "the default where a line has none";
  EXPECT_EQ(recs[1]["input_tokens"], 2);
  EXPECT_NEAR(recs[1]["t_intended_ms"].get<double>() - recs[0]["t_intended_ms"].get<double>(), 200, 0.01)
      << "timestamps are replayed";

  TempDir bad;
  std::ofstream(in.file("bad.jsonl")) << R"({"prompt": "ok"})" << "\n" << R"({"no_prompt": 1})" << "\n";
  auto br = run_at(bad, server, {"--dataset-name", "custom", "--dataset-path", in.file("bad.jsonl")});
  EXPECT_EQ(br.proc.exit_code, 2);
  EXPECT_NE(br.proc.err.find(":2"), std::string::npos) << "the line is named: " << br.proc.err;
}

// Reads the Azure trace's first `n` rows: (offset ns from the first, context, generated).
std::vector<std::tuple<double, int, int>> azure_rows(std::size_t n) {
  std::ifstream f(trace_sample("azure_llm_2023_code.csv"));
  std::string line;
  std::getline(f, line);  // header
  std::vector<std::tuple<double, int, int>> rows;
  while (rows.size() < n && std::getline(f, line)) {
    std::stringstream ss(line);
    std::string ts, ctx, gen;
    std::getline(ss, ts, ',');
    std::getline(ss, ctx, ',');
    std::getline(ss, gen, ',');
    // "2023-11-16 18:17:03.9799600": seconds within the day are enough for offsets here.
    const double secs = std::stod(ts.substr(11, 2)) * 3600 + std::stod(ts.substr(14, 2)) * 60 + std::stod(ts.substr(17));
    rows.emplace_back(secs, std::stoi(ctx), std::stoi(gen));
  }
  return rows;
}

TEST(TraceReplay, AzureCsvAtItsOwnTimingScaled) {
  auto server = fast_server({"--max-model-len", "65536"});
  TempDir dir;
  auto r = run_at(dir, server, {"--trace", trace_sample("azure_llm_2023_code.csv"), "--num-requests", "30", "--time-scale", "30"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  auto rows = azure_rows(30);
  auto recs = measured(r);
  ASSERT_EQ(recs.size(), 30u);
  std::sort(recs.begin(), recs.end(), [](const json& a, const json& b) { return a["index"] < b["index"]; });
  std::vector<std::tuple<double, int, int>> sorted = rows;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  const double t0 = std::get<0>(sorted[0]);
  const double i0 = recs[0]["t_intended_ms"].get<double>();
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const auto& [ts, ctx, gen] = sorted[i];
    EXPECT_NEAR(recs[i]["t_intended_ms"].get<double>() - i0, (ts - t0) * 1000 / 30, 0.5) << i;
    EXPECT_EQ(recs[i]["requested_input_tokens"], ctx);
    EXPECT_EQ(recs[i]["input_tokens"], ctx) << "prompts made to the trace's exact lengths";
    EXPECT_EQ(recs[i]["output_tokens"], gen);
    EXPECT_TRUE(recs[i]["ok"].get<bool>()) << recs[i].dump();
  }
  EXPECT_EQ(r.result["conditions"]["scenario"]["arrivals"]["process"], "trace");
  EXPECT_EQ(r.result["conditions"]["workload"]["format"], "azure") << r.result["conditions"]["workload"].dump();
  // The rate and the lengths the run did not use are not its conditions (they read rate 0,
  // 128 tokens in and out, while the prompts were the trace's thousands).
  for (const char* unused : {"request_rate", "input_tokens", "output_tokens"}) {
    EXPECT_TRUE(r.result["conditions"]["scenario"][unused].is_null()) << unused;
  }
  EXPECT_NE(r.proc.err.find("server arrivals=timestamps dataset=trace against"), std::string::npos) << r.proc.err;
  EXPECT_EQ(r.proc.err.find("in=128"), std::string::npos) << r.proc.err;
}

TEST(TraceReplay, MooncakeHashIdsBecomeSharedPrefixesTheServerCaches) {
  auto server = start_server({"--profile", "tiny", "--max-model-len", "32768", "--kv-cache-tokens", "200000"});
  TempDir dir;
  auto r = run_at(dir, server,
                  {"--trace", trace_sample("mooncake_conversation.jsonl"), "--num-requests", "6", "--time-scale", "100"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  std::ifstream f(trace_sample("mooncake_conversation.jsonl"));
  std::string line;
  std::vector<json> rows;
  while (rows.size() < 6 && std::getline(f, line)) rows.push_back(json::parse(line));
  auto recs = measured(r);
  ASSERT_EQ(recs.size(), 6u);
  std::sort(recs.begin(), recs.end(), [](const json& a, const json& b) { return a["index"] < b["index"]; });
  std::int64_t cached = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    EXPECT_TRUE(recs[i]["ok"].get<bool>()) << recs[i].dump();
    EXPECT_EQ(recs[i]["input_tokens"], rows[i]["input_length"]);
    EXPECT_EQ(recs[i]["output_tokens"], rows[i]["output_length"]);
    if (recs[i]["cached_tokens"].is_number()) cached += recs[i]["cached_tokens"].get<std::int64_t>();
  }
  // The sample's first requests share hash_id 0 (a 512-token block): later ones hit the cache.
  EXPECT_GT(cached, 0) << "shared hash_ids reached the server's prefix cache";
}

TEST(Cli, VllmBenchServeCommandRunsAsIs) {
  auto server = fast_server();
  TempDir dir;
  const RunResult r = run({std::string(LLMLOAD_BIN_DIR) + "/llmload", "run", "--backend", "vllm", "--base-url", server.base_url,
                           "--endpoint", "/v1/completions", "--dataset-name", "random", "--random-input-len", "32",
                           "--random-output-len", "8", "--random-range-ratio", "0.5", "--num-prompts", "30",
                           "--request-rate", "200", "--burstiness", "0.5", "--max-concurrency", "4", "--goodput",
                           "ttft:5000", "tpot:1000", "--percentile-metrics", "ttft,tpot", "--metric-percentiles",
                           "50,99", "--seed", "3", "--ignore-eos", "--save-result", "--result-dir", dir.path()},
                          120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // vLLM's naming: <backend>-<rate>qps-<model>-<time>.json, beside a directory of the same name
  // holding the whole artifact.
  std::string name;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().extension() == ".json") name = e.path().stem().string();
  }
  ASSERT_EQ(name.rfind("vllm-200qps-", 0), 0u) << name;
  const json res = json::parse(slurp(dir.file(name + ".json")));
  EXPECT_EQ(res, json::parse(slurp(dir.file(name + "/result.json"))));
  EXPECT_EQ(res["conditions"]["scenario"]["scenario"], "server");
  EXPECT_EQ(res["conditions"]["scenario"]["arrivals"]["process"], "gamma");
  EXPECT_LE(res["max_in_flight"].get<int>(), 4);
  EXPECT_EQ(res["completed"], 30);
  EXPECT_FALSE(res["slo"].is_null());
  EXPECT_NE(r.out.find("p99"), std::string::npos);
  EXPECT_EQ(r.out.find("p95"), std::string::npos) << "only the asked percentiles";
  EXPECT_EQ(r.out.find("E2E "), std::string::npos) << "only the asked metrics";
  const RunResult help = run({std::string(LLMLOAD_BIN_DIR) + "/llmload", "run", "--help"});
  for (const char* s : {"--scenario single-stream", "--scenario server", "--scenario offline", "--scenario concurrency",
                        "--scenario stages", "--trace", "--num-prompts", "Where llmload differs"}) {
    EXPECT_NE(help.out.find(s), std::string::npos) << s;
  }
}

TEST(Arrivals, StagesOfRateThenConcurrencyInOneRun) {
  auto server = fast_server();
  TempDir dir;
  auto r = run_at(dir, server, {"--stages", "rate:40@1s,concurrency:3@1s", "--output-tokens", "20"});
  ASSERT_EQ(r.proc.exit_code, 0) << r.proc.err;
  std::map<int, int> per_stage;
  for (const auto& rec : measured(r)) {
    ASSERT_TRUE(rec.contains("stage")) << rec.dump();
    const int stage = rec["stage"];
    ++per_stage[stage];
    const double t = rec["t_intended_ms"];
    if (stage == 0) {
      EXPECT_LT(t, 1000.5);
    } else {
      EXPECT_GE(t, 999.5);
    }
  }
  EXPECT_GT(per_stage[0], 15) << "about 40 in the rate stage";
  EXPECT_LT(per_stage[0], 75);
  EXPECT_GT(per_stage[1], 10) << "3 in flight for 1 s of ~25 ms requests";
  EXPECT_EQ(r.result["conditions"]["scenario"]["scenario"], "stages");
  // Per-stage results in result.json and on the console, counting the same requests.
  const json& stages = r.result["stages"];
  ASSERT_TRUE(stages.is_array()) << r.result.dump().substr(0, 400);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0]["load"], "rate 40/s");
  EXPECT_EQ(stages[1]["load"], "concurrency 3");
  EXPECT_DOUBLE_EQ(stages[1]["start_s"].get<double>(), 1.0);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(stages[k]["requests"], per_stage[k]) << k;
    EXPECT_EQ(stages[k]["failed"], 0);
    EXPECT_GT(stages[k]["request_throughput"].get<double>(), 0);
    EXPECT_GT(stages[k]["ttft_ms"]["p99"].get<double>(), 0);
  }
  EXPECT_NE(r.proc.out.find("Per stage"), std::string::npos) << r.proc.out;
  EXPECT_NE(r.proc.out.find("concurrency 3"), std::string::npos) << r.proc.out;
}

TEST(Cli, BadWorkloadInputIsAClearErrorBeforeAnyLoad) {
  auto server = fast_server();
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--trace", "/nonexistent/trace.csv"}, "/nonexistent/trace.csv"},
           {{"--input-dist", "gauss:1,2"}, "gauss"},
           {{"--dataset-name", "sharegpt"}, "dataset-path"},
           {{"--extra-body", "not json"}, "--extra-body"},
           {{"--stages", "rate:5"}, "--stages"}}) {
    TempDir dir;
    auto r = run_at(dir, server, args);
    EXPECT_EQ(r.proc.exit_code, 2) << args[0];
    EXPECT_NE(r.proc.err.find(needle), std::string::npos) << r.proc.err;
  }
}

}  // namespace
}  // namespace llmload::testing
