#include "llmload/analysis/compare.hpp"
#include "numeric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "llmload/analysis/stats.hpp"
#include "llmload/analysis/trials.hpp"

namespace llmload::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();


struct Moments {
  double mean = kNaN;
  double variance = kNaN;  // sample variance (n - 1); NaN for n < 2
};

Moments moments(std::span<const double> v) {
  Moments m;
  if (v.empty()) return m;
  double sum = 0;
  for (const double x : v) sum += x;
  m.mean = sum / static_cast<double>(v.size());
  if (v.size() < 2) return m;
  double ss = 0;
  for (const double x : v) ss += (x - m.mean) * (x - m.mean);
  m.variance = ss / static_cast<double>(v.size() - 1);
  return m;
}

void require_finite(std::span<const double> v, const char* side) {
  for (const double x : v) {
    if (!std::isfinite(x)) throw std::invalid_argument(fmt::format("compare_metric: {} has a non-finite trial value", side));
  }
}

void require_interval(double low, double high, const char* what) {
  if (std::isnan(low) || std::isnan(high) || low > high) {
    throw std::invalid_argument(fmt::format("compare_quantile_ci: {} interval must have low <= high (got {}, {})", what, low, high));
  }
}

// The interval standing for one side in the overlap comparison; nullopt when there is none.
std::optional<Interval> side_interval(std::span<const double> trials, const std::optional<Interval>& given) {
  if (given) return given;
  if (trials.size() < 2) return std::nullopt;
  const TrialSummary s = summarize_trials(trials);
  return Interval{s.ci_low, s.ci_high};
}

void welch(MetricDelta& d, const Moments& ma, const Moments& mb, double alpha) {
  d.method = CompareMethod::kWelchT;
  const double sa = ma.variance / static_cast<double>(d.n_a);
  const double sb = mb.variance / static_cast<double>(d.n_b);
  const double se2 = sa + sb;
  const double level = 100 * (1 - alpha);
  if (se2 == 0) {
    d.df = kNaN;
    if (d.delta == 0) {
      d.t = 0;
      d.p_value = 1;
      d.ci = Interval{0, 0};
      d.explanation = "Welch t-test: every trial of both sides has the same value; no difference";
    } else {
      d.t = d.delta > 0 ? kInf : -kInf;
      d.p_value = 0;
      d.ci = Interval{d.delta, d.delta};
      d.significant = true;
      d.explanation = "Welch t-test: no variation within either side, and the sides differ";
    }
    return;
  }
  const double se = std::sqrt(se2);
  const double na1 = static_cast<double>(d.n_a - 1);
  const double nb1 = static_cast<double>(d.n_b - 1);
  d.df = se2 * se2 / (sa * sa / na1 + sb * sb / nb1);
  d.t = d.delta / se;
  d.p_value = 2 * student_t_cdf(-std::fabs(d.t), d.df);
  const double q = student_t_quantile(1 - alpha / 2, d.df);
  d.ci = Interval{d.delta - q * se, d.delta + q * se};
  d.significant = d.p_value < alpha;
  d.explanation = fmt::format(
      "Welch t-test on the means ({} vs {} trials): t = {:.3f}, df = {:.2f}, p = {:.3g}; {:.0f}% CI of B - A "
      "[{:.6g}, {:.6g}] {} 0: {}",
      d.n_a, d.n_b, d.t, d.df, d.p_value, level, d.ci->low, d.ci->high, d.significant ? "excludes" : "includes",
      d.significant ? "significant difference" : "no significant difference");
}

}  // namespace

QuantileCiComparison compare_quantile_ci(double a_low, double a_high, double b_low, double b_high) {
  require_interval(a_low, a_high, "A's");
  require_interval(b_low, b_high, "B's");
  QuantileCiComparison c;
  if (b_low > a_high) {
    c.direction = 1;
  } else if (b_high < a_low) {
    c.direction = -1;
  }
  c.overlap = c.direction == 0;
  c.significant = !c.overlap;
  c.difference_bounds = Interval{b_low - a_high, b_high - a_low};
  return c;
}

std::string_view to_string(CompareMethod m) {
  switch (m) {
    case CompareMethod::kWelchT: return "welch_t";
    case CompareMethod::kQuantileCiOverlap: return "quantile_ci_overlap";
    case CompareMethod::kNone: return "none";
  }
  return "unknown";
}

double practical_threshold(double a, double min_effect, double resolution) {
  const double rel = std::isfinite(a) ? min_effect * std::fabs(a) : 0.0;
  return std::max(rel, resolution);
}

namespace {

// The test found a difference; is it large enough to matter?
void apply_threshold(MetricDelta& d) {
  d.statistically_significant = d.significant;
  d.threshold = practical_threshold(d.a, d.min_effect, d.resolution);
  if (!d.significant || !(std::fabs(d.delta) < d.threshold)) return;
  d.significant = false;
  d.below_threshold = true;
  const bool by_resolution = d.resolution >= d.min_effect * std::fabs(d.a);
  d.explanation += fmt::format(
      "; but |B - A| = {:.6g} is below the practical threshold {:.6g} ({}): not significant", std::fabs(d.delta),
      d.threshold,
      by_resolution ? fmt::format("the measurement's resolution, {:.6g}", d.resolution)
                    : fmt::format("the minimum effect {:g}% of A", 100 * d.min_effect));
}

MetricDelta compare_metric_test(std::span<const double> a_trials, std::span<const double> b_trials,
                                const CompareOptions& options);

}  // namespace

MetricDelta compare_metric(std::span<const double> a_trials, std::span<const double> b_trials,
                           const CompareOptions& options) {
  require_finite(a_trials, "A");
  require_finite(b_trials, "B");
  if (!(options.alpha > 0 && options.alpha < 1)) throw std::invalid_argument("compare_metric: alpha must be in (0, 1)");
  if (!(std::isfinite(options.min_effect) && options.min_effect >= 0)) {
    throw std::invalid_argument("compare_metric: min_effect must be finite and >= 0");
  }
  if (!(std::isfinite(options.resolution) && options.resolution >= 0)) {
    throw std::invalid_argument("compare_metric: resolution must be finite and >= 0");
  }
  MetricDelta d = compare_metric_test(a_trials, b_trials, options);
  d.min_effect = options.min_effect;
  d.resolution = options.resolution;
  apply_threshold(d);
  return d;
}

namespace {

MetricDelta compare_metric_test(std::span<const double> a_trials, std::span<const double> b_trials,
                                const CompareOptions& options) {
  MetricDelta d;
  d.n_a = a_trials.size();
  d.n_b = b_trials.size();
  d.t = d.df = d.p_value = kNaN;
  const Moments ma = moments(a_trials);
  const Moments mb = moments(b_trials);
  d.a = ma.mean;
  d.b = mb.mean;
  d.delta = d.b - d.a;
  d.relative_delta = d.a != 0 ? d.delta / std::fabs(d.a) : kNaN;
  if (d.n_a == 0 || d.n_b == 0) {
    d.delta = d.relative_delta = kNaN;
    d.explanation = "not compared: a side has no trials";
    return d;
  }
  if (d.n_a >= 2 && d.n_b >= 2) {
    welch(d, ma, mb, options.alpha);
    return d;
  }
  const auto ia = side_interval(a_trials, options.a_ci);
  const auto ib = side_interval(b_trials, options.b_ci);
  if (!ia || !ib) {
    d.explanation = fmt::format(
        "no significance test: {} has a single trial and no within-run confidence interval was given; run more "
        "trials (>= 2 per side gives a Welch t-test)",
        !ia ? "A" : "B");
    return d;
  }
  const QuantileCiComparison c = compare_quantile_ci(ia->low, ia->high, ib->low, ib->high);
  d.method = CompareMethod::kQuantileCiOverlap;
  d.significant = c.significant;
  d.ci = c.difference_bounds;
  d.explanation = fmt::format(
      "single trial on a side: 95% intervals compared by overlap (conservative), A [{:.6g}, {:.6g}] vs B [{:.6g}, "
      "{:.6g}]: {}",
      ia->low, ia->high, ib->low, ib->high,
      c.direction > 0   ? "B is higher (no overlap)"
      : c.direction < 0 ? "B is lower (no overlap)"
                        : "intervals overlap, no significant difference shown");
  return d;
}

}  // namespace

nlohmann::json to_json(const MetricDelta& d) {
  nlohmann::json ci = nullptr;
  if (d.ci) ci = {{"low", number_or_null(d.ci->low)}, {"high", number_or_null(d.ci->high)}};
  return {{"n_a", d.n_a},
          {"n_b", d.n_b},
          {"a", number_or_null(d.a)},
          {"b", number_or_null(d.b)},
          {"delta", number_or_null(d.delta)},
          {"relative_delta", number_or_null(d.relative_delta)},
          {"ci", std::move(ci)},
          {"significant", d.significant},
          {"statistically_significant", d.statistically_significant},
          {"below_threshold", d.below_threshold},
          {"threshold", number_or_null(d.threshold)},
          {"min_effect", number_or_null(d.min_effect)},
          {"resolution", number_or_null(d.resolution)},
          {"method", to_string(d.method)},
          {"t", number_or_null(d.t)},
          {"df", number_or_null(d.df)},
          {"p_value", number_or_null(d.p_value)},
          {"explanation", d.explanation}};
}

std::string_view to_string(ScalingKind k) { return k == ScalingKind::kStrong ? "strong" : "weak"; }

ScalingPoint scaling(double throughput_1, double throughput_k, double k, ScalingKind kind) {
  if (!(std::isfinite(throughput_1) && throughput_1 > 0))
    throw std::invalid_argument("scaling: X(1) must be finite and > 0");
  if (!(std::isfinite(throughput_k) && throughput_k >= 0))
    throw std::invalid_argument("scaling: X(K) must be finite and >= 0");
  if (!(std::isfinite(k) && k >= 1)) throw std::invalid_argument("scaling: K must be finite and >= 1");
  ScalingPoint p;
  p.k = k;
  p.throughput_1 = throughput_1;
  p.throughput_k = throughput_k;
  p.speedup = throughput_k / throughput_1;
  p.efficiency = p.speedup / k;
  p.kind = kind;
  return p;
}

double cost_per_million_tokens(double price_per_hour, double devices, double output_tokens_per_s) {
  for (const double v : {price_per_hour, devices, output_tokens_per_s}) {
    if (!(std::isfinite(v) && v >= 0))
      throw std::invalid_argument("cost_per_million_tokens: price, devices and tokens/s must be finite and >= 0");
  }
  if (output_tokens_per_s == 0) return kInf;
  return price_per_hour * devices / (3600.0 * output_tokens_per_s) * 1e6;
}

LittleCheck littles_law(double mean_in_flight, double throughput, double mean_e2e_s, double tolerance, double window_s) {
  for (const double v : {mean_in_flight, throughput, mean_e2e_s, tolerance, window_s}) {
    if (!(std::isfinite(v) && v >= 0))
      throw std::invalid_argument("littles_law: inputs must be finite and >= 0");
  }
  LittleCheck c;
  c.measured_l = mean_in_flight;
  c.predicted_l = throughput * mean_e2e_s;
  c.tolerance = tolerance + (window_s > 0 ? 2 * mean_e2e_s / window_s : 0.0);
  if (c.predicted_l == 0) {
    c.relative_deviation = mean_in_flight == 0 ? 0.0 : kNaN;
    c.agrees = mean_in_flight == 0;
  } else {
    c.relative_deviation = (c.measured_l - c.predicted_l) / c.predicted_l;
    c.agrees = std::fabs(c.relative_deviation) <= c.tolerance;
  }
  c.explanation = fmt::format(
      "Little's law: measured L = {:.4g}, X W = {:.4g} x {:.4g} s = {:.4g}; deviation {} (tolerance {:.1f}%{}): {}",
      c.measured_l, throughput, mean_e2e_s, c.predicted_l,
      std::isnan(c.relative_deviation) ? std::string("undefined") : fmt::format("{:+.1f}%", 100 * c.relative_deviation),
      100 * c.tolerance, window_s > 0 ? fmt::format(", including 2W/T = {:.1f}% for the window edges", 200 * mean_e2e_s / window_s) : std::string(),
      c.agrees ? "consistent" : "inconsistent: in-flight, throughput and latency do not describe the same system");
  return c;
}

}  // namespace llmload::analysis
