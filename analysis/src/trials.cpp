#include "llmload/analysis/trials.hpp"
#include "numeric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {

constexpr double kLevel = 0.95;


}  // namespace

std::string_view to_string(TrialCiMethod m) {
  switch (m) {
    case TrialCiMethod::kNone: return "none";
    case TrialCiMethod::kOrderStatisticMedian: return "order_statistic_median";
    case TrialCiMethod::kStudentTMean: return "student_t_mean";
  }
  return "unknown";
}

TrialSummary summarize_trials(std::span<const double> values, double noisy_cv) {
  if (!(noisy_cv >= 0)) throw std::invalid_argument("summarize_trials: noisy_cv must be >= 0");
  for (const double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("summarize_trials: trial values must be finite");
  }
  TrialSummary s;
  s.n = values.size();
  s.values.assign(values.begin(), values.end());
  s.ci_level = kLevel;
  if (s.n == 0) {
    s.median = s.min = s.max = s.mean = s.stddev = s.cv = kNaN;
    s.ci_low = s.ci_high = kNaN;
    s.ci_note = "no trials";
    s.noisy_reason = "no trials";
    return s;
  }
  std::vector<double> sorted = s.values;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = s.n;
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  // Two-pass mean and variance (no cancellation for large, close values).
  double sum = 0;
  for (const double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(n);
  double ss = 0;
  for (const double v : sorted) ss += (v - s.mean) * (v - s.mean);
  s.stddev = n >= 2 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  if (s.stddev == 0) {
    s.cv = 0;
  } else {
    s.cv = s.mean == 0 ? std::numeric_limits<double>::infinity() : s.stddev / std::fabs(s.mean);
  }

  const auto nn = static_cast<std::int64_t>(n);
  if (n == 1) {
    s.ci_low = s.ci_high = kNaN;
    s.ci_note = "single trial: no confidence interval (run more trials for one)";
  } else if (const auto ranks = quantile_ci_ranks(nn, 0.5, kLevel)) {
    s.ci_method = TrialCiMethod::kOrderStatisticMedian;
    s.ci_low = sorted[static_cast<std::size_t>(ranks->lower_rank - 1)];
    s.ci_high = sorted[static_cast<std::size_t>(ranks->upper_rank - 1)];
    // P[l <= B < u] for B ~ Binomial(n, 1/2): the exact coverage of [x(l), x(u)].
    s.ci_coverage = binomial_cdf(ranks->upper_rank - 1, nn, 0.5) - binomial_cdf(ranks->lower_rank - 1, nn, 0.5);
    s.ci_note = fmt::format("distribution-free 95% CI of the median: x({}) to x({}) of {} sorted trials (coverage {:.4f})",
                            ranks->lower_rank, ranks->upper_rank, n, s.ci_coverage);
  } else {
    const double t = student_t_quantile(0.5 + kLevel / 2, static_cast<double>(n - 1));
    const double half = t * s.stddev / std::sqrt(static_cast<double>(n));
    s.ci_method = TrialCiMethod::kStudentTMean;
    s.ci_low = s.mean - half;
    s.ci_high = s.mean + half;
    s.ci_coverage = kLevel;
    s.ci_note = fmt::format(
        "Student-t 95% CI of the mean (t = {:.4f}, df = {}): {} trials are too few for a distribution-free CI of "
        "the median (needs >= 6); assumes roughly normal trial values",
        t, n - 1, n);
  }

  if (n == 1) {
    s.noisy_reason = "single trial: spread unknown";
  } else if (s.cv > noisy_cv) {
    s.noisy = true;
    s.noisy_reason = fmt::format(
        "trials disagree: coefficient of variation {:.1f}% > {:.1f}% (min {:.6g}, median {:.6g}, max {:.6g}); "
        "the system or the setup is not stable enough for a single number",
        100 * s.cv, 100 * noisy_cv, s.min, s.median, s.max);
  }
  return s;
}

nlohmann::json to_json(const TrialSummary& s) {
  nlohmann::json values = nlohmann::json::array();
  for (const double v : s.values) values.push_back(number_or_null(v));
  nlohmann::json ci = {{"method", to_string(s.ci_method)},
                       {"level", s.ci_level},
                       {"coverage", s.ci_method == TrialCiMethod::kNone ? nlohmann::json(nullptr) : nlohmann::json(s.ci_coverage)},
                       {"low", s.ci_method == TrialCiMethod::kNone ? nlohmann::json(nullptr) : number_or_null(s.ci_low)},
                       {"high", s.ci_method == TrialCiMethod::kNone ? nlohmann::json(nullptr) : number_or_null(s.ci_high)},
                       {"note", s.ci_note}};
  return {{"n", s.n},
          {"values", std::move(values)},
          {"median", number_or_null(s.median)},
          {"min", number_or_null(s.min)},
          {"max", number_or_null(s.max)},
          {"mean", number_or_null(s.mean)},
          {"stddev", number_or_null(s.stddev)},
          {"cv", number_or_null(s.cv)},
          {"ci", std::move(ci)},
          {"noisy", s.noisy},
          {"noisy_reason", s.noisy_reason}};
}

}  // namespace llmload::analysis
