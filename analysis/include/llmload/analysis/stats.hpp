#pragma once
// Sample-size statistics for percentiles: exact binomial tail, MLPerf-style early stopping, and
// order-statistic confidence intervals for quantiles. Pure functions; parameters out of range
// throw std::invalid_argument.

#include <cstdint>
#include <optional>
#include <vector>

#include "llmload/analysis/hdr_histogram.hpp"

namespace llmload::analysis {

/// Samples from which a reported p99 (p99.9) is not marked low-confidence: ten expected samples
/// above it. Also the default size of a run (vLLM's benchmark: 1,000 prompts).
inline constexpr std::int64_t kConfidentP99Samples = 1000;
inline constexpr std::int64_t kConfidentP999Samples = 10000;

/// The median of the values (the mean of the middle two for an even count); none when there are
/// no values. The one definition the artifacts' medians of trials, probes and sweep points use.
std::optional<double> median(std::vector<double> values);

/// P[X <= k] for X ~ Binomial(n, p): 0 for k < 0, 1 for k >= n. Sums the smaller tail of
/// probability masses computed by Loader's saddle-point method (relative error ~1e-14, no
/// underflow trouble in log space); cost O(sqrt(n p (1-p))) terms. Requires n >= 0, p in [0, 1].
double binomial_cdf(std::int64_t k, std::int64_t n, double p);

/// MLPerf early stopping: the number of queries h(t) + t needed so that, having seen t
/// `exceedances` (samples above the reported percentile), the true `percentile` (a fraction in
/// (0,1), e.g. 0.99) is still met with `confidence` (in (0,1)); h(t) is the smallest h with
/// P[Binomial(h + t, 1 - percentile) <= t] <= 1 - confidence. E.g. p = 0.99: t = 0 -> 459,
/// t = 1 -> 662. Requires exceedances >= 0; throws std::overflow_error past 2^62 queries.
std::int64_t early_stopping_min_requests(std::int64_t exceedances, double percentile = 0.99, double confidence = 0.99);

/// The largest t with n >= early_stopping_min_requests(t), i.e. the most exceedances n samples
/// may contain for the percentile to pass; -1 when even t = 0 needs more than n samples.
std::int64_t early_stopping_max_exceedances(std::int64_t n, double percentile = 0.99, double confidence = 0.99);

/// 1-based order-statistic ranks: with x(1) <= ... <= x(n) the sorted sample, [x(lower_rank),
/// x(upper_rank)] is a confidence interval for the q-quantile.
struct QuantileCi {
  std::int64_t lower_rank;
  std::int64_t upper_rank;
};

/// Two-sided order-statistic CI for the q-quantile (q in [0,1]) at `confidence` (in (0,1)), with
/// B ~ Binomial(n, q) and a = 1 - confidence:
///   lower_rank = the largest l with P[B <= l - 1] <= a/2,
///   upper_rank = the smallest u with P[B <= u - 1] >= 1 - a/2,
/// so that P[l <= B < u] >= 1 - a. Edge convention: nullopt when the interval cannot be bounded
/// by the sample, i.e. lower_rank would be 0 (below the minimum) or upper_rank n + 1 (above the
/// maximum), and for n <= 0. upper_rank == n means "up to the sample maximum".
/// E.g. q = 0.99: n = 1000 -> [983, 997], n = 459 -> [450, 459], n = 100 -> nullopt.
std::optional<QuantileCi> quantile_ci_ranks(std::int64_t n, double q, double confidence = 0.95);

/// A percentile from a histogram, with its sample count and 95% confidence interval.
struct QuantileEstimate {
  std::int64_t value;    // histogram.value_at_percentile(percentile)
  std::int64_t ci_low;   // value at quantile_ci_ranks(...).lower_rank; 0 when !ci_valid
  std::int64_t ci_high;  // value at quantile_ci_ranks(...).upper_rank; 0 when !ci_valid
  bool ci_valid;         // false when the sample cannot bound the quantile (too few samples)
  std::int64_t count;    // samples in the histogram
  bool low_confidence;   // count < 10 / (1 - q): p99 with < 1,000 samples, p99.9 with < 10,000
};

/// `percentile` in [0, 100] (e.g. 99.9). Throws std::invalid_argument otherwise (or NaN).
QuantileEstimate estimate_quantile(const HdrHistogram& histogram, double percentile);

/// Regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b), for a > 0, b > 0 and
/// x in [0, 1] (Numerical Recipes 6.4: Lentz's continued fraction on whichever of x, 1 - x gives
/// fast convergence; relative error ~1e-13 for moderate a, b). Throws std::invalid_argument.
double regularized_incomplete_beta(double a, double b, double x);

/// P[T <= t] for T ~ Student-t with `df` degrees of freedom (df > 0, not necessarily an integer:
/// Welch's test has fractional df). Uses P[T > |t|] = I_{df/(df+t^2)}(df/2, 1/2) / 2; for
/// df > 1e7 (and infinite df) the normal distribution. Throws std::invalid_argument for bad df or NaN t.
double student_t_cdf(double t, double df);

/// The p-quantile of Student-t (p in (0, 1)): the t with student_t_cdf(t, df) = p, found by
/// bisection on the tail probability to ~1e-14 relative. E.g. (0.975, 4) -> 2.776445,
/// (0.975, 10) -> 2.228139. Throws std::invalid_argument.
double student_t_quantile(double p, double df);

}  // namespace llmload::analysis
