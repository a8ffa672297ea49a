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

}  // namespace llmload::app
