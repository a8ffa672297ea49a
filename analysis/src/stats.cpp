#include "llmload/analysis/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace llmload::analysis {
namespace {

constexpr double kLn2Pi = 1.8378770664093454836;  // log(2 pi)

// stirlerr(n) = log(n!) - log(sqrt(2 pi n) (n/e)^n), for n >= 1 (Loader 2000). Asymptotic
// series above 15; below, log(n!) is exact enough (n! < 2^53 is exact in a double).
double stirlerr(double n) {
  constexpr double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680, s4 = 1.0 / 1188;
  if (n <= 15.0) {
    double fact = 1;
    for (int i = 2; i <= static_cast<int>(n); ++i) fact *= i;
    return std::log(fact) - (n + 0.5) * std::log(n) + n - 0.5 * kLn2Pi;
  }
  const double nn = n * n;
  if (n > 500) return (s0 - s1 / nn) / n;
  if (n > 80) return (s0 - (s1 - s2 / nn) / nn) / n;
  if (n > 35) return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n;
  return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n;
}

// Deviance term bd0(x, np) = x log(x / np) + np - x, without cancellation when x ~ np.
double bd0(double x, double np) {
  if (std::fabs(x - np) < 0.1 * (x + np)) {
    double v = (x - np) / (x + np);
    double s = (x - np) * v;
    double ej = 2 * x * v;
    v *= v;
    for (int j = 1; j < 1000; ++j) {
      ej *= v;
      const double s1 = s + ej / (2 * j + 1);
      if (s1 == s) return s1;
      s = s1;
    }
  }
  return x * std::log(x / np) + np - x;
}

// P[X = x] for X ~ Binomial(n, p), q = 1 - p, 0 < p < 1, 0 <= x <= n.
double binomial_pmf(double x, double n, double p, double q) {
  if (x == 0) return std::exp(p < 0.1 ? -bd0(n, n * q) - n * p : n * std::log(q));
  if (x == n) return std::exp(q < 0.1 ? -bd0(n, n * p) - n * q : n * std::log(p));
  const double lc = stirlerr(n) - stirlerr(x) - stirlerr(n - x) - bd0(x, n * p) - bd0(n - x, n * q);
  const double lf = kLn2Pi + std::log(x) + std::log1p(-x / n);
  return std::exp(lc - 0.5 * lf);
}

void require_open_unit(double v, const char* name) {
  if (!(v > 0.0 && v < 1.0))
    throw std::invalid_argument(std::string(name) + " must be in (0, 1), got " + std::to_string(v));
}

constexpr std::int64_t kMaxRequests = std::int64_t{1} << 62;

}  // namespace

double binomial_cdf(std::int64_t k, std::int64_t n, double p) {
  if (n < 0) throw std::invalid_argument("binomial_cdf: n must be >= 0, got " + std::to_string(n));
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument("binomial_cdf: p must be in [0, 1], got " + std::to_string(p));
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  if (p == 0.0) return 1.0;
  if (p == 1.0) return 0.0;
  const double q = 1.0 - p;
  const auto nd = static_cast<double>(n);
  const auto mode = static_cast<std::int64_t>(std::floor((nd + 1) * p));
  // Sum the tail on k's side of the mode: its terms decrease monotonically away from k, so the
  // sum stops once a term no longer changes it.
  double sum = 0;
  if (k < mode) {
    double term = binomial_pmf(static_cast<double>(k), nd, p, q);
    sum = term;
    for (std::int64_t i = k; i > 0; --i) {
      const auto id = static_cast<double>(i);
      term *= (id / (nd - id + 1)) * (q / p);  // pmf(i - 1) / pmf(i)
      sum += term;
      if (term <= sum * 1e-17) break;
    }
    return std::min(sum, 1.0);
  }
  double term = binomial_pmf(static_cast<double>(k + 1), nd, p, q);
  sum = term;
  for (std::int64_t i = k + 1; i < n; ++i) {
    const auto id = static_cast<double>(i);
    term *= ((nd - id) / (id + 1)) * (p / q);  // pmf(i + 1) / pmf(i)
    sum += term;
    if (term <= sum * 1e-17) break;
  }
  return std::max(0.0, 1.0 - sum);
}

std::int64_t early_stopping_min_requests(std::int64_t exceedances, double percentile, double confidence) {
  if (exceedances < 0) {
    throw std::invalid_argument("early_stopping_min_requests: exceedances must be >= 0, got " +
                                std::to_string(exceedances));
  }
  require_open_unit(percentile, "early_stopping_min_requests: percentile");
  require_open_unit(confidence, "early_stopping_min_requests: confidence");
  const double p_exceed = 1.0 - percentile;
  const double alpha = 1.0 - confidence;
  const auto passes = [&](std::int64_t n) { return binomial_cdf(exceedances, n, p_exceed) <= alpha; };
  // P[B(n) <= t] falls as n grows. Invariant: !passes(lo), passes(hi). n = t never passes (cdf 1).
  std::int64_t lo = exceedances;
  const double guess = std::ceil(static_cast<double>(exceedances + 1) / p_exceed);
  if (!(guess < static_cast<double>(kMaxRequests))) {
    throw std::overflow_error("early_stopping_min_requests: more than 2^62 requests needed");
  }
  std::int64_t hi = std::max(exceedances + 1, static_cast<std::int64_t>(guess));
  while (!passes(hi)) {
    if (hi >= kMaxRequests / 2)
      throw std::overflow_error("early_stopping_min_requests: more than 2^62 requests needed");
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (passes(mid) ? hi : lo) = mid;
  }
  return hi;
}

std::int64_t early_stopping_max_exceedances(std::int64_t n, double percentile, double confidence) {
  if (n < 0) throw std::invalid_argument("early_stopping_max_exceedances: n must be >= 0, got " + std::to_string(n));
  require_open_unit(percentile, "early_stopping_max_exceedances: percentile");
  require_open_unit(confidence, "early_stopping_max_exceedances: confidence");
  const double p_exceed = 1.0 - percentile;
  const double alpha = 1.0 - confidence;
  // n >= h(t) + t  <=>  P[Binomial(n, 1 - p) <= t] <= alpha, which rises with t.
  const auto passes = [&](std::int64_t t) { return binomial_cdf(t, n, p_exceed) <= alpha; };
  if (!passes(0)) return -1;
  std::int64_t lo = 0;  // passes
  std::int64_t hi = n;  // cdf(n) = 1: fails
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (passes(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::optional<QuantileCi> quantile_ci_ranks(std::int64_t n, double q, double confidence) {
  if (!(q >= 0.0 && q <= 1.0))
    throw std::invalid_argument("quantile_ci_ranks: q must be in [0, 1], got " + std::to_string(q));
  require_open_unit(confidence, "quantile_ci_ranks: confidence");
  if (n <= 0) return std::nullopt;
  const double half_alpha = (1.0 - confidence) / 2;
  const auto cdf_below = [&](std::int64_t rank) { return binomial_cdf(rank - 1, n, q); };  // P[B <= rank-1]
  // lower: largest l in [0, n] with P[B <= l-1] <= a/2 (true at 0; false at n+1 where it is 1).
  std::int64_t lo = 0, hi = n + 1;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (cdf_below(mid) <= half_alpha ? lo : hi) = mid;
  }
  const std::int64_t lower = lo;
  // upper: smallest u in [1, n+1] with P[B <= u-1] >= 1 - a/2 (true at n+1, false at 0).
  lo = 0;
  hi = n + 1;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (cdf_below(mid) >= 1.0 - half_alpha ? hi : lo) = mid;
  }
  const std::int64_t upper = hi;
  if (lower < 1 || upper > n) return std::nullopt;
  return QuantileCi{lower, upper};
}

QuantileEstimate estimate_quantile(const HdrHistogram& histogram, double percentile) {
  if (!(percentile >= 0.0 && percentile <= 100.0)) {
    throw std::invalid_argument("estimate_quantile: percentile must be in [0, 100], got " + std::to_string(percentile));
  }
  QuantileEstimate e{};
  e.count = histogram.total_count();
  e.value = histogram.value_at_percentile(percentile);
  const double q = percentile / 100.0;
  if (const auto ci = quantile_ci_ranks(e.count, q, 0.95)) {
    e.ci_valid = true;
    e.ci_low = histogram.value_at_rank(ci->lower_rank);
    e.ci_high = histogram.value_at_rank(ci->upper_rank);
  }
  // count < 10 / (1 - q) written as count * (100 - percentile) < 1000, with a tolerance for
  // the rounding of 100 - percentile (100 - 99.9 = 0.0999999999999943).
  e.low_confidence = static_cast<double>(e.count) * (100.0 - percentile) < 1000.0 * (1 - 1e-9);
  return e;
}

}  // namespace llmload::analysis
