#pragma once
// `llmload sweep`: the run's scenario at several offered loads (a list or range of concurrency or
// request rate), each point a full run with its trials, in one artifact (sweep.json) and report;
// with --find-capacity, the highest load that meets the p99 SLO (analysis/capacity.hpp).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli.hpp"

namespace llmload::app {

/// The parsed options of `sweep`: every `run` option plus the sweep's own. CLI11 keeps pointers
/// into it: it must stay where it was created.
struct SweepOptions {
  RunOptions run;
  bool find_capacity = false;
  std::string capacity_load = "rate";  // rate | concurrency: what --find-capacity varies
  double capacity_start = 0;           // 0: 1
  double capacity_max = 0;             // 0: 10,000 req/s or 4,096 concurrency
  double capacity_tolerance = 0.05;
  int max_points = 20;
  int trials_near_boundary = 3;
  double capacity_min = 0;                    // 0: start / 64 (the downward ramp's floor)
  std::string capacity_min_window = "20s";    // each probe's measured window: at least this ...
  double capacity_window_e2e = 10;            // ... and this many times the p99 E2E at the load
  int capacity_margin = 2;                    // probes big enough to PASS with this many exceedances
  int capacity_max_extensions = 2;            // re-probes of an INCONCLUSIVE load, each twice as big
};

/// "1,2,4,8" (a list), "1..64" (doubling from 1 up to 64) or "10..50:10" (10 to 50 in steps of
/// 10). Loads must be > 0 (integers for concurrency); returned ascending without duplicates.
/// Throws ConfigError naming `what` and the fix.
std::vector<double> parse_load_list(const std::string& text, bool integers, const std::string& what);

void add_sweep_options(CLI::App& sub, SweepOptions& o);

/// Runs the sweep; returns the exit code (see the subcommand's footer and docs/artifact.md).
int sweep_command(const SweepOptions& o, int argc, char** argv);

}  // namespace llmload::app
