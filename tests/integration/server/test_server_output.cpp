// What the real llmload-server generates (docs/server.md, "Generated text"): text that is a
// function of the prompt at any load, the answers to arithmetic questions (formats, EOS, cut by
// max_tokens), and the error and divergence models' ground truth and metrics.
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

json post(int port, const std::string& target, const json& body) {
  const HttpResponse r = http_request(port, "POST", target, body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body, nullptr, false);
}

json completion(const std::string& prompt, int max_tokens, json extra = json::object()) {
  json body = {{"model", "llmload-mock"}, {"prompt", prompt}, {"max_tokens", max_tokens}};
  body.update(extra);
  return body;
}

std::string text_of(const json& body) { return body["choices"][0]["text"].get<std::string>(); }

/// The value of an unlabelled-but-for-engine/model sample of /metrics, or -1.
double metric(int port, const std::string& name) {
  const HttpResponse r = http_request(port, "GET", "/metrics");
  std::smatch m;
  if (!std::regex_search(r.body, m, std::regex("\n" + name + R"(\{[^}]*\} ([0-9.e+]+)\n)"))) return -1;
  return std::stod(m[1]);
}

TEST(ServerOutput, TheSamePromptGivesTheSameTextAlongsideOthersAndAcrossLatencyModels) {
  auto server = start_server({"--profile", "tiny"});
  const json body = completion("Tell me a story about the sea", 24);
  const std::string first = text_of(post(server.port, "/v1/completions", body));
  EXPECT_EQ(text_of(post(server.port, "/v1/completions", body)), first);
  EXPECT_NE(text_of(post(server.port, "/v1/completions", completion("Tell me a story about the sky", 24))), first);
  EXPECT_NE(text_of(post(server.port, "/v1/completions", completion("Tell me a story about the sea", 24, {{"seed", 3}}))),
            first);

  // 16 at once (the engine batches them) interleaved with other prompts: the same text.
  std::vector<std::string> texts(32);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      const json b = i % 2 == 0 ? body : completion("another prompt " + std::to_string(i), 24);
      const HttpResponse r = http_request(server.port, "POST", "/v1/completions", b.dump());
      texts[i] = r.status == 200 ? json::parse(r.body)["choices"][0]["text"].get<std::string>() : r.body;
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < texts.size(); i += 2) EXPECT_EQ(texts[i], first) << i;

  // The fixed latency model generates the same tokens.
  auto fixed = start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "1ms"});
  EXPECT_EQ(text_of(post(fixed.port, "/v1/completions", body)), first);
  expect_clean_exit(server);
  expect_clean_exit(fixed);
}

TEST(ServerOutput, ArithmeticQuestionsAreAnsweredThenTheRequestStops) {
  auto server = start_server({"--profile", "tiny"});
  post(server.port, "/v1/completions", completion("no question", 4));
  EXPECT_EQ(metric(server.port, "llmload:answers_total"), -1) << "rendered from the first answer on";
  json r = post(server.port, "/v1/completions", completion("Q: What is 2 * 5?\nA: 10\nQ: What is 48 + 17 * 3?\nA:", 64));
  EXPECT_EQ(text_of(r), " The answer is 99. #### 99");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["completion_tokens"], 6);
  EXPECT_EQ(r["llmload"]["wrong_answer"], false);
  EXPECT_FALSE(r["llmload"].contains("diverged_at"));

  // Multiple choice, streamed chat: the last user message is the question.
  const json chat = {{"model", "llmload-mock"},
                     {"stream", true},
                     {"max_tokens", 64},
                     {"messages",
                      {{{"role", "system"}, {"content", "Answer with the letter."}},
                       {{"role", "user"}, {"content", "What is 6 * 7?\nA. 40\nB. 41\nC. 42\nD. 43\nAnswer:"}}}}};
  const HttpResponse s = http_request(server.port, "POST", "/v1/chat/completions", chat.dump());
  ASSERT_EQ(s.status, 200) << s.body;
  std::string content;
  json last;
  for (const auto& payload : sse_payloads(s.body)) {
    if (payload == "[DONE]") continue;
    last = json::parse(payload);
    content += last["choices"][0]["delta"].value("content", "");
  }
  EXPECT_EQ(content, " Answer: C");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["llmload"]["wrong_answer"], false);

  // Cut by max_tokens; ignore_eos goes on with filler to max_tokens.
  r = post(server.port, "/v1/completions", completion("What is 48 + 17 * 3?", 3));
  EXPECT_EQ(text_of(r), " The answer is");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  r = post(server.port, "/v1/completions", completion("What is 48 + 17 * 3?", 20, {{"ignore_eos", true}}));
  EXPECT_EQ(text_of(r).rfind(" The answer is 99. #### 99 ", 0), 0u) << text_of(r);
  EXPECT_EQ(r["usage"]["completion_tokens"], 20);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  // SGLang's /generate.
  r = post(server.port, "/generate", json{{"text", "What is 3 - 10?"}});
  EXPECT_EQ(r["text"], " The answer is -7. #### -7");
  EXPECT_EQ(r["meta_info"]["finish_reason"]["type"], "stop");

  EXPECT_EQ(metric(server.port, "llmload:answers_total"), 5);
  EXPECT_EQ(metric(server.port, "llmload:wrong_answers_total"), 0);
  expect_clean_exit(server);
}

TEST(ServerOutput, TheModelsShowInTheGroundTruthAndTheMetrics) {
  auto server = start_server({"--profile", "tiny", "--wrong-answer-rate", "1", "--divergence-rate", "1"});
  json r = post(server.port, "/v1/completions", completion("What is 48 + 17 * 3?", 10, {{"ignore_eos", true}}));
  EXPECT_EQ(r["llmload"]["wrong_answer"], true);
  EXPECT_EQ(r["llmload"]["diverged_at"], 6) << "the first token after the answer";
  const std::string text = text_of(r);
  EXPECT_EQ(text.rfind(" The answer is ", 0), 0u);
  EXPECT_EQ(text.find(" 99."), std::string::npos) << text;
  r = post(server.port, "/v1/completions", completion("no question here", 8));
  EXPECT_FALSE(r["llmload"].contains("wrong_answer"));
  EXPECT_EQ(r["llmload"]["diverged_at"], 0);
  EXPECT_EQ(metric(server.port, "llmload:answers_total"), 1);
  EXPECT_EQ(metric(server.port, "llmload:wrong_answers_total"), 1);
  EXPECT_EQ(metric(server.port, "llmload:divergences_total"), 2);
  expect_clean_exit(server);

  auto off = start_server({"--profile", "tiny", "--answers", "off"});
  r = post(off.port, "/v1/completions", completion("What is 48 + 17 * 3?", 8));
  EXPECT_EQ(r["usage"]["completion_tokens"], 8);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(r["llmload"].contains("wrong_answer"));
  EXPECT_EQ(metric(off.port, "llmload:answers_total"), -1) << "nothing counted: not rendered";
  expect_clean_exit(off);
}

TEST(ServerOutput, BadOutputModelFlagsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--wrong-answer-rate", "1.5"}, {"--divergence-batch-slope", "-0.1"},
        {"--answers", "sometimes"}, {"--answers", "off", "--wrong-answer-batch-slope", "0.1"}}) {
    std::vector<std::string> argv = {binary_path("llmload-server")};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = run(argv, std::chrono::seconds(10));
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(args.size() > 2 ? args[2] : args[0]), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace llmload::testing
