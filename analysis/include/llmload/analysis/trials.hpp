#pragma once
// Summary of one metric over repeated independent trials (METRICS.md "Statistics"): the median
// with its min-max spread and a 95% confidence interval, never best-of-N. Pure; see
// docs/statistics.md for the formulas and their limits.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace llmload::analysis {

/// How TrialSummary's confidence interval was obtained.
enum class TrialCiMethod {
  kNone,                  // no interval: fewer than 2 trials
  kOrderStatisticMedian,  // distribution-free CI of the median [x(l), x(u)] (n >= 6)
  kStudentTMean           // mean +- t_{0.975, n-1} s / sqrt(n) (2 <= n <= 5; assumes ~normal trials)
};
std::string_view to_string(TrialCiMethod m);  // "none", "order_statistic_median", "student_t_mean"

struct TrialSummary {
  std::size_t n = 0;
  std::vector<double> values;  // per-trial values, in the order given
  double median = 0;           // middle value; mean of the two middle values for even n
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1 in the denominator); 0 for n = 1
  double cv = 0;      // stddev / |mean|; 0 when stddev = 0, +inf when mean = 0 < stddev
  // 95% confidence interval (of the median or of the mean: see ci_method); low = high = NaN
  // with kNone.
  TrialCiMethod ci_method = TrialCiMethod::kNone;
  double ci_low = 0;
  double ci_high = 0;
  double ci_level = 0.95;     // the level asked for
  double ci_coverage = 0;     // the exact coverage of an order-statistic CI (>= 0.95); the nominal 0.95 for Student-t; 0 for none
  std::string ci_note;        // which interval and why (e.g. "single trial: no confidence interval")
  bool noisy = false;         // cv > the noisy_cv threshold
  std::string noisy_reason;   // why (or why not) noisy; empty when not noisy and n >= 2
};

/// Summarizes per-trial values (e.g. the output token throughput of each trial). All values must
/// be finite (std::invalid_argument otherwise); an empty span gives n = 0 with NaN statistics.
/// noisy_cv: the coefficient of variation above which the trials are flagged as noisy (>= 0).
/// The CI is the order-statistic CI of the median from quantile_ci_ranks(n, 0.5, 0.95) when
/// n is large enough (n >= 6) to reach 95% coverage, else the Student-t CI of the mean (n >= 2).
TrialSummary summarize_trials(std::span<const double> values, double noisy_cv = 0.10);

/// {"n", "values", "median", "min", "max", "mean", "stddev", "cv", "ci": {"method", "level",
/// "coverage", "low", "high", "note"} (low/high null without an interval), "noisy", "noisy_reason"}.
/// Non-finite numbers are written as null.
nlohmann::json to_json(const TrialSummary& s);

}  // namespace llmload::analysis
