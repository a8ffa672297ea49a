#pragma once
// `llmload run --trials N`: N independent repetitions of one run (each its own connections, its
// seeds derived from --seed and the trial index, an optional pause between), each written as a
// run artifact into DIR/trial-<i>, and one trials artifact in DIR/result.json: every metric as
// the median across trials with min-max, a 95% confidence interval and the noisy flag
// (analysis/trials.hpp), the per-trial values, the validity of all trials and the SLO verdict by
// strict majority. Best-of-N is never the headline. Shape: docs/artifact.md.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/scenario.hpp"
#include "run_command.hpp"

namespace llmload::app {

/// The seed of trial `index` (0-based): the base seed itself for trial 0 (so --trials 1 is the
/// plain run), then well-mixed derivations of (base, index).
std::uint64_t trial_seed(std::uint64_t base, std::int64_t index);

/// What one trial contributes to a trials artifact (its `trials[]` entry) from its result.json.
nlohmann::json trial_entry(const nlohmann::json& result, std::int64_t trial, const std::string& dir,
                           std::uint64_t seed);

/// The trials artifact from the trials' entries and the first trial's result (conditions).
/// Pure: used by run_trials and, with entries accumulated over several probes, by the sweep.
nlohmann::json aggregate_trials(const std::vector<nlohmann::json>& entries, const nlohmann::json& first_result,
                                double pause_s);

/// The metrics a trials artifact summarizes (vLLM names), in console order.
const std::vector<std::string>& trial_metric_keys();

struct TrialsOutcome {
  int exit_code = kExitOk;        // before the SLO gate: 1 writing failed, 130 interrupted
  nlohmann::json result;          // the trials artifact
  std::vector<nlohmann::json> entries;
  nlohmann::json first;           // the first trial's result.json (its conditions head the artifact)
};

/// Runs trials first_trial+1 .. first_trial+cfg.trials (1-based names trial-<i>) after the
/// `previous` entries (a sweep re-probing a load adds trials to its point), writes each trial and
/// the aggregate of all entries to cfg.output_dir (when set) and prints the summary table.
TrialsOutcome run_trials(const ScenarioConfig& cfg, const std::vector<std::string>& argv,
                         const nlohmann::json& env_settings, const RunHooks& hooks,
                         const std::vector<nlohmann::json>& previous = {}, const nlohmann::json& previous_first = {});

}  // namespace llmload::app
