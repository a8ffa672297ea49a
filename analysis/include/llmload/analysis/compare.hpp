#pragma once
// Comparing two configurations (A = baseline, B = candidate) metric by metric, and the derived
// numbers of METRICS.md: scaling S(K), E(K), cost per 1M output tokens, and a Little's-law
// consistency check. Pure; formulas and limits in docs/statistics.md.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace llmload::analysis {

/// A closed interval [low, high].
struct Interval {
  double low = 0;
  double high = 0;
};

/// Two intervals (typically 95% CIs of a quantile from two single runs) compared by overlap.
struct QuantileCiComparison {
  bool overlap = true;
  bool significant = false;       // = !overlap
  int direction = 0;              // +1: B entirely above A, -1: B entirely below A, 0: overlap
  Interval difference_bounds;     // every B - A consistent with both intervals: [b_low - a_high, b_high - a_low]
};

/// Significant iff the intervals do not overlap (touching endpoints count as overlap). With two
/// 95% intervals this is conservative: non-overlap means a difference; overlap does not prove
/// there is none. Throws std::invalid_argument for NaN or low > high.
QuantileCiComparison compare_quantile_ci(double a_low, double a_high, double b_low, double b_high);

enum class CompareMethod {
  kWelchT,             // both sides have >= 2 trials: Welch's unequal-variance t-test on the means
  kQuantileCiOverlap,  // a side has a single trial: overlap of the two 95% intervals
  kNone                // not testable (no trials, or a single trial without an interval)
};
std::string_view to_string(CompareMethod m);  // "welch_t", "quantile_ci_overlap", "none"

/// Intervals to use for a side that has a single trial: the within-run 95% CI of the compared
/// statistic (e.g. p99 TTFT's order-statistic CI from that run's histogram).
/// The practical-difference threshold: a difference |B - A| smaller than
/// max(min_effect * |A|, resolution) is never significant, whatever the test says (a test on many
/// samples finds differences far too small to matter, down to one histogram bucket).
struct CompareOptions {
  std::optional<Interval> a_ci;
  std::optional<Interval> b_ci;
  double alpha = 0.05;       // two-sided significance level of the Welch test (and 1 - CI level)
  double min_effect = 0;     // relative: the smallest change that counts (0.05 = 5% of A); >= 0
  double resolution = 0;     // absolute: the measurement's own resolution (e.g. a histogram bucket); >= 0
};

/// max(min_effect * |a|, resolution): the smallest |B - A| that can be significant.
double practical_threshold(double a, double min_effect, double resolution);

/// B relative to A for one metric.
struct MetricDelta {
  std::size_t n_a = 0;
  std::size_t n_b = 0;
  double a = 0;               // mean of A's trials (the single value for one trial)
  double b = 0;               // mean of B's trials
  double delta = 0;           // b - a
  double relative_delta = 0;  // (b - a) / |a|; NaN when a = 0
  std::optional<Interval> ci; // (1 - alpha) CI of b - a (Welch), or the difference bounds (overlap)
  bool significant = false;              // the test shows a difference AND |delta| >= threshold
  bool statistically_significant = false;  // the test alone (Welch p < alpha, or no interval overlap)
  bool below_threshold = false;          // the test shows a difference, but |delta| < threshold
  double threshold = 0;                  // practical_threshold(a, min_effect, resolution)
  double min_effect = 0;                 // as given in CompareOptions
  double resolution = 0;
  CompareMethod method = CompareMethod::kNone;
  // Welch only (NaN otherwise): the t statistic, Welch-Satterthwaite df and two-sided p-value.
  double t = 0;
  double df = 0;
  double p_value = 0;
  std::string explanation;
};

/// Compares per-trial values of one metric. Both sides >= 2 trials: Welch's t-test on the means
/// (significant iff p < alpha, equivalently the CI of b - a excludes 0). Otherwise (a single trial
/// on either side) the 95% intervals are compared by overlap (compare_quantile_ci): a single-trial
/// side uses options.{a,b}_ci; a side with >= 2 trials uses its given interval if any, else its
/// summarize_trials() CI. Without the needed interval the method is kNone and nothing is
/// significant. Then the practical threshold: a statistically significant difference smaller than
/// practical_threshold(a, options.min_effect, options.resolution) is not significant
/// (below_threshold). Values must be finite, min_effect and resolution finite and >= 0
/// (std::invalid_argument).
MetricDelta compare_metric(std::span<const double> a_trials, std::span<const double> b_trials,
                           const CompareOptions& options = {});

nlohmann::json to_json(const MetricDelta& d);

enum class ScalingKind { kStrong, kWeak };
std::string_view to_string(ScalingKind k);  // "strong", "weak"

/// Scaling across K replicas or devices, throughput X at the same SLO.
struct ScalingPoint {
  double k = 1;
  double throughput_1 = 0;  // X(1)
  double throughput_k = 0;  // X(K)
  double speedup = 0;       // S(K) = X(K) / X(1)
  double efficiency = 0;    // E(K) = S(K) / K
  ScalingKind kind = ScalingKind::kStrong;
};

/// Throws std::invalid_argument unless throughput_1 > 0, throughput_k >= 0, k >= 1 (all finite).
ScalingPoint scaling(double throughput_1, double throughput_k, double k, ScalingKind kind = ScalingKind::kStrong);

/// $ per 1M output tokens = price_per_hour * devices / (3600 * output_tokens_per_s) * 1e6.
/// +infinity when output_tokens_per_s is 0; std::invalid_argument for negative or non-finite
/// inputs.
double cost_per_million_tokens(double price_per_hour, double devices, double output_tokens_per_s);

/// Little's law L = X W as a consistency check of a run's own measurements.
struct LittleCheck {
  double measured_l = 0;        // time-averaged requests in flight over the window
  double predicted_l = 0;       // X W: request throughput x mean E2E (seconds)
  double relative_deviation = 0;  // (measured - predicted) / predicted; NaN when predicted is 0
  double tolerance = 0;         // the tolerance applied (see littles_law)
  bool agrees = false;          // |relative_deviation| <= tolerance (or both 0)
  std::string explanation;
};

/// Checks mean_in_flight against throughput (requests/s completing in the window) x mean_e2e_s
/// (mean time in system of those requests, seconds). tolerance: allowed relative deviation
/// (default 10%). window_s > 0 adds the edge term 2 W / T, the approximate largest effect of the
/// requests straddling the window's two edges. Throws std::invalid_argument for negative or
/// non-finite inputs.
LittleCheck littles_law(double mean_in_flight, double throughput, double mean_e2e_s, double tolerance = 0.10,
                        double window_s = 0);

}  // namespace llmload::analysis
