// Student-t distribution (against printed tables, closed forms and mpmath references), Welch's
// t-test, the interval-overlap comparison for single trials, scaling, cost and Little's law.

#include "llmload/analysis/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "llmload/analysis/stats.hpp"
#include "llmload/analysis/trials.hpp"

namespace {

using namespace llmload::analysis;

TEST(compare, IncompleteBetaClosedFormsAndReferences) {
  // I_x(a, 1) = x^a;  I_x(1, b) = 1 - (1 - x)^b;  I_{1/2}(a, a) = 1/2 (symmetry).
  for (const double x : {0.01, 0.2, 0.5, 0.77, 0.999}) {
    for (const double a : {0.5, 1.0, 3.3, 20.0}) {
      EXPECT_NEAR(regularized_incomplete_beta(a, 1, x), std::pow(x, a), 1e-13) << a << " " << x;
      EXPECT_NEAR(regularized_incomplete_beta(1, a, x), 1 - std::pow(1 - x, a), 1e-13) << a << " " << x;
      EXPECT_NEAR(regularized_incomplete_beta(a, a, 0.5), 0.5, 1e-13) << a;
      // I_x(a, b) + I_{1-x}(b, a) = 1.
      EXPECT_NEAR(regularized_incomplete_beta(a, 2.5, x) + regularized_incomplete_beta(2.5, a, 1 - x), 1.0, 1e-13);
    }
  }
  // mpmath.betainc(a, b, 0, x, regularized=True) at 30 digits.
  EXPECT_NEAR(regularized_incomplete_beta(2.5, 0.5, 0.3), 0.018927124071945652, 1e-15);
  EXPECT_NEAR(regularized_incomplete_beta(50, 0.5, 0.97), 0.081699333721822626, 1e-14);
  EXPECT_NEAR(regularized_incomplete_beta(0.5, 3.7, 0.02), 0.29149757235425088, 1e-14);
  EXPECT_EQ(regularized_incomplete_beta(2, 3, 0), 0.0);
  EXPECT_EQ(regularized_incomplete_beta(2, 3, 1), 1.0);
  EXPECT_THROW(regularized_incomplete_beta(0, 1, 0.5), std::invalid_argument);
  EXPECT_THROW(regularized_incomplete_beta(1, 1, 1.5), std::invalid_argument);
}

TEST(compare, StudentTCdfClosedForms) {
  // df = 1 is the Cauchy distribution: 1/2 + atan(t)/pi; df = 2: 1/2 + t / (2 sqrt(2 + t^2)).
  for (const double t : {-30.0, -2.0, -0.3, 0.0, 0.1, 1.0, 4.0, 250.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / std::numbers::pi, 1e-14) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-14) << t;
  }
  // mpmath references (fractional df as in Welch's test; a deep tail).
  EXPECT_NEAR(student_t_cdf(2, 3), 0.93033701572057841, 1e-14);
  EXPECT_NEAR(student_t_cdf(-1.5, 7.5), 0.087240285293232117, 1e-14);
  EXPECT_NEAR(student_t_cdf(-40, 3), 1.7190340394579264e-5, 1e-17);
  // Huge df: the normal distribution, Phi(1.959963985) = 0.975.
  EXPECT_NEAR(student_t_cdf(1.959963984540054, 1e9), 0.975, 1e-9);
  EXPECT_NEAR(student_t_cdf(1.959963984540054, std::numeric_limits<double>::infinity()), 0.975, 1e-12);
  EXPECT_EQ(student_t_cdf(1e200, 5), 1.0);
  EXPECT_THROW(student_t_cdf(1, 0), std::invalid_argument);
  EXPECT_THROW(student_t_cdf(std::nan(""), 3), std::invalid_argument);
}

TEST(compare, StudentTQuantileMatchesTables) {
  // Printed two-sided 95% table (t_{0.975, df}) to its 3 decimals.
  const std::vector<std::pair<double, double>> table = {{1, 12.706}, {2, 4.303}, {4, 2.776}, {5, 2.571},
                                                        {10, 2.228}, {30, 2.042}, {100, 1.984}};
  for (const auto& [df, t] : table) EXPECT_NEAR(student_t_quantile(0.975, df), t, 5e-4) << df;
  // To full precision (mpmath findroot on betainc).
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.77644510519779, 1e-11);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.22813885198627, 1e-11);
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047361747, 1e-10);
  // Cauchy quantile tan(pi (p - 1/2)), symmetry, and the inverse of the CDF.
  EXPECT_NEAR(student_t_quantile(0.9999, 1), std::tan(std::numbers::pi * 0.4999), 1e-8);
  for (const double df : {1.0, 2.5, 7.0, 40.0, 1e4}) {
    for (const double p : {1e-6, 0.01, 0.3, 0.5, 0.9, 0.975, 0.999}) {
      const double t = student_t_quantile(p, df);
      EXPECT_NEAR(student_t_quantile(1 - p, df), -t, 1e-9 * std::max(1.0, std::fabs(t))) << p << " " << df;
      EXPECT_NEAR(student_t_cdf(t, df), p, 1e-12 + p * 1e-10) << p << " " << df;
    }
  }
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.5, -1), std::invalid_argument);
}

TEST(compare, WelchTestOnKnownSamples) {
  // A: mean 11, s^2 = 1; B: mean 16, s^2 = 2.5. SE^2 = 1/3 + 2.5/5 = 5/6, t = 5 / sqrt(5/6) =
  // 5.4772; df = (5/6)^2 / ((1/3)^2 / 2 + (1/2)^2 / 4) = 5.882353; p (mpmath) = 0.0016502462.
  const std::vector<double> a = {10, 11, 12};
  const std::vector<double> b = {14, 15, 16, 17, 18};
  const MetricDelta d = compare_metric(a, b);
  EXPECT_EQ(d.method, CompareMethod::kWelchT);
  EXPECT_EQ(d.n_a, 3u);
  EXPECT_EQ(d.n_b, 5u);
  EXPECT_DOUBLE_EQ(d.a, 11);
  EXPECT_DOUBLE_EQ(d.b, 16);
  EXPECT_DOUBLE_EQ(d.delta, 5);
  EXPECT_DOUBLE_EQ(d.relative_delta, 5.0 / 11);
  EXPECT_NEAR(d.t, 5 / std::sqrt(5.0 / 6), 1e-12);
  EXPECT_NEAR(d.df, 100.0 / 17, 1e-12);
  EXPECT_NEAR(d.p_value, 0.00165024619776372, 1e-12);
  ASSERT_TRUE(d.ci.has_value());
  const double half = 2.45882370969915 * std::sqrt(5.0 / 6);  // t_{0.975, 5.882} (mpmath) x SE
  EXPECT_NEAR(d.ci->low, 5 - half, 1e-9);
  EXPECT_NEAR(d.ci->high, 5 + half, 1e-9);
  EXPECT_TRUE(d.significant);
  // Reversed roles: the same test with the sign flipped.
  const MetricDelta r = compare_metric(b, a);
  EXPECT_DOUBLE_EQ(r.delta, -5);
  EXPECT_NEAR(r.p_value, d.p_value, 1e-15);
  EXPECT_NEAR(r.ci->high, -d.ci->low, 1e-12);
  EXPECT_TRUE(r.significant);
}

TEST(compare, WelchDoesNotFlagOverlappingNoise) {
  // delta = 1 with SE = sqrt(4/3 + 4/3) = 1.633: t = 0.61, far from significant.
  const std::vector<double> a = {10, 12, 14};
  const std::vector<double> b = {11, 13, 15};
  const MetricDelta d = compare_metric(a, b);
  EXPECT_EQ(d.method, CompareMethod::kWelchT);
  EXPECT_FALSE(d.significant);
  EXPECT_GT(d.p_value, 0.5);
  EXPECT_LT(d.ci->low, 0);
  EXPECT_GT(d.ci->high, 0);
  // A stricter alpha widens the interval.
  CompareOptions strict;
  strict.alpha = 0.01;
  const MetricDelta s = compare_metric(a, b, strict);
  EXPECT_GT(s.ci->high - s.ci->low, d.ci->high - d.ci->low);
  // Identical constant samples: no difference; constant but different: a difference.
  const std::vector<double> c5 = {5, 5, 5};
  const std::vector<double> c6 = {6, 6};
  EXPECT_FALSE(compare_metric(c5, c5).significant);
  EXPECT_TRUE(compare_metric(c5, c6).significant);
}

TEST(compare, QuantileCiOverlap) {
  const QuantileCiComparison higher = compare_quantile_ci(90, 110, 120, 130);
  EXPECT_TRUE(higher.significant);
  EXPECT_FALSE(higher.overlap);
  EXPECT_EQ(higher.direction, 1);
  EXPECT_DOUBLE_EQ(higher.difference_bounds.low, 10);   // 120 - 110
  EXPECT_DOUBLE_EQ(higher.difference_bounds.high, 40);  // 130 - 90
  EXPECT_EQ(compare_quantile_ci(90, 110, 50, 80).direction, -1);
  const QuantileCiComparison touching = compare_quantile_ci(90, 110, 110, 130);
  EXPECT_FALSE(touching.significant);
  EXPECT_EQ(touching.direction, 0);
  EXPECT_FALSE(compare_quantile_ci(90, 110, 95, 100).significant);  // nested
  EXPECT_THROW(compare_quantile_ci(110, 90, 1, 2), std::invalid_argument);
}

TEST(compare, SingleTrialUsesIntervalsAndSaysSo) {
  const std::vector<double> a = {100};
  const std::vector<double> b = {125};
  // No interval given: no test at all, never a silent "significant".
  const MetricDelta none = compare_metric(a, b);
  EXPECT_EQ(none.method, CompareMethod::kNone);
  EXPECT_FALSE(none.significant);
  EXPECT_DOUBLE_EQ(none.delta, 25);
  EXPECT_NE(none.explanation.find("single trial"), std::string::npos);

  CompareOptions o;
  o.a_ci = Interval{90, 110};
  o.b_ci = Interval{120, 130};
  const MetricDelta d = compare_metric(a, b, o);
  EXPECT_EQ(d.method, CompareMethod::kQuantileCiOverlap);
  EXPECT_TRUE(d.significant);
  EXPECT_DOUBLE_EQ(d.relative_delta, 0.25);
  ASSERT_TRUE(d.ci.has_value());
  EXPECT_DOUBLE_EQ(d.ci->low, 10);
  EXPECT_TRUE(std::isnan(d.p_value));
  o.b_ci = Interval{105, 130};
  EXPECT_FALSE(compare_metric(a, b, o).significant);

  // Many trials against one: the many-trial side's own CI (order statistics, n = 6: [min, max]).
  const std::vector<double> many = {200, 201, 202, 203, 204, 205};
  CompareOptions only_b;
  only_b.b_ci = Interval{150, 160};
  const MetricDelta m = compare_metric(many, b, only_b);
  EXPECT_EQ(m.method, CompareMethod::kQuantileCiOverlap);
  EXPECT_TRUE(m.significant);
  EXPECT_DOUBLE_EQ(m.ci->low, 150 - 205.0);
  EXPECT_DOUBLE_EQ(m.ci->high, 160 - 200.0);

  const auto j = to_json(d);
  EXPECT_EQ(j.at("method"), "quantile_ci_overlap");
  EXPECT_TRUE(j.at("p_value").is_null());
  EXPECT_THROW(compare_metric(std::vector<double>{std::nan("")}, b), std::invalid_argument);
}

// The practical-difference threshold: a difference the test sees but smaller than
// max(min_effect x |A|, resolution) is never significant, and says why.
TEST(compare, PracticalThresholdKeepsTinyDifferencesFromBeingSignificant) {
  const std::vector<double> a = {100};
  const std::vector<double> tiny = {100.4};  // +0.4%, intervals separate (as two big identical runs can)
  CompareOptions o;
  o.a_ci = Interval{99.9, 100.1};
  o.b_ci = Interval{100.3, 100.5};
  const MetricDelta raw = compare_metric(a, tiny, o);  // min_effect 0, resolution 0: the test alone
  EXPECT_TRUE(raw.significant);
  EXPECT_TRUE(raw.statistically_significant);
  EXPECT_FALSE(raw.below_threshold);

  o.min_effect = 0.05;
  const MetricDelta d = compare_metric(a, tiny, o);
  EXPECT_FALSE(d.significant);
  EXPECT_TRUE(d.statistically_significant);
  EXPECT_TRUE(d.below_threshold);
  EXPECT_DOUBLE_EQ(d.threshold, 5.0);
  EXPECT_NE(d.explanation.find("minimum effect 5% of A"), std::string::npos) << d.explanation;
  const auto j = to_json(d);
  EXPECT_FALSE(j.at("significant").get<bool>());
  EXPECT_TRUE(j.at("below_threshold").get<bool>());
  EXPECT_DOUBLE_EQ(j.at("threshold").get<double>(), 5.0);

  // At or above the threshold, with separated intervals: significant.
  CompareOptions big = o;
  big.b_ci = Interval{104.9, 105.1};
  EXPECT_TRUE(compare_metric(a, std::vector<double>{105}, big).significant) << "exactly 5% counts";
  big.b_ci = Interval{104.8, 105.0};
  EXPECT_FALSE(compare_metric(a, std::vector<double>{104.9}, big).significant) << "4.9% does not";
  // Above the threshold but overlapping intervals: the test decides, not the size.
  CompareOptions wide = o;
  wide.a_ci = Interval{80, 120};
  wide.b_ci = Interval{100, 130};
  const MetricDelta w = compare_metric(a, std::vector<double>{115}, wide);
  EXPECT_FALSE(w.significant);
  EXPECT_FALSE(w.below_threshold);

  // The measurement's resolution (a histogram bucket) is a floor even without a minimum effect.
  CompareOptions res;
  res.a_ci = o.a_ci;
  res.b_ci = o.b_ci;
  res.resolution = 0.5;
  const MetricDelta r = compare_metric(a, tiny, res);
  EXPECT_FALSE(r.significant);
  EXPECT_TRUE(r.below_threshold);
  EXPECT_NE(r.explanation.find("resolution"), std::string::npos) << r.explanation;

  // Welch over trials: a consistent 1% shift is statistically significant, not practically.
  const std::vector<double> ta = {10.00, 10.01, 10.02};
  const std::vector<double> tb = {10.10, 10.11, 10.12};
  CompareOptions welch;
  EXPECT_TRUE(compare_metric(ta, tb, welch).significant);
  welch.min_effect = 0.02;
  const MetricDelta wd = compare_metric(ta, tb, welch);
  EXPECT_EQ(wd.method, CompareMethod::kWelchT);
  EXPECT_TRUE(wd.statistically_significant);
  EXPECT_FALSE(wd.significant);

  EXPECT_DOUBLE_EQ(practical_threshold(-200, 0.05, 1), 10);
  EXPECT_DOUBLE_EQ(practical_threshold(10, 0.05, 1), 1);
  CompareOptions bad;
  bad.min_effect = -0.1;
  EXPECT_THROW(compare_metric(ta, tb, bad), std::invalid_argument);
  bad.min_effect = 0;
  bad.resolution = std::nan("");
  EXPECT_THROW(compare_metric(ta, tb, bad), std::invalid_argument);
}

TEST(compare, ScalingCostAndLittle) {
  const ScalingPoint s = scaling(100, 360, 4);
  EXPECT_DOUBLE_EQ(s.speedup, 3.6);
  EXPECT_DOUBLE_EQ(s.efficiency, 0.9);
  EXPECT_EQ(to_string(scaling(100, 150, 2, ScalingKind::kWeak).kind), "weak");
  EXPECT_THROW(scaling(0, 10, 2), std::invalid_argument);
  EXPECT_THROW(scaling(10, 10, 0.5), std::invalid_argument);

  // $2.50/h x 8 devices = $20/h; 1,000 tokens/s = 3.6M tokens/h -> 20 / 3.6 = $5.556 per 1M.
  EXPECT_NEAR(cost_per_million_tokens(2.5, 8, 1000), 20 / 3.6, 1e-12);
  EXPECT_TRUE(std::isinf(cost_per_million_tokens(2.5, 8, 0)));
  EXPECT_THROW(cost_per_million_tokens(-1, 1, 1), std::invalid_argument);

  // X = 10 req/s, W = 5 s -> L = 50.
  const LittleCheck ok = littles_law(52, 10, 5);
  EXPECT_DOUBLE_EQ(ok.predicted_l, 50);
  EXPECT_NEAR(ok.relative_deviation, 0.04, 1e-12);
  EXPECT_TRUE(ok.agrees);
  const LittleCheck off = littles_law(70, 10, 5);
  EXPECT_NEAR(off.relative_deviation, 0.4, 1e-12);
  EXPECT_FALSE(off.agrees);
  // A 60 s window with W = 5 s adds 2 x 5/60 = 16.7% for the edges: 70 vs 50 (40%) still
  // disagrees, 60 vs 50 (20%) now agrees.
  EXPECT_FALSE(littles_law(70, 10, 5, 0.10, 60).agrees);
  const LittleCheck edge = littles_law(60, 10, 5, 0.10, 60);
  EXPECT_NEAR(edge.tolerance, 0.10 + 10.0 / 60, 1e-12);
  EXPECT_TRUE(edge.agrees);
  EXPECT_TRUE(littles_law(0, 0, 0).agrees);
  EXPECT_THROW(littles_law(1, -1, 1), std::invalid_argument);
}

}  // namespace
