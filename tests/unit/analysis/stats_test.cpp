// Statistics against the reference tables (MLPerf early stopping, order-statistic CIs) and
// exact binomial values (computed with rational arithmetic).

#include "llmload/analysis/stats.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace {

using namespace llmload::analysis;

TEST(stats, BinomialCdfMatchesExactValues) {
  // (k, n, p, exact P[X <= k]) from exact rational sums.
  const std::vector<std::tuple<std::int64_t, std::int64_t, double, double>> exact = {
      {2, 1000, 0.01, 0.002679431993791534},    {3, 1000, 0.01, 0.01007265477201438},
      {982, 1000, 0.99, 0.013832581730008507},  {996, 1000, 0.99, 0.9899273452279856},
      {9879, 10000, 0.99, 0.02211448783746099}, {9919, 10000, 0.99, 0.9778691706440162},
      {5, 20, 0.5, 0.020694732666015625},       {0, 459, 0.01, 0.009920974201040626},
      {30, 100, 0.25, 0.8962127610439132},      {150, 1000, 0.1, 0.9999997225559099}};
  for (const auto& [k, n, p, expected] : exact) {
    EXPECT_NEAR(binomial_cdf(k, n, p), expected, expected * 1e-12) << "k=" << k << " n=" << n << " p=" << p;
  }
}

TEST(stats, BinomialCdfAgreesWithDirectSumForSmallN) {
  for (const double p : {0.001, 0.05, 0.3, 0.5, 0.77, 0.999}) {
    for (std::int64_t n = 0; n <= 60; ++n) {
      long double cumulative = 0;
      long double choose = 1;  // C(n, k)
      for (std::int64_t k = 0; k <= n; ++k) {
        if (k > 0) choose = choose * static_cast<long double>(n - k + 1) / static_cast<long double>(k);
        cumulative += choose * std::pow(static_cast<long double>(p), static_cast<long double>(k)) *
                      std::pow(1.0L - static_cast<long double>(p), static_cast<long double>(n - k));
        const double got = binomial_cdf(k, n, p);
        const auto want = static_cast<double>(std::min(cumulative, 1.0L));
        ASSERT_NEAR(got, want, 1e-13 + want * 1e-11) << "k=" << k << " n=" << n << " p=" << p;
      }
    }
  }
}

TEST(stats, BinomialCdfEdgesAndSymmetry) {
  EXPECT_EQ(binomial_cdf(-1, 10, 0.5), 0.0);
  EXPECT_EQ(binomial_cdf(10, 10, 0.5), 1.0);
  EXPECT_EQ(binomial_cdf(0, 0, 0.5), 1.0);
  EXPECT_EQ(binomial_cdf(0, 10, 0.0), 1.0);
  EXPECT_EQ(binomial_cdf(9, 10, 1.0), 0.0);
  EXPECT_THROW(binomial_cdf(1, -1, 0.5), std::invalid_argument);
  EXPECT_THROW(binomial_cdf(1, 10, 1.5), std::invalid_argument);
  EXPECT_THROW(binomial_cdf(1, 10, std::nan("")), std::invalid_argument);
  // P[X <= k; p] + P[X <= n-k-1; 1-p] = 1, across both summation branches.
  for (const std::int64_t n : {50, 1000, 100000, 10'000'000}) {
    for (const double p : {0.01, 0.3, 0.5}) {
      const auto mean = static_cast<std::int64_t>(static_cast<double>(n) * p);
      for (const std::int64_t k : {std::int64_t{0}, mean / 2, mean - 1, mean, mean + 1, mean + mean / 3, n - 1}) {
        EXPECT_NEAR(binomial_cdf(k, n, p) + binomial_cdf(n - k - 1, n, 1 - p), 1.0, 1e-12) << n << " " << p << " " << k;
      }
    }
  }
  // Deep tails underflow to 0 / 1 without NaN.
  EXPECT_EQ(binomial_cdf(0, 1'000'000, 0.5), 0.0);
  EXPECT_EQ(binomial_cdf(999'999, 1'000'000, 0.5), 1.0);
}

TEST(stats, EarlyStoppingMinRequestsTable) {
  const std::vector<std::tuple<double, std::vector<std::int64_t>>> table = {
      {0.90, {44, 64, 127, 197}}, {0.99, {459, 662, 1307, 2010}}, {0.999, {4603, 6636, 13105, 20140}}};
  const std::vector<std::int64_t> exceedances = {0, 1, 5, 10};
  for (const auto& [p, expected] : table) {
    for (std::size_t i = 0; i < exceedances.size(); ++i) {
      EXPECT_EQ(early_stopping_min_requests(exceedances[i], p, 0.99), expected[i])
          << "p=" << p << " t=" << exceedances[i];
    }
    // Zero exceedances: ceil(ln 0.01 / ln p).
    EXPECT_EQ(early_stopping_min_requests(0, p), static_cast<std::int64_t>(std::ceil(std::log(0.01) / std::log(p))));
  }
  EXPECT_EQ(early_stopping_min_requests(1), 662);  // defaults: p99 at 99% confidence (mlperf.conf)
}

// Its speed (target < 10 ms) is a benchmark, not a test: BM_EarlyStoppingMinRequests in
// bench/core_bench.cpp (docs/benchmarks.md).
TEST(stats, EarlyStoppingMinRequestsForThousandsOfExceedances) {
  const std::int64_t n = early_stopping_min_requests(3000, 0.99, 0.99);
  // Sanity: the mean exceedances at n must be above t by about 2.33 standard deviations.
  EXPECT_GT(n, 300000 + 2 * 5477);
  EXPECT_LT(n, 300000 + 3 * 5477 + 1000);
  EXPECT_EQ(early_stopping_max_exceedances(n), 3000);
  EXPECT_EQ(early_stopping_max_exceedances(n - 1), 2999);
}

TEST(stats, EarlyStoppingMaxExceedancesTable) {
  EXPECT_EQ(early_stopping_max_exceedances(1000), 2);
  EXPECT_EQ(early_stopping_max_exceedances(10000), 77);
  EXPECT_EQ(early_stopping_max_exceedances(100000), 927);
  EXPECT_EQ(early_stopping_max_exceedances(270336), 2583);
  // The SS/MS table: quantile reported = 1 - t/n.
  EXPECT_EQ(early_stopping_max_exceedances(1000, 0.90), 78);
  EXPECT_EQ(early_stopping_max_exceedances(10000, 0.90), 930);
  EXPECT_EQ(early_stopping_max_exceedances(100000, 0.90), 9779);
  EXPECT_EQ(early_stopping_max_exceedances(458), -1);
  EXPECT_EQ(early_stopping_max_exceedances(459), 0);
  EXPECT_EQ(early_stopping_max_exceedances(0), -1);
}

TEST(stats, EarlyStoppingFunctionsAreInverse) {
  for (std::int64_t n = 400; n < 30000; n = n * 5 / 4 + 7) {
    const std::int64_t t = early_stopping_max_exceedances(n);
    if (t < 0) {
      EXPECT_GT(early_stopping_min_requests(0), n);
      continue;
    }
    EXPECT_LE(early_stopping_min_requests(t), n) << n;
    EXPECT_GT(early_stopping_min_requests(t + 1), n) << n;
  }
}

TEST(stats, EarlyStoppingRejectsBadArguments) {
  EXPECT_THROW(early_stopping_min_requests(-1), std::invalid_argument);
  EXPECT_THROW(early_stopping_min_requests(0, 1.0), std::invalid_argument);
  EXPECT_THROW(early_stopping_min_requests(0, 0.99, 0.0), std::invalid_argument);
  EXPECT_THROW(early_stopping_max_exceedances(-5), std::invalid_argument);
  EXPECT_THROW(early_stopping_max_exceedances(10, 99.0), std::invalid_argument);
  EXPECT_THROW(early_stopping_min_requests(10, 1 - 1e-17), std::invalid_argument);  // rounds to 1.0
  EXPECT_THROW(early_stopping_min_requests(1'000'000, 1 - 1e-15), std::overflow_error);
}

TEST(stats, QuantileCiRanksTable) {
  const auto ci = [](std::int64_t n) { return quantile_ci_ranks(n, 0.99); };
  ASSERT_TRUE(ci(1000));
  EXPECT_EQ(ci(1000)->lower_rank, 983);
  EXPECT_EQ(ci(1000)->upper_rank, 997);
  ASSERT_TRUE(ci(10000));
  EXPECT_EQ(ci(10000)->lower_rank, 9880);
  EXPECT_EQ(ci(10000)->upper_rank, 9920);
  ASSERT_TRUE(ci(100000));
  EXPECT_EQ(ci(100000)->lower_rank, 98938);
  EXPECT_EQ(ci(100000)->upper_rank, 99062);
  ASSERT_TRUE(ci(459));
  EXPECT_EQ(ci(459)->lower_rank, 450);
  EXPECT_EQ(ci(459)->upper_rank, 459);  // the sample maximum
  // Bounded above from n = 368, the smallest n with 0.99^n <= 0.025.
  ASSERT_TRUE(ci(368));
  EXPECT_EQ(ci(368)->upper_rank, 368);
  EXPECT_FALSE(ci(367));
  EXPECT_FALSE(ci(100));
  EXPECT_FALSE(ci(0));
  // Median of 10: the classic [x(2), x(9)].
  ASSERT_TRUE(quantile_ci_ranks(10, 0.5));
  EXPECT_EQ(quantile_ci_ranks(10, 0.5)->lower_rank, 2);
  EXPECT_EQ(quantile_ci_ranks(10, 0.5)->upper_rank, 9);
  // Low quantiles fail on the other side (lower rank would be 0).
  EXPECT_FALSE(quantile_ci_ranks(100, 0.01));
  EXPECT_FALSE(quantile_ci_ranks(1000, 1.0));
  EXPECT_THROW(quantile_ci_ranks(10, 1.5), std::invalid_argument);
  EXPECT_THROW(quantile_ci_ranks(10, 0.5, 1.0), std::invalid_argument);
}

TEST(stats, QuantileCiRanksAreTightAndCover) {
  for (const double q : {0.5, 0.9, 0.99}) {
    for (std::int64_t n = 20; n < 200000; n = n * 3 / 2 + 1) {
      const auto ci = quantile_ci_ranks(n, q);
      if (!ci) continue;
      const std::int64_t l = ci->lower_rank, u = ci->upper_rank;
      ASSERT_TRUE(1 <= l && l < u && u <= n) << n;
      EXPECT_LE(binomial_cdf(l - 1, n, q), 0.025) << n;
      EXPECT_GT(binomial_cdf(l, n, q), 0.025) << n;  // l + 1 would not qualify
      EXPECT_GE(binomial_cdf(u - 1, n, q), 0.975) << n;
      EXPECT_LT(binomial_cdf(u - 2, n, q), 0.975) << n;  // u - 1 would not qualify
      EXPECT_GE(binomial_cdf(u - 1, n, q) - binomial_cdf(l - 1, n, q), 0.95) << n;
    }
  }
}

TEST(stats, EstimateQuantileFromHistogram) {
  HdrHistogram h;
  for (std::int64_t v = 1; v <= 1000; ++v) h.record(v);  // exact below 2048
  QuantileEstimate e = estimate_quantile(h, 99);
  EXPECT_EQ(e.value, 990);
  EXPECT_EQ(e.count, 1000);
  EXPECT_TRUE(e.ci_valid);
  EXPECT_EQ(e.ci_low, 983);
  EXPECT_EQ(e.ci_high, 997);
  EXPECT_FALSE(e.low_confidence);
  e = estimate_quantile(h, 99.9);
  EXPECT_EQ(e.value, 999);
  EXPECT_TRUE(e.low_confidence);
  EXPECT_FALSE(e.ci_valid);

  HdrHistogram small;
  for (std::int64_t v = 1; v <= 999; ++v) small.record(v);
  e = estimate_quantile(small, 99);
  EXPECT_TRUE(e.low_confidence);
  EXPECT_TRUE(e.ci_valid);
  HdrHistogram hundred;
  for (std::int64_t v = 1; v <= 100; ++v) hundred.record(v * 1000);
  e = estimate_quantile(hundred, 99);
  EXPECT_FALSE(e.ci_valid);
  EXPECT_EQ(e.ci_low, 0);
  EXPECT_EQ(e.ci_high, 0);
  EXPECT_EQ(e.value, hundred.highest_equivalent(99000));

  HdrHistogram big;
  big.record(5, 9999);
  EXPECT_TRUE(estimate_quantile(big, 99.9).low_confidence);
  big.record(5);
  EXPECT_FALSE(estimate_quantile(big, 99.9).low_confidence);
  EXPECT_FALSE(estimate_quantile(big, 50).low_confidence);
  EXPECT_TRUE(estimate_quantile(big, 100).low_confidence);
  EXPECT_TRUE(estimate_quantile(HdrHistogram(), 50).low_confidence);
  EXPECT_THROW(estimate_quantile(big, 101), std::invalid_argument);
  EXPECT_THROW(estimate_quantile(big, std::nan("")), std::invalid_argument);
}

// The one median of trials, probes and sweep points: the middle value, the mean of the middle two
// for an even count (whatever the order given), none for no values.
TEST(stats, MedianOfOddEvenAndNoValues) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(median({7.5}), 7.5);
  EXPECT_EQ(median({}), std::nullopt);
}

}  // namespace
