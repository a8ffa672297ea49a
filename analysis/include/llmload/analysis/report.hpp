#pragma once
// Writers for a run's metrics: the result JSON (vLLM-compatible headline keys plus nested data),
// the per-request JSONL record, the .hlog export, and the console summary.

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/sequential_slo.hpp"

#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/run_metrics.hpp"

namespace llmload::analysis {

/// Metrics as JSON: vLLM `bench serve` headline keys (completed, failed, duration,
/// total_input_tokens, ..., mean_/median_/std_/p90_/p95_/p99_{ttft,tpot,itl,e2el}_ms,
/// request_goodput; the same of ttfo, null without a sample) at the top level, and nested
/// `latency`, `response_time`, `schedule_lag`, `slo`, `window` (with `warmup`: how its start was
/// chosen), `errors`, `validity` (verdict and every reason), `minimums`, `stopped_early`, and
/// issue 19's `reasoning`, `by_model` and `prefix_cache`; see docs/artifact.md.
nlohmann::json metrics_json(const RunMetrics& m);

/// A sequential (SLO-sized) run's stopping record, result.json `sequential`: conclusive, the
/// verdict's view, the summary and every look (n, confidence, decision, detail).
nlohmann::json sequential_json(const SequentialSlo& s);

/// One line of requests.jsonl (times in ms from run start; null when missing) as a JSON tree:
/// record_line (record_line.hpp) parsed.
nlohmann::json record_json(const RequestRecord& r);

/// Writes the .hlog (format 1.3): one tagged interval per metric covering the window.
/// `start_epoch_sec` is the wall-clock time of the run's start.
void write_latency_hlog(std::ostream& out, const RunMetrics& m, double start_epoch_sec, const std::string& tool);

/// What the console latency table shows (vLLM's --percentile-metrics / --metric-percentiles).
struct ConsoleOptions {
  /// Percentiles as columns; empty: 50, 90, 95, 99, 99.9.
  std::vector<double> percentiles;
  /// Rows by short name (ttft, ttfo, tpot, itl, e2e or e2el, ttft_rt, ttfo_rt, e2e_rt, schedule_lag);
  /// empty: all (ttfo rows only when the run had reasoning before its first output token).
  std::vector<std::string> metrics;
};

/// The console report's last line of a run a signal stopped (one run, or a merged one).
inline constexpr const char* kRunInterruptedLine =
    "RUN INTERRUPTED: results cover only what was measured before the signal\n";

/// The console summary: counts, throughput, goodput, verdict, and for each metric mean, the
/// percentiles and max.
std::string console_report(const RunMetrics& m, const std::string& title, const ConsoleOptions& options = {});

}  // namespace llmload::analysis
