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

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

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

namespace {

// Continued fraction of I_x(a, b) (Numerical Recipes 6.4 "betacf", modified Lentz); converges
// quickly for x < (a + 1) / (a + b + 2), in O(sqrt(max(a, b))) terms.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  const auto guard = [](double v) { return std::fabs(v) < kTiny ? kTiny : v; };
  const double qab = a + b;
  const double qap = a + 1;
  const double qam = a - 1;
  double c = 1;
  double d = 1 / guard(1 - qab * x / qap);
  double h = d;
  const int max_iter = 1000 + static_cast<int>(20 * std::sqrt(std::max(a, b)));
  for (int m = 1; m <= max_iter; ++m) {
    const double md = m;
    const double m2 = 2.0 * md;
    double aa = md * (b - md) * x / ((qam + m2) * (a + m2));  // even step
    d = 1 / guard(1 + aa * d);
    c = guard(1 + aa / c);
    h *= d * c;
    aa = -(a + md) * (qab + md) * x / ((a + m2) * (qap + m2));  // odd step
    d = 1 / guard(1 + aa * d);
    c = guard(1 + aa / c);
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) <= kEps) break;
  }
  return h;
}

// I_x(a, b) with y = 1 - x supplied by the caller (computed without cancellation).
double incomplete_beta(double a, double b, double x, double y) {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const double log_front =
      a * std::log(x) + b * std::log(y) + std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, y) / b;
}

constexpr double kNormalDf = 1e7;  // above: Student-t is the normal distribution to ~1e-7

// P[T > t] for t >= 0.
double student_t_upper_tail(double t, double df) {
  if (t == 0) return 0.5;
  if (df > kNormalDf) return 0.5 * std::erfc(t / std::sqrt(2.0));
  const double t2 = t * t;
  if (std::isinf(t2)) return 0;
  const double denom = df + t2;
  return 0.5 * incomplete_beta(df / 2, 0.5, df / denom, t2 / denom);
}

void require_df(double df, const char* fn) {
  if (!(df > 0)) throw std::invalid_argument(std::string(fn) + ": df must be > 0, got " + std::to_string(df));
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0 && b > 0) || std::isinf(a) || std::isinf(b)) {
    throw std::invalid_argument("regularized_incomplete_beta: a and b must be finite and > 0");
  }
  if (!(x >= 0 && x <= 1))
    throw std::invalid_argument("regularized_incomplete_beta: x must be in [0, 1], got " + std::to_string(x));
  return incomplete_beta(a, b, x, 1 - x);
}

double student_t_cdf(double t, double df) {
  require_df(df, "student_t_cdf");
  if (std::isnan(t)) throw std::invalid_argument("student_t_cdf: t is NaN");
  const double tail = student_t_upper_tail(std::fabs(t), df);
  return t < 0 ? tail : 1 - tail;
}

double student_t_quantile(double p, double df) {
  require_df(df, "student_t_quantile");
  if (!(p > 0 && p < 1))
    throw std::invalid_argument("student_t_quantile: p must be in (0, 1), got " + std::to_string(p));
  if (p == 0.5) return 0;
  const double target = p < 0.5 ? p : 1 - p;  // upper-tail probability of |t|
  // The upper tail falls with t: bracket [lo, hi] with tail(lo) > target >= tail(hi), then bisect.
  double lo = 0;
  double hi = 1;
  while (student_t_upper_tail(hi, df) > target && hi < 1e300) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 2000 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    (student_t_upper_tail(mid, df) > target ? lo : hi) = mid;
  }
  const double t = lo + (hi - lo) / 2;
  return p < 0.5 ? -t : t;
}

}  // namespace llmload::analysis
