#pragma once
// The options of `llmload run` on a CLI11 app, shared by `llmload` and `llmload-mpi` so both take
// exactly the same arguments. Every option can also be set by an environment variable
// LLMLOAD_<FLAG_UPPER_SNAKE> (settings.hpp env_name); precedence: flag, then environment, then
// --scenario-file.

#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "llmload/loadgen/scenario.hpp"

namespace llmload::app {

/// The parsed options of `run`. CLI11 keeps pointers into it: it must stay where it was created.
struct RunOptions {
  RunOptions() = default;
  RunOptions(const RunOptions&) = delete;
  RunOptions& operator=(const RunOptions&) = delete;

  std::string scenario_file;
  std::map<std::string, CLI::Option*> options;  // by setting name
  bool no_stream = false;
  bool no_ignore_eos = false;
  CLI::Option* scenario_file_opt = nullptr;
  CLI::Option* no_stream_opt = nullptr;
  CLI::Option* no_ignore_eos_opt = nullptr;
};

/// Adds every option of `llmload run` (the settings table, --scenario-file, --no-stream,
/// --no-ignore-eos), each with its LLMLOAD_* environment variable, and the help footer.
void add_run_options(CLI::App& run, RunOptions& o);

/// The configuration after parsing: the scenario file, then each option (from its flag, else
/// its environment variable), then the shard's index (JOB_COMPLETION_INDEX when only
/// --shard-count was given). `argv` tells flags from environment in error messages. Throws
/// ConfigError.
ScenarioConfig build_config(const RunOptions& o, int argc, char** argv, const std::set<std::string>& skip = {});

/// The settings that came from LLMLOAD_* environment variables (for the artifact), secrets
/// redacted: {"LLMLOAD_NUM_REQUESTS": "7", "LLMLOAD_API_KEY": "***", ...}.
nlohmann::json environment_settings(const RunOptions& o, int argc, char** argv);

/// The command line as it will be stored: secrets redacted.
std::vector<std::string> redacted_argv(int argc, char** argv);

/// Where option `name` ("num-requests") came from, for error messages: "--num-requests", or
/// "--num-requests (from $LLMLOAD_NUM_REQUESTS)" when its environment variable gave it.
std::string origin_of(int argc, char** argv, const std::string& name);

}  // namespace llmload::app
