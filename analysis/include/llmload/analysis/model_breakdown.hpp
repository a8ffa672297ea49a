#pragma once
// Per-model results of a run whose requests went to several models or adapters (issue 19;
// docs/metrics.md "Per-model results"): RunMetrics::by_model (computed by model_breakdown(),
// run_metrics.hpp) as result.json `by_model` and the console's table.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/run_metrics.hpp"

namespace llmload::analysis {

/// result.json `by_model`: {model: {"requests", "completed", "failed", "request_throughput",
/// "output_throughput", "latency": {"ttft", "tpot", "e2e", "ttfo"} (each {"count", "mean_ms",
/// "p50_ms", "p90_ms", "p99_ms"} or null), "slo": {"attainment", "request_goodput", "verdict",
/// "metrics"} or null}}; null when the map is empty (one model).
nlohmann::json by_model_json(const std::map<std::string, ModelResult>& by_model);

/// The console's "Per model" table ("" when the map is empty); the TTFO column with `ttfo`.
std::string by_model_console(const std::map<std::string, ModelResult>& by_model, bool ttfo);

}  // namespace llmload::analysis
