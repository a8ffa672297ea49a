#pragma once
// The settings of `llmload run`, shared by the command line and scenario files (YAML or JSON):
// one table, so a flag and a scenario-file key always mean the same thing.

#include <string>
#include <vector>

#include "llmload/loadgen/scenario.hpp"

namespace llmload::app {

/// Applies the scenario file at `path` to `cfg`. Keys are the long flag names with '-' or '_'.
/// Throws ConfigError naming the file, the key and the fix.
void apply_scenario_file(const std::string& path, ScenarioConfig& cfg);

/// Applies scenario settings from YAML or JSON text; `origin` names it in error messages (e.g.
/// the file's path). Throws ConfigError naming the key and the fix.
void apply_scenario_text(const std::string& text, const std::string& origin, ScenarioConfig& cfg);

/// Applies one setting given by its flag name (without "--"). `origin` names where it came from
/// for error messages (e.g. "--input-tokens" or "scenario file s.yaml, key input_tokens").
void apply_setting(const std::string& name, const std::string& value, const std::string& origin, ScenarioConfig& cfg);

struct SettingInfo {
  std::string name;
  std::string help;
  bool in_files = true;  // false: command line only (secrets)
};
const std::vector<SettingInfo>& settings();

/// The configuration as JSON for the artifact (the API key is never included).
std::string scenario_summary(const ScenarioConfig& cfg);

/// The environment variable that sets a `llmload run` option when the flag is not given:
/// "LLMLOAD_" + the flag's name in upper snake case, e.g. request-rate -> LLMLOAD_REQUEST_RATE.
std::string env_name(const std::string& flag);

/// Completes cfg.shard after all settings are applied: with --shard-count but no --shard-index,
/// the index comes from `job_completion_index` (the JOB_COMPLETION_INDEX a Kubernetes Indexed
/// Job sets; nullptr when unset). Throws ConfigError for --shard-index without --shard-count, an
/// index outside [0, count), or a count with no index to be found.
void resolve_shard(ScenarioConfig& cfg, const char* job_completion_index);

}  // namespace llmload::app
