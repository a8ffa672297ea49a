// Summaries of repeated trials: median, spread, the CI method chosen by n, the noisy flag, JSON.

#include "llmload/analysis/trials.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace {

using namespace llmload::analysis;

TEST(trials, SingleTrialHasNoInterval) {
  const std::vector<double> v = {42.5};
  const TrialSummary s = summarize_trials(v);
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.median, 42.5);
  EXPECT_DOUBLE_EQ(s.min, 42.5);
  EXPECT_DOUBLE_EQ(s.max, 42.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_EQ(s.ci_method, TrialCiMethod::kNone);
  EXPECT_TRUE(std::isnan(s.ci_low));
  EXPECT_NE(s.ci_note.find("single trial"), std::string::npos);
  EXPECT_FALSE(s.noisy);
  EXPECT_NE(s.noisy_reason.find("single trial"), std::string::npos);
  const auto j = to_json(s);
  EXPECT_EQ(j.at("ci").at("method"), "none");
  EXPECT_TRUE(j.at("ci").at("low").is_null());
}

TEST(trials, FewTrialsUseStudentT) {
  // {10, 12, 14}: mean 12, s = 2, t_{0.975, 2} = 4.302653 (table 4.303): 12 -+ 4.302653 x 2 / sqrt 3.
  const std::vector<double> v = {14, 10, 12};
  const TrialSummary s = summarize_trials(v);
  EXPECT_EQ(s.ci_method, TrialCiMethod::kStudentTMean);
  EXPECT_DOUBLE_EQ(s.median, 12);
  EXPECT_DOUBLE_EQ(s.mean, 12);
  EXPECT_DOUBLE_EQ(s.stddev, 2);
  EXPECT_DOUBLE_EQ(s.cv, 2.0 / 12);
  const double half = 4.30265272974946 * 2 / std::sqrt(3.0);
  EXPECT_NEAR(s.ci_low, 12 - half, 1e-9);
  EXPECT_NEAR(s.ci_high, 12 + half, 1e-9);
  EXPECT_DOUBLE_EQ(s.ci_coverage, 0.95);
  // Per-trial values are kept in the order given.
  EXPECT_EQ(s.values, v);
  // Five trials: still too few for the order-statistic CI (P[B = 0] = 1/32 > 2.5%).
  EXPECT_EQ(summarize_trials(std::vector<double>{1, 2, 3, 4, 5}).ci_method, TrialCiMethod::kStudentTMean);
}

TEST(trials, EnoughTrialsUseOrderStatisticsOfTheMedian) {
  // n = 6: P[B(6, 1/2) = 0] = 1/64 <= 2.5%, so [x(1), x(6)] with coverage 1 - 2/64.
  const std::vector<double> six = {5, 3, 6, 1, 4, 2};
  const TrialSummary s6 = summarize_trials(six);
  EXPECT_EQ(s6.ci_method, TrialCiMethod::kOrderStatisticMedian);
  EXPECT_DOUBLE_EQ(s6.median, 3.5);  // even n: mean of the two middle values
  EXPECT_DOUBLE_EQ(s6.ci_low, 1);
  EXPECT_DOUBLE_EQ(s6.ci_high, 6);
  EXPECT_NEAR(s6.ci_coverage, 1 - 2.0 / 64, 1e-14);
  // n = 20, B ~ Binomial(20, 1/2): P[B <= 5] = 0.0207 <= 2.5% < P[B <= 6] = 0.0577, so l = 6;
  // P[B <= 13] = 0.9423 < 97.5% <= P[B <= 14] = 0.9793, so u = 15. Coverage = P[6 <= B <= 14].
  std::vector<double> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i * 10.0);
  const TrialSummary s20 = summarize_trials(twenty);
  EXPECT_EQ(s20.ci_method, TrialCiMethod::kOrderStatisticMedian);
  EXPECT_DOUBLE_EQ(s20.ci_low, 60);
  EXPECT_DOUBLE_EQ(s20.ci_high, 150);
  EXPECT_NEAR(s20.ci_coverage, 1 - 2 * 21700.0 / 1048576, 1e-12);  // 2 x sum_{k<=5} C(20,k) / 2^20
  EXPECT_DOUBLE_EQ(s20.median, 105);
  EXPECT_GE(s20.ci_coverage, 0.95);
}

TEST(trials, NoisyFlagUsesTheCoefficientOfVariation) {
  // cv = 2/12 = 16.7% > 10%.
  const TrialSummary noisy = summarize_trials(std::vector<double>{10, 12, 14});
  EXPECT_TRUE(noisy.noisy);
  EXPECT_NE(noisy.noisy_reason.find("16.7%"), std::string::npos);
  // The threshold is the caller's.
  EXPECT_FALSE(summarize_trials(std::vector<double>{10, 12, 14}, 0.20).noisy);
  // {99, 100, 101}: s = 1, cv = 1%.
  const TrialSummary quiet = summarize_trials(std::vector<double>{99, 100, 101});
  EXPECT_FALSE(quiet.noisy);
  EXPECT_TRUE(quiet.noisy_reason.empty());
  // Mean 0 with spread: infinitely noisy.
  EXPECT_TRUE(summarize_trials(std::vector<double>{-1, 1}).noisy);
}

TEST(trials, HeadlineIsTheMedianNotTheBest) {
  // One lucky trial far above the rest: the headline (median) stays at the typical trial; the
  // outlier shows in max and pulls only the mean (780 / 7 = 111.4).
  const std::vector<double> v = {100, 101, 99, 100, 180, 98, 102};
  const TrialSummary s = summarize_trials(v);
  EXPECT_DOUBLE_EQ(s.median, 100);
  EXPECT_DOUBLE_EQ(s.max, 180);
  EXPECT_DOUBLE_EQ(s.min, 98);
  EXPECT_NEAR(s.mean, 780.0 / 7, 1e-12);
  // n = 7: P[B(7, 1/2) = 0] = 1/128 <= 2.5% < P[B <= 1] = 8/128, so the CI is [x(1), x(7)].
  EXPECT_DOUBLE_EQ(s.ci_low, 98);
  EXPECT_DOUBLE_EQ(s.ci_high, 180);
}

TEST(trials, EdgesAndJson) {
  const TrialSummary empty = summarize_trials(std::vector<double>{});
  EXPECT_EQ(empty.n, 0u);
  EXPECT_TRUE(std::isnan(empty.median));
  EXPECT_THROW(summarize_trials(std::vector<double>{1, std::numeric_limits<double>::infinity()}), std::invalid_argument);
  EXPECT_THROW(summarize_trials(std::vector<double>{1}, -0.1), std::invalid_argument);

  const TrialSummary s = summarize_trials(std::vector<double>{5, 3, 6, 1, 4, 2});
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j.at("n"), 6);
  EXPECT_EQ(j.at("values").size(), 6u);
  EXPECT_DOUBLE_EQ(j.at("median").get<double>(), 3.5);
  EXPECT_EQ(j.at("ci").at("method"), "order_statistic_median");
  EXPECT_DOUBLE_EQ(j.at("ci").at("low").get<double>(), 1);
  EXPECT_DOUBLE_EQ(j.at("ci").at("high").get<double>(), 6);
  EXPECT_EQ(j.at("noisy"), true);  // cv = 1.87 / 3.5
  EXPECT_FALSE(j.contains("best"));
}

}  // namespace
