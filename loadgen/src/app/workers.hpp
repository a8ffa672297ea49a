#pragma once
// `llmload run --workers N|auto`: one run split across N client processes on this machine
// (docs/distributed.md, "One machine, every core"). The parent validates the configuration, spawns
// N workers (this binary, the same arguments), each shard i of N of the run (shard_plan.hpp),
// starts them together once all are ready, forwards SIGINT/SIGTERM, shows one progress line,
// and merges their artifacts (DIR/workers/worker-<i>) into DIR as `llmload merge` would, with
// the console report of the merged run and the exit code a single run would give.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/scenario.hpp"
#include "worker_process.hpp"

namespace llmload::app {

/// How long after the last worker is ready the common start lies (when --start-at is not given):
/// enough for the start to reach every worker and each to begin its sleep.
inline constexpr std::chrono::milliseconds kWorkersStartLead{500};

/// --workers: "" or "1" -> 1, "auto" -> the CPU cores this process may run on (its
/// affinity: taskset, cpusets), else an integer 1..1024. Throws
/// ConfigError naming `origin`.
int parse_workers(const std::string& text, const std::string& origin);

/// Refuses (ConfigError, with the fix) what --workers `n` cannot run: shard flags given by the
/// user, --trials, --fail-on-slo without --slo, and every check a shard of n would fail before
/// contacting the server (a scenario the shard plan cannot split, --min-duration, ...).
void check_workers_config(const ScenarioConfig& cfg, int n);

/// The parent: runs `cfg` as `n` worker processes and merges them. `raw_argv` is this process's
/// own command line (the workers get it as is), `argv` the redacted one. Returns the exit code.
int run_workers(int n, const std::string& requested, const ScenarioConfig& cfg, const std::vector<std::string>& raw_argv,
                const std::vector<std::string>& argv, const nlohmann::json& env_settings);

/// A worker: runs its shard of `cfg` quietly into role.output_dir. Returns the exit code.
int run_as_worker(const WorkerRole& role, ScenarioConfig cfg, const std::vector<std::string>& argv,
                  const nlohmann::json& env_settings);

}  // namespace llmload::app
