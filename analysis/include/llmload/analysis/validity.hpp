#pragma once
// The validity verdict of a run, MLPerf-style (docs/statistics.md, "Validity"): every reason the
// run is INVALID, each with its numbers and the fix. Pure: computed from the run's metrics and
// its request records, no I/O, no clock.

#include <optional>
#include <span>
#include <string>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/run_metrics.hpp"

namespace llmload::analysis {

/// Fills m.validity_checks, m.validity_reasons, m.minimums, m.invalid and m.invalid_reason.
/// Needs m's counts, late fraction, send rates and SLO result already computed.
void judge_validity(RunMetrics& m, const ValidityOptions& o, RecordRange records);

/// How much the client's schedule lag moved what the run reports (open loop only): the
/// response-time view (from t_intended) minus the service-time view (from t_send) is exactly the
/// lag, request by request, so the difference between the two views' percentiles is the lag's
/// effect on every reported response-time number.
struct LagEffect {
  std::string largest;             // e.g. "p99 TTFT 25.3 ms from intended vs 20.1 ms from send"
  double largest_shift_ms = 0;     // of that percentile
  double largest_relative = 0;     // shift / service-view value
  bool moves_a_number = false;     // a shift over 1 ms, kLagRelativeTolerance and the percentile's 95% CI half-width
  bool changes_the_verdict = false;  // the SLO verdict differs between the two views
  bool slows_the_rate = false;     // sent slower than scheduled (achieved / intended rate)
  std::int64_t held_by_cap = 0;    // measured requests whose lag was the in-flight cap's wait
  bool material() const { return moves_a_number || changes_the_verdict || slows_the_rate; }
};
inline constexpr double kLagRelativeTolerance = 0.05;  // 5% of the value it shifts
inline constexpr double kLagAbsoluteToleranceMs = 1.0;  // and more than 1 ms
inline constexpr double kSendRateTolerance = 0.97;      // achieved below 97% of the scheduled rate

/// `max_inflight`: the run's in-flight cap (--max-concurrency), whose wait is not client lag.
LagEffect schedule_lag_effect(const RunMetrics& m, RecordRange records,
                              std::optional<std::int64_t> max_inflight = std::nullopt);

/// The diagnosis and remedy for a material schedule lag, from the client's CPU share while the
/// load ran (nullopt: unknown): timer wake-up latency on an idle client, or a saturated client.
std::string schedule_lag_remedy(std::optional<double> client_core_share);

}  // namespace llmload::analysis
