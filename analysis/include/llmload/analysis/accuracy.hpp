#pragma once
// Accuracy of a run's graded requests (issue 18): the rate of correct answers with its Wilson
// interval, the unparsed rate, per grader and per subset, and the correct goodput.

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

struct ProportionInterval {
  double lo = 0.0;
  double hi = 0.0;
};

/// The Wilson score interval of a binomial proportion (successes of n) at `confidence` (two
/// sided, e.g. 0.95), with z the normal quantile of 1 - (1 - confidence) / 2. n == 0: {0, 1}.
/// Throws std::invalid_argument unless 0 <= successes <= n and 0 < confidence < 1.
ProportionInterval wilson_interval(std::int64_t successes, std::int64_t n, double confidence = 0.95);

/// The accuracy section of result.json from the measured records (warmup and out-of-window
/// records and those not graded are skipped; a failed request is not graded). `meets_slo` says
/// whether a request met the run's SLO (always true without one; an empty function: no SLO).
/// `window_s` is the measured window's length, for the correct goodput (req/s; null when
/// window_s <= 0). "accuracy_ci95" is the Wilson interval at `confidence`. Null when no request
/// was graded. Shape:
///   {"graded", "correct", "incorrect", "unparsed", "accuracy", "accuracy_ci95": [lo, hi],
///    "unparsed_rate", "confidence", "failed_requests" (measured requests with a grader that
///    failed, so could not be graded; stopped_early is not a failure),
///    "by_grader": {name: {graded, correct, incorrect, unparsed, accuracy, accuracy_ci95, unparsed_rate}},
///    "by_subset": {subset: {...same...}} (only when some record has a subset; records without one
///    are in no subset),
///    "correct_goodput": {"requests", "rate_per_s", "meaning"}}
nlohmann::json accuracy_summary(RecordRange records,
                                const std::function<bool(const RequestRecord&)>& meets_slo, double window_s,
                                double confidence = 0.95);

}  // namespace llmload::analysis

namespace llmload::analysis {

/// Two proportions compared (`llmload compare`: accuracy or exact-match rate of A and B): the
/// difference B - A with Newcombe's hybrid score interval (his method 10, from the two Wilson
/// intervals) at `confidence`; significant when it excludes 0. Shape: {"a", "a_ci95", "n_a", "b",
/// "b_ci95", "n_b", "difference", "difference_ci95", "significant"}; null when either n is 0.
nlohmann::json compare_proportions(std::int64_t k_a, std::int64_t n_a, std::int64_t k_b, std::int64_t n_b,
                                   double confidence = 0.95);

}  // namespace llmload::analysis
