#pragma once
// Correctness beside latency (issue 18): a run's graded accuracy with the --slo accuracy verdict,
// and output consistency against a reference (a concurrency-1 pass, or a saved run). Sections of
// result.json and lines of the console report; docs/metrics.md ("Accuracy", "Consistency").

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/run_metrics.hpp"
#include "llmload/loadgen/scenario.hpp"

namespace llmload::tokenizer {
class Tokenizer;
}

namespace llmload::app {

/// result["accuracy"] from the run's records (null when nothing was graded). With `--slo
/// accuracy:X` it carries the verdict on the Wilson interval, and result["slo"] (made when the
/// SLO has no latency bound) folds it into the run's verdict: FAIL if either fails, else
/// INCONCLUSIVE if either is, else PASS.
void add_accuracy(nlohmann::json& result, const ScenarioConfig& cfg, analysis::RecordRange records,
                  const analysis::RunMetrics& metrics);

/// Runs the reference pass of a consistency check: `ref` is the run's config made into a
/// concurrency-1 run of the compared items; returns its output directory.
using ReferencePass = std::function<std::string(const ScenarioConfig& ref)>;

/// --consistency: this run's kept outputs against the reference's, item by item (result
/// ["consistency"]). The reference is --reference DIR's requests.jsonl, or a pass run by
/// `run_pass` into OUTPUT/consistency-reference. Throws ConfigError when --reference DIR has no
/// saved outputs.
nlohmann::json check_consistency(const ScenarioConfig& cfg, const std::vector<analysis::RequestRecord>& records,
                                 const tokenizer::Tokenizer* tokenizer, const ReferencePass& run_pass);

/// A trial's correctness counts for its entry in a trials artifact: {"accuracy_counts": {correct,
/// graded, unparsed}, "consistency_counts": {identical, compared}} (each null when absent).
nlohmann::json correctness_counts(const nlohmann::json& result);

/// A trials (or sweep point) artifact's "accuracy" and "consistency": the trials' counts pooled,
/// with Wilson intervals (null when no trial has them).
void pool_correctness(nlohmann::json& aggregate, const std::vector<nlohmann::json>& entries);

/// result["scorecard"]: the four dimensions of one run side by side, each from the same run's
/// sections (docs/artifact.md): correctness (accuracy, consistency), performance (goodput, p99
/// latencies, the SLO verdict), cost (per million output tokens, energy per output token when the
/// server's metrics report energy) and reliability (error rate by class, validity).
nlohmann::json scorecard(const nlohmann::json& result);

/// The console lines for the accuracy and consistency sections (empty when neither is there).
std::string correctness_report(const nlohmann::json& result);

}  // namespace llmload::app
