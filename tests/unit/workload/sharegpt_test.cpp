// The ShareGPT dataset: vLLM's filter rules, shuffling, the output override, errors.

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "subprocess.hpp"
#include "workload_test_util.hpp"

namespace llmload {
namespace {

using json = nlohmann::json;
using wltest::config_error;

// A text estimated at exactly `tokens` tokens (4 bytes each), distinct per tag.
std::string text_of(int tokens, char tag) {
  std::string s;
  for (int i = 0; i < tokens; ++i) s += std::string{tag, tag, tag, ' '};
  return s;
}

json turn(const std::string& from, const std::string& value) { return {{"from", from}, {"value", value}}; }

json conversation(const std::vector<std::string>& turns) {
  json conv = json::array();
  for (std::size_t k = 0; k < turns.size(); ++k) conv.push_back(turn(k % 2 == 0 ? "human" : "gpt", turns[k]));
  return {{"id", "x"}, {"conversations", conv}};
}

class ShareGptTest : public ::testing::Test {
 protected:
  // Entries: 3 valid ones (a, f, h) and one of each kind the filter drops.
  void SetUp() override {
    json data = json::array();
    data.push_back(conversation({text_of(10, 'a'), text_of(20, 'A')}));          // 0 valid
    data.push_back(conversation({text_of(10, 'b')}));                            // 1 single turn
    data.push_back(conversation({text_of(2, 'c'), text_of(20, 'C')}));           // 2 prompt < 4
    data.push_back(conversation({text_of(10, 'd'), text_of(2, 'D')}));           // 3 output < 4
    data.push_back(conversation({text_of(1100, 'e'), text_of(20, 'E')}));        // 4 prompt > 1024
    data.push_back(conversation({text_of(1000, 'g'), text_of(1100, 'G')}));      // 5 total > 2048
    data.push_back(conversation({text_of(50, 'f'), text_of(100, 'F'), "more"}));  // 6 valid, 3 turns
    data.push_back({{"id", "no-conversations"}, {"other", 1}});                   // 7 dropped
    json extra = conversation({text_of(30, 'h'), text_of(5, 'H')});               // 8 valid, extra keys
    extra["meta"] = {{"nested", {1, 2, {{"value", 3}}}}, {"conversations_like", "x"}};
    extra["conversations"][0]["lang"] = "en";
    data.push_back(extra);
    path_ = dir_.file("sharegpt.json");
    wltest::write_text(path_, data.dump(2));
  }

  std::unique_ptr<Workload> load(std::int64_t output_len = 0, std::optional<std::uint64_t> max = std::nullopt,
                                 std::uint64_t seed = 0) const {
    WorkloadConfig cfg;
    cfg.dataset = "sharegpt";
    cfg.dataset_path = path_;
    cfg.sharegpt_output_len = output_len;
    return make_workload(cfg, 0, 0, max, seed, TokenModel::builtin());
  }

  static std::set<char> tags(const Workload& w) {
    std::set<char> out;
    for (std::uint64_t i = 0; i < *w.size(); ++i) out.insert(w.item(i).prompt.at(0));
    return out;
  }

  testing::TempDir dir_;
  std::string path_;
};

TEST(TokenEstimate, CeilOfUtf8BytesOverFour) {
  EXPECT_EQ(estimate_text_tokens(""), 0);
  EXPECT_EQ(estimate_text_tokens("abcd"), 1);
  EXPECT_EQ(estimate_text_tokens("abcde"), 2);
  EXPECT_EQ(estimate_text_tokens("\xe6\x97\xa5\xe6\x9c\xac"), 2);  // two CJK characters, 6 bytes
}

TEST_F(ShareGptTest, AppliesVllmFilter) {
  const auto w = load();
  ASSERT_TRUE(w->size().has_value());
  EXPECT_EQ(*w->size(), 3U);
  EXPECT_FALSE(w->timed());
  EXPECT_EQ(tags(*w), (std::set<char>{'a', 'f', 'h'}));
  for (std::uint64_t i = 0; i < 3; ++i) {
    const WorkItem it = w->item(i);
    const char tag = it.prompt.at(0);
    const std::int64_t in = tag == 'a' ? 10 : tag == 'f' ? 50 : 30;
    const std::int64_t out = tag == 'a' ? 20 : tag == 'f' ? 100 : 5;
    EXPECT_EQ(it.prompt, text_of(static_cast<int>(in), tag)) << "the first turn, verbatim";
    EXPECT_EQ(it.input_tokens, in);
    EXPECT_EQ(it.output_tokens, out);
    EXPECT_FALSE(it.arrival.has_value());
  }
  const json d = w->describe();
  EXPECT_EQ(d["entries"], 9);
  EXPECT_EQ(d["entries_with_2_turns"], 7);
  EXPECT_EQ(d["filter"]["valid"], 3);
  EXPECT_EQ(d["filter"]["prompt_under_4_tokens"], 1);
  EXPECT_EQ(d["filter"]["output_under_4_tokens"], 1);
  EXPECT_EQ(d["filter"]["prompt_over_1024_tokens"], 1);
  EXPECT_EQ(d["filter"]["total_over_2048_tokens"], 1);
  EXPECT_EQ(d["lengths_estimated"], true);
}

TEST_F(ShareGptTest, OutputLenOverridesAndSkipsTheOutputCheck) {
  // vLLM: with --sharegpt-output-len the short-output check is skipped, the total check uses the
  // override: entry 3 (output 2) and entry 5 (1000 + 7 <= 2048) become valid.
  const auto w = load(7);
  EXPECT_EQ(tags(*w), (std::set<char>{'a', 'd', 'f', 'g', 'h'}));
  for (std::uint64_t i = 0; i < *w->size(); ++i) EXPECT_EQ(w->item(i).output_tokens, 7);
}

TEST_F(ShareGptTest, MaxItemsTakesAShuffledSubset) {
  const auto w = load(0, 2);
  EXPECT_EQ(*w->size(), 2U);
  const auto t = tags(*w);
  for (const char c : t) EXPECT_TRUE(c == 'a' || c == 'f' || c == 'h');
  EXPECT_EQ(w->describe()["requests"], 2);
}

TEST_F(ShareGptTest, DeterministicOrderFromTheSeed) {
  auto order = [&](std::uint64_t seed) {
    const auto w = load(0, std::nullopt, seed);
    std::string s;
    for (std::uint64_t i = 0; i < *w->size(); ++i) s += w->item(i).prompt.at(0);
    return s;
  };
  EXPECT_EQ(order(5), order(5));
  std::set<std::string> orders;
  for (std::uint64_t seed = 0; seed < 20; ++seed) orders.insert(order(seed));
  EXPECT_GT(orders.size(), 2U) << "the seed shuffles";
}

TEST(ShareGpt, ShufflesManyEntries) {
  testing::TempDir dir;
  json data = json::array();
  for (int k = 0; k < 60; ++k) data.push_back(conversation({"prompt number " + std::to_string(k), text_of(8, 'x')}));
  wltest::write_text(dir.file("s.json"), data.dump());
  WorkloadConfig cfg;
  cfg.dataset = "sharegpt";
  cfg.dataset_path = dir.file("s.json");
  const auto w = make_workload(cfg, 0, 0, std::nullopt, 3, TokenModel::builtin());
  ASSERT_EQ(*w->size(), 60U);
  std::set<std::string> prompts;
  int in_place = 0;
  for (std::uint64_t i = 0; i < 60; ++i) {
    const std::string p = w->item(i).prompt;
    prompts.insert(p);
    in_place += p == "prompt number " + std::to_string(i) ? 1 : 0;
  }
  EXPECT_EQ(prompts.size(), 60U) << "a permutation";
  EXPECT_LT(in_place, 10);
}

TEST(ShareGpt, ErrorsNameTheFileAndTheProblem) {
  testing::TempDir dir;
  auto error_for = [&](const std::string& content) {
    const std::string path = dir.file("bad.json");
    wltest::write_text(path, content);
    WorkloadConfig cfg;
    cfg.dataset = "sharegpt";
    cfg.dataset_path = path;
    return config_error([&] { make_workload(cfg, 0, 0, std::nullopt, 0, TokenModel::builtin()); });
  };
  const std::string path = dir.file("bad.json");
  const std::string not_json = error_for("[{\"conversations\": [oops");
  EXPECT_NE(not_json.find(path), std::string::npos) << not_json;
  EXPECT_NE(not_json.find("not valid JSON"), std::string::npos) << not_json;
  EXPECT_NE(error_for("{\"conversations\": []}").find("JSON array"), std::string::npos);
  EXPECT_NE(error_for("[\"text\"]").find("entry 0"), std::string::npos);
  EXPECT_NE(error_for("[{\"conversations\": \"hi\"}]").find("not an array"), std::string::npos);
  EXPECT_NE(error_for("[{\"conversations\": [{\"value\": 1}, {\"value\": \"x\"}]}]").find("not a string"),
            std::string::npos);
  EXPECT_NE(error_for("[{\"conversations\": [{\"from\": \"human\"}, {\"value\": \"x\"}]}]").find("no string"),
            std::string::npos);
  const std::string none_valid = error_for(conversation({"hi", "there"}).dump().insert(0, "[") + "]");
  EXPECT_NE(none_valid.find("no conversation passes"), std::string::npos) << none_valid;
  EXPECT_NE(error_for("[]").find("no conversation passes"), std::string::npos);

  WorkloadConfig no_path;
  no_path.dataset = "sharegpt";
  EXPECT_NE(config_error([&] { make_workload(no_path, 0, 0, std::nullopt, 0, TokenModel::builtin()); })
                .find("--dataset-path"),
            std::string::npos);

  WorkloadConfig missing;
  missing.dataset = "sharegpt";
  missing.dataset_path = dir.file("missing.json");
  const std::string msg = config_error([&] { make_workload(missing, 0, 0, std::nullopt, 0, TokenModel::builtin()); });
  EXPECT_NE(msg.find("missing.json"), std::string::npos) << msg;
}

}  // namespace
}  // namespace llmload
