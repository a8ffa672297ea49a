#pragma once
// Per-stage results of a multi-stage plan (--scenario stages): each stage's requests, throughput,
// latency percentiles and SLO attainment, computed from the request records alone (the stage a
// request was released in, RequestRecord::stage). Pure: no I/O, no clock.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/slo.hpp"

namespace llmload::analysis {

/// One stage of the plan: when it ran (offsets from the run's start) and what it offered.
struct StagePlan {
  Nanos begin{0};
  Nanos end{0};
  std::string load;  // e.g. "rate 40/s" or "concurrency 8"
};

struct StageMetrics {
  std::int32_t index = 0;
  StagePlan plan;
  std::int64_t requests = 0;    // released in the stage, warmup excluded
  std::int64_t completed = 0;
  std::int64_t failed = 0;
  /// Successful requests (any stage) completing within the stage's span, per second of it; the
  /// window's population rule (docs/metrics.md) applied to the stage.
  double request_throughput = 0;
  /// Output tokens of the requests completing within the stage's span, per second of it.
  double output_throughput = 0;
  // Percentiles (ms) of the stage's successful requests; nullopt without any.
  std::optional<double> ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, e2e_p50_ms, e2e_p99_ms;
  std::optional<double> attainment;  // with an SLO: good / requests of the stage
};

/// `view`: the SLO's view (TTFT/E2E from t_intended in open loop); the latency percentiles are
/// reported in the same view, so a stage's numbers agree with its attainment.
std::vector<StageMetrics> stage_metrics(RecordRange records, std::span<const StagePlan> plan,
                                        const std::optional<SloSpec>& slo, LatencyView view);

/// `stages` in result.json: one object per stage (null for a percentile without samples).
nlohmann::json stages_json(const std::vector<StageMetrics>& stages);

/// The console table of the stages (empty string for none).
std::string stages_console(const std::vector<StageMetrics>& stages);

}  // namespace llmload::analysis
