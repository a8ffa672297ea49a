// The custom JSONL dataset: file order, output lengths, timestamps and time scale, line errors.

#include <gtest/gtest.h>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "subprocess.hpp"
#include "workload_test_util.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using wltest::config_error;

class CustomJsonlTest : public ::testing::Test {
 protected:
  std::unique_ptr<Workload> load(const std::string& content, double time_scale = 1.0,
                                 std::optional<std::uint64_t> max = std::nullopt, std::int64_t out = 64) {
    wltest::write_text(path(), content);
    WorkloadConfig cfg;
    cfg.dataset = "custom";
    cfg.dataset_path = path();
    cfg.time_scale = time_scale;
    return make_workload(cfg, 0, out, max, 0, TokenModel::builtin());
  }
  std::string error(const std::string& content) {
    return config_error([&] { load(content); });
  }
  std::string path() const { return dir_.file("custom.jsonl"); }

  testing::TempDir dir_;
};

TEST_F(CustomJsonlTest, FileOrderWithoutTimestamps) {
  const auto w = load(
      "{\"prompt\": \"first prompt\"}\n"
      "\n"
      "{\"prompt\": \"second\", \"output_tokens\": 7, \"extra\": true}\r\n"
      "  {\"prompt\": \"third one here\"}");
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(3));
  EXPECT_FALSE(w->timed());
  EXPECT_EQ(w->item(0).prompt, "first prompt");
  EXPECT_EQ(w->item(0).output_tokens, 64) << "the default output length";
  EXPECT_EQ(w->item(0).input_tokens, estimate_text_tokens("first prompt"));
  EXPECT_EQ(w->item(1).prompt, "second");
  EXPECT_EQ(w->item(1).output_tokens, 7);
  EXPECT_EQ(w->item(2).prompt, "third one here");
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_FALSE(w->item(i).arrival.has_value());
  EXPECT_EQ(w->describe()["lengths_estimated"], true);
}

TEST_F(CustomJsonlTest, TimestampsGiveScaledArrivals) {
  const auto w = load(
      "{\"prompt\": \"a\", \"timestamp\": 10.0}\n"
      "{\"prompt\": \"b\", \"timestamp\": 10.5}\n"
      "{\"prompt\": \"c\", \"timestamp\": 12}\n",
      2.0);
  ASSERT_TRUE(w->timed());
  EXPECT_EQ(w->item(0).arrival, Nanos(0));
  EXPECT_EQ(w->item(1).arrival, Nanos(250ms));
  EXPECT_EQ(w->item(2).arrival, Nanos(1s));
}

TEST_F(CustomJsonlTest, UnorderedTimestampsKeepFileOrderFromTheEarliest) {
  const auto w = load(
      "{\"prompt\": \"a\", \"timestamp\": 5}\n"
      "{\"prompt\": \"b\", \"timestamp\": 3}\n"
      "{\"prompt\": \"c\", \"timestamp\": 4}\n");
  EXPECT_EQ(w->item(0).prompt, "a");
  EXPECT_EQ(w->item(0).arrival, Nanos(2s));
  EXPECT_EQ(w->item(1).arrival, Nanos(0));
  EXPECT_EQ(w->item(2).arrival, Nanos(1s));
}

TEST_F(CustomJsonlTest, MaxItemsKeepsTheFirstLines) {
  const auto w = load("{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n{\"prompt\": \"c\"}\n", 1.0, 2);
  ASSERT_EQ(w->size(), std::optional<std::uint64_t>(2));
  EXPECT_EQ(w->item(1).prompt, "b");
}

TEST_F(CustomJsonlTest, LineErrorsNameFileAndLine) {
  const std::string ok = "{\"prompt\": \"fine\"}\n";
  struct Case {
    std::string content;
    std::string line;
    std::string what;
  };
  const std::vector<Case> cases = {
      {ok + ok + "{\"prompt\": oops}\n", ":3:", "not a JSON object"},
      {ok + "[1, 2]\n", ":2:", "not a JSON object"},
      {ok + "{\"text\": \"no prompt\"}\n", ":2:", "\"prompt\""},
      {ok + "{\"prompt\": \"\"}\n", ":2:", "\"prompt\""},
      {ok + "{\"prompt\": \"x\", \"output_tokens\": 0}\n", ":2:", "output_tokens"},
      {ok + "{\"prompt\": \"x\", \"output_tokens\": \"5\"}\n", ":2:", "output_tokens"},
      {ok + "{\"prompt\": \"x\", \"output_tokens\": 2.5}\n", ":2:", "output_tokens"},
      {ok + "{\"prompt\": \"x\", \"timestamp\": \"now\"}\n", ":2:", "timestamp"},
      {ok + "\n{\"prompt\": \"x\", \"timestamp\": 1}\n", ":3:", "every line a timestamp or none"},
      // Issue 16: the last of two "prompt"s was taken silently.
      {ok + "{\"prompt\": \"a\", \"prompt\": \"b\"}\n", ":2:", "key \"prompt\" is given twice"},
  };
  for (const auto& c : cases) {
    const std::string msg = error(c.content);
    EXPECT_NE(msg.find(path() + c.line), std::string::npos) << c.content << " → " << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.content << " → " << msg;
  }
  EXPECT_NE(error("\n\n").find("no requests"), std::string::npos);
  EXPECT_NE(config_error([&] { load(ok, 1.0, std::nullopt, 0); }).find("output_tokens"), std::string::npos)
      << "no per-line output length and no default";

  WorkloadConfig missing;
  missing.dataset = "custom";
  missing.dataset_path = dir_.file("absent.jsonl");
  EXPECT_NE(config_error([&] { make_workload(missing, 0, 1, std::nullopt, 0, TokenModel::builtin()); })
                .find("absent.jsonl"),
            std::string::npos);
}

}  // namespace
}  // namespace llmload
