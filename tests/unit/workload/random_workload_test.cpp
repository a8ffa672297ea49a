// The random (synthesized) workload and make_workload's dispatch.

#include <set>

#include <gtest/gtest.h>

#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "workload_test_util.hpp"

namespace llmload {
namespace {

using wltest::config_error;
using wltest::split_words;

std::unique_ptr<Workload> random_workload(const WorkloadConfig& cfg, std::int64_t in = 100, std::int64_t out = 50,
                                          std::uint64_t seed = 1, const TokenModel& tokens = TokenModel::builtin()) {
  return make_workload(cfg, in, out, std::nullopt, seed, tokens);
}

bool same_item(const WorkItem& a, const WorkItem& b) {
  return a.prompt == b.prompt && a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
         a.prefix_group == b.prefix_group && a.arrival == b.arrival;
}

TEST(RandomWorkload, FixedLengthsGiveExactWordCounts) {
  const auto w = random_workload(WorkloadConfig{});
  EXPECT_FALSE(w->size().has_value());
  EXPECT_FALSE(w->timed());
  const TokenModel tokens = TokenModel::builtin();
  const std::set<std::string> vocab(tokens.words.begin(), tokens.words.end());
  for (std::uint64_t i = 0; i < 50; ++i) {
    const WorkItem it = w->item(i);
    const auto words = split_words(it.prompt);
    EXPECT_EQ(words.size(), 100U);
    EXPECT_EQ(it.input_tokens, 100);
    EXPECT_EQ(it.output_tokens, 50);
    EXPECT_FALSE(it.arrival.has_value());
    EXPECT_FALSE(it.prefix_group.has_value());
    for (const auto& word : words) ASSERT_TRUE(vocab.count(word)) << word;
  }
  EXPECT_NE(w->item(0).prompt, w->item(1).prompt);
  EXPECT_EQ(w->describe()["dataset"], "random");
}

TEST(RandomWorkload, DistributionsDriveTheLengths) {
  WorkloadConfig cfg;
  cfg.input_dist = "uniform:10,20";
  cfg.output_dist = "normal:300,50";
  const auto w = random_workload(cfg);
  std::set<std::int64_t> inputs;
  double out_sum = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    const WorkItem it = w->item(i);
    const auto n = static_cast<std::int64_t>(split_words(it.prompt).size());
    EXPECT_EQ(n, it.input_tokens);
    EXPECT_GE(n, 10);
    EXPECT_LE(n, 20);
    inputs.insert(n);
    out_sum += static_cast<double>(it.output_tokens);
  }
  EXPECT_EQ(inputs.size(), 11U);
  EXPECT_NEAR(out_sum / 2000, 300, 5);
}

TEST(RandomWorkload, RangeRatioWidensTheFixedDefaults) {
  WorkloadConfig cfg;
  cfg.random_range_ratio = 0.5;
  const auto w = random_workload(cfg, 100, 40);
  std::set<std::int64_t> inputs, outputs;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const WorkItem it = w->item(i);
    inputs.insert(it.input_tokens);
    outputs.insert(it.output_tokens);
  }
  EXPECT_GE(*inputs.begin(), 50);
  EXPECT_LE(*inputs.rbegin(), 150);
  EXPECT_GT(inputs.size(), 50U);
  EXPECT_GE(*outputs.begin(), 20);
  EXPECT_LE(*outputs.rbegin(), 60);
}

TEST(RandomWorkload, GenaiScenarioOverridesTheDistributions) {
  WorkloadConfig cfg;
  cfg.input_dist = "fixed:5";
  cfg.genai_scenario = "D(30,40)";
  const WorkItem it = random_workload(cfg)->item(3);
  EXPECT_EQ(split_words(it.prompt).size(), 30U);
  EXPECT_EQ(it.output_tokens, 40);
}

TEST(RandomWorkload, OverheadCountsTowardsTheInputLength) {
  TokenModel tokens = TokenModel::builtin();
  tokens.overhead = 3;
  const WorkItem it = random_workload(WorkloadConfig{}, 100, 50, 1, tokens)->item(0);
  EXPECT_EQ(split_words(it.prompt).size(), 97U);
  EXPECT_EQ(it.input_tokens, 100);
}

TEST(RandomWorkload, DeterministicPerItemAndPerSeed) {
  WorkloadConfig cfg;
  cfg.input_dist = "lognormal:200,100";
  cfg.output_dist = "uniform:1,500";
  const auto a = random_workload(cfg, 0, 0, 7);
  const auto b = random_workload(cfg, 0, 0, 7);
  const auto c = random_workload(cfg, 0, 0, 8);
  // b draws other items first, in another order: item 37 must not change.
  for (std::uint64_t i = 100; i > 0; --i) (void)b->item(i - 1);
  EXPECT_TRUE(same_item(a->item(37), b->item(37)));
  int differing = 0;
  for (std::uint64_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(same_item(a->item(i), b->item(i)));
    differing += same_item(a->item(i), c->item(i)) ? 0 : 1;
  }
  EXPECT_EQ(differing, 20);
}

TEST(RandomWorkload, PrefixGroupsShareByteIdenticalPrefixes) {
  WorkloadConfig cfg;
  cfg.prefix_groups = 3;
  cfg.prefix_tokens = 50;
  const auto w = random_workload(cfg, 20, 10);
  // The prefix text: the first 50 words with the space that follows them.
  auto prefix_of = [](const std::string& prompt) {
    std::size_t pos = 0;
    for (int k = 0; k < 50; ++k) pos = prompt.find(' ', pos) + 1;
    return prompt.substr(0, pos);
  };
  std::vector<WorkItem> items;
  for (std::uint64_t i = 0; i < 9; ++i) items.push_back(w->item(i));
  for (std::uint64_t i = 0; i < 9; ++i) {
    const WorkItem& it = items[i];
    ASSERT_TRUE(it.prefix_group.has_value());
    EXPECT_EQ(*it.prefix_group, static_cast<std::int64_t>(i % 3));
    EXPECT_EQ(split_words(it.prompt).size(), 70U);
    EXPECT_EQ(it.input_tokens, 70);  // prefix_tokens + L_in
  }
  for (std::uint64_t i = 0; i < 9; ++i) {
    for (std::uint64_t j = i + 1; j < 9; ++j) {
      const bool same_group = i % 3 == j % 3;
      EXPECT_EQ(prefix_of(items[i].prompt) == prefix_of(items[j].prompt), same_group) << i << " " << j;
      EXPECT_NE(items[i].prompt, items[j].prompt) << "suffixes differ: " << i << " " << j;
    }
  }
}

TEST(RandomWorkload, BadSettingsAreConfigErrors) {
  WorkloadConfig bad_dist;
  bad_dist.input_dist = "normal:abc";
  EXPECT_NE(config_error([&] { random_workload(bad_dist); }).find("normal:abc"), std::string::npos);

  WorkloadConfig bad_ratio;
  bad_ratio.random_range_ratio = 1.0;
  EXPECT_NE(config_error([&] { random_workload(bad_ratio); }).find("[0, 1)"), std::string::npos);

  WorkloadConfig no_prefix_len;
  no_prefix_len.prefix_groups = 2;
  EXPECT_NE(config_error([&] { random_workload(no_prefix_len); }).find("prefix_tokens"), std::string::npos);

  WorkloadConfig no_groups;
  no_groups.prefix_tokens = 100;
  EXPECT_NE(config_error([&] { random_workload(no_groups); }).find("prefix_groups"), std::string::npos);

  EXPECT_NE(config_error([&] { random_workload(WorkloadConfig{}, 0, 10); }).find("input length"), std::string::npos);

  WorkloadConfig unknown;
  unknown.dataset = "sonnet";
  const std::string msg = config_error([&] { random_workload(unknown); });
  EXPECT_NE(msg.find("\"sonnet\""), std::string::npos) << msg;
  for (const char* choice : {"random", "sharegpt", "custom", "trace"}) {
    EXPECT_NE(msg.find(choice), std::string::npos) << msg;
  }

  WorkloadConfig zero_scale;
  zero_scale.time_scale = 0;
  EXPECT_NE(config_error([&] { random_workload(zero_scale); }).find("time_scale"), std::string::npos);
}

}  // namespace
}  // namespace llmload
