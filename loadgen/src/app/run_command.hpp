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

// Exit codes (docs/artifact.md "Exit codes"). 3-5 only with --fail-on-slo.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;         // results could not be written; internal error
inline constexpr int kExitConfig = 2;          // bad flags, scenario file, trace; unreachable endpoint
inline constexpr int kExitSloFail = 3;         // --fail-on-slo: the SLO verdict is FAIL
inline constexpr int kExitSloInconclusive = 4; // --fail-on-slo: INCONCLUSIVE (too few requests to decide)
inline constexpr int kExitInvalid = 5;         // --fail-on-slo: the run is INVALID (its verdict cannot be trusted)
inline constexpr int kExitNothingMeasured = 6; // finished, but no measured request succeeded (results still written)
inline constexpr int kExitInterrupted = 130;   // SIGINT/SIGTERM: what was measured is written

/// The version of the artifact schema (result.json, sweep.json) this build writes: docs/artifact.md.
inline constexpr int kSchemaVersion = 1;

/// How long a shard may reach --start-at late and still start (at once, its lateness recorded as
/// start_skew_ms); later is an error.
inline constexpr std::chrono::seconds kStartLateTolerance{1};
/// Progress when stderr is not a terminal: one line this often.
inline constexpr std::chrono::seconds kProgressLogInterval{10};

struct RunHooks {
  /// Called once everything that can fail before the load is done (server probed, prompts
  /// calibrated, schedule built), just before waiting for the start. Gets --start-at (nullopt
  /// when not given) and returns the start to wait for (nullopt: at once). May throw ConfigError
  /// to abandon the run. Unset: the run starts at --start-at.
  std::function<std::optional<WallTime>(std::optional<WallTime> requested)> ready;
  /// Print the console report to stdout (llmload-mpi prints the merged one instead).
  bool print_report = true;
  /// Shown at the start of the progress line (e.g. "trial 2/3").
  std::string label;
  /// Stop releasing requests when the server is over-saturated (sweep points).
  bool watch_saturation = false;
  /// run_command: exit kExitNothingMeasured when no measured request succeeded. llmload-mpi turns
  /// it off in its ranks and judges the merged run instead.
  bool gate_nothing_measured = true;
  /// Warn during the load (the server not keeping up). A worker's stderr is its log, from which
  /// the parent shows the warnings only at the end (workers.cpp): it leaves these out. Every other
  /// warning is said, even when quiet.
  bool live_warnings = true;
};

/// One run's outcome: the exit code before the SLO gate (0, 1 when writing failed, 130 when
/// interrupted) and its result.json (also when nothing was written: no --output).
struct RunOutcome {
  int exit_code = kExitOk;
  nlohmann::json result;
};

/// The most requests `cfg` can have in flight when that is known before it runs (a concurrency,
/// --max-inflight, concurrency stages, an uncapped offline run's requests); 0 when unbounded.
std::int64_t most_in_flight(const ScenarioConfig& cfg);
/// Raises the open-file limit to its hard limit, then refuses (ConfigError, with the fix) an
/// `in_flight` the limit cannot hold (each request in flight holds a connection).
void check_open_file_limit(std::int64_t in_flight);

/// Everything about `cfg` that can be checked before contacting the server (its flags, --start-at,
/// whether its scenario can be split into its shards); throws ConfigError with the fix.
void check_before_contact(const ScenarioConfig& cfg);

/// One run of `cfg` (no trials); writes the artifact to cfg.output_dir when set.
RunOutcome run_once(const ScenarioConfig& cfg, const std::vector<std::string>& argv, const nlohmann::json& env_settings,
                    const RunHooks& hooks = {});

/// --fail-on-slo: the exit code for a finished run or trials artifact `result` (validity and
/// slo.verdict); `exit_code` unchanged without the flag or when it is already non-zero.
int slo_gate(const ScenarioConfig& cfg, const nlohmann::json& result, int exit_code);
/// The same, for a gate not given by a ScenarioConfig (`llmload merge --fail-on-slo`, llmload-mpi).
int slo_gate(bool fail_on_slo, const nlohmann::json& result, int exit_code);

/// The exit code for a finished run or trials artifact `result` that measured nothing: kExitNothingMeasured
/// (with an error on stderr saying what failed) when no request of the measurement window succeeded (of a
/// trials artifact: in some trial); otherwise `exit_code`. Only a clean finish (`exit_code` 0) is changed.
int nothing_measured_gate(const nlohmann::json& result, int exit_code, bool quiet = false);

/// Runs `cfg` (from build_config): once, or --trials times (trials.hpp); `argv` is the redacted
/// command line and `env_settings` the LLMLOAD_* variables used (both recorded in the artifact).
/// Returns the exit code; throws ConfigError for bad configuration or an unreachable endpoint.
int run_command(const ScenarioConfig& cfg, const std::vector<std::string>& argv, const nlohmann::json& env_settings,
                const RunHooks& hooks = {});

/// Checks --start-at against the system clock `now` before anything else: an error when it has
/// passed by more than kStartLateTolerance (the shards could not start together) or lies more than
/// a week ahead (a typo, or milliseconds given for seconds).
void check_start_at(WallTime start_at, WallTime now);

/// Sleeps until `t` on the system clock (in steps of at most a second, so that a clock step is
/// noticed). Returns at once when `t` has passed; false when SIGINT/SIGTERM ended the wait
/// (stop_signal.hpp).
bool sleep_until_wall(WallTime t);

}  // namespace llmload::app
