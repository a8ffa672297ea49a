#pragma once
// `llmload run`: probe the server, calibrate prompts, build the schedule (this shard's part of
// it), wait for the common start, drive the load, report and write the artifact. Shared by
// `llmload` and `llmload-mpi` (which synchronizes its ranks through RunHooks).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/shard.hpp"

namespace llmload::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitConfig = 2;
inline constexpr int kExitInterrupted = 130;

/// How long a shard may reach --start-at late and still start (at once, its lateness recorded as
/// start_skew_ms); later is an error.
inline constexpr std::chrono::seconds kStartLateTolerance{1};

struct RunHooks {
  /// Called once everything that can fail before the load is done (server probed, prompts
  /// calibrated, schedule built), just before waiting for the start. Gets --start-at (nullopt
  /// when not given) and returns the start to wait for (nullopt: at once). May throw ConfigError
  /// to abandon the run. Unset: the run starts at --start-at.
  std::function<std::optional<WallTime>(std::optional<WallTime> requested)> ready;
  /// Print the console report to stdout (llmload-mpi prints the merged one instead).
  bool print_report = true;
};

/// Runs `cfg` (from build_config); `argv` is the redacted command line and `env_settings` the
/// LLMLOAD_* variables used (both recorded in the artifact). Returns the exit code; throws
/// ConfigError for bad configuration or an unreachable endpoint.
int run_command(const ScenarioConfig& cfg, const std::vector<std::string>& argv, const nlohmann::json& env_settings,
                const RunHooks& hooks = {});

/// Checks --start-at against the system clock `now` before anything else: an error when it has
/// passed by more than kStartLateTolerance (the shards could not start together) or lies more than
/// a week ahead (a typo, or milliseconds given for seconds).
void check_start_at(WallTime start_at, WallTime now);

/// Sleeps until `t` on the system clock (in steps of at most a second, so that a clock step is
/// noticed). Returns at once when `t` has passed.
void sleep_until_wall(WallTime t);

}  // namespace llmload::app
