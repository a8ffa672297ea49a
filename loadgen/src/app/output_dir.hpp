#pragma once
// Where a run's artifact goes, and the rule that no run overwrites another's: one place for the
// default directory name, vLLM's --save-result name and the refusal of a used directory.

#include <ctime>
#include <string>

#include "llmload/loadgen/scenario.hpp"

namespace llmload::app {

/// "20261125-213000" in local time (directory names sort by time).
std::string local_stamp(std::time_t t);

/// The default output directory of a run given no --output: llmload-runs/<stamp>-<scenario>-<load>,
/// e.g. llmload-runs/20261125-213000-server-rate8 or ...-concurrency-c4.
std::string default_run_dir(const ScenarioConfig& cfg, std::time_t now);

/// vLLM's --save-result file name (without .json): <backend>-<rate>qps-<model>-<YYYYmmdd-HHMMSS>,
/// the model's last path component; "inf" for a run without a rate.
std::string vllm_result_name(const ScenarioConfig& cfg, std::time_t now);

/// Resolves cfg.output_dir before a run (or the first trial): the default directory when none was
/// given, vLLM's descriptive name under --result-dir with --save-result.
void resolve_output_dir(ScenarioConfig& cfg, std::time_t now);

/// Refuses (ConfigError) an existing non-empty `dir` unless `overwrite`; creates nothing (a run
/// that then fails its configuration leaves no directory behind).
void check_output_dir_unused(const std::string& dir, bool overwrite);

/// --overwrite of a directory an earlier `llmload run --workers` wrote: takes its `workers/` (the
/// workers' artifacts and logs) away, so that nothing of the earlier run reads as this one's. A
/// `workers/` that holds no worker-0 or worker-0.log is not llmload's and stays.
void remove_earlier_workers(const std::string& dir);

/// Creates `dir` and checks it is writable; refuses (ConfigError) an existing directory that is
/// not empty unless `overwrite` (--overwrite), so a run never silently replaces another's files.
void claim_output_dir(const std::string& dir, bool overwrite);

}  // namespace llmload::app
