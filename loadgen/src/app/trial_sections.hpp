#pragma once
// The issue-19 sections of a trials artifact (docs/artifact.md "Trials"): what each trial's
// result.json says about reasoning, tool-call and structured-output validity, the prefix cache
// and each model, pooled over the trials. Counts are summed (rates recomputed from the sums);
// rates that are not counts (the server's own hit rate, per-model throughput and p99 latencies)
// are the median across trials, as the headline metrics are.

#include <vector>

#include <nlohmann/json.hpp>

namespace llmload::app {

/// A trial entry's copy of its result's sections (`sections`: reasoning, structured_output,
/// prefix_cache, by_model; null when the run had none).
nlohmann::json trial_sections(const nlohmann::json& result);

/// Sets aggregate["reasoning"], ["structured_output"], ["prefix_cache"] and ["by_model"] from the
/// entries' `sections` (null when no trial had the section).
void pool_trial_sections(nlohmann::json& aggregate, const std::vector<nlohmann::json>& entries);

}  // namespace llmload::app
