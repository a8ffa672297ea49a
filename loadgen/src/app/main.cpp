// llmload: the load generator's command line.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "compare_command.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "merge.hpp"
#include "parse_error.hpp"
#include "stop_signal.hpp"
#include "report_command.hpp"
#include "run_command.hpp"
#include "scaling_command.hpp"
#include "score_command.hpp"
#include "sweep_command.hpp"
#include "workers.hpp"

int main(int argc, char** argv) {
  using namespace llmload;
  CLI::App app{"llmload: a load generator for OpenAI-compatible LLM inference servers (vLLM, SGLang, ...)"};
  app.set_version_flag("--version", std::string("llmload ") + kVersion);
  app.failure_message(app::parse_error_message);  // before the subcommands: they inherit it
  app.require_subcommand(1);
  auto* run = app.add_subcommand("run", "run one scenario against an endpoint and report TTFT, TPOT, ITL, E2E and goodput");
  app::RunOptions options;
  app::add_run_options(*run, options);
  std::string workers_arg;  // --workers N|auto (app/workers.hpp)
  auto* workers_opt = run->add_option("--workers", workers_arg,
                  "split the run across N client processes on this machine (auto: one per CPU core this process may use; default 1): "
                  "each issues its shard of the same schedule, all start together, and their artifacts are merged "
                  "into --output as one run (each worker's own in OUTPUT/workers/worker-<i>); use it when one "
                  "process cannot offer the load (schedule lag, a client core at 100%). Not with --shard-*, --trials "
                  "or single-stream. docs/distributed.md")
      ->envname("LLMLOAD_WORKERS");

  auto* merge = app.add_subcommand(
      "merge", "merge the artifacts of a sharded run (each shard's --output directory) into one and report it");
  std::vector<std::string> merge_dirs;
  std::string merge_output;
  merge->add_option("dirs", merge_dirs, "the shard directories (result.json, requests.jsonl, latency.hlog), one per shard")
      ->required();
  merge->add_option("--output", merge_output, "directory for the merged result.json, requests.jsonl, latency.hlog and "
                                              "report (default: print the report only)");
  bool merge_overwrite = false;
  merge->add_flag("--overwrite", merge_overwrite,
                  "write into an --output that already holds a run's result.json, requests.jsonl or latency.hlog");
  bool merge_fail_on_slo = false;
  merge->add_flag("--fail-on-slo", merge_fail_on_slo,
                  "exit 3 when the merged run's SLO verdict is FAIL, 4 when INCONCLUSIVE, 5 when the merged run is "
                  "INVALID (the shards' --slo; everything is written first)");
  merge->footer(R"(The shards must be the complete set of one run (shards 0..N-1 of the same scenario, seeds, endpoint,
model, workload and --start-at); anything else is an error naming the field. Histograms are added
exactly, counts recomputed from every shard's records, and a per-shard table shows each shard's
numbers, flagging stragglers (late start, late finish, a client that fell behind).
      llmload merge results/shard-0 results/shard-1 results/shard-2 --output results
Exit codes: 0 merged, 1 failure writing results, 2 artifacts that cannot be merged, 3-5 with
--fail-on-slo (as for run), 6 the merged run measured nothing (no request succeeded).
See docs/distributed.md.)");

  auto* report = app.add_subcommand(
      "report", "write report.html (charts, works offline), summary.md and summary.csv for a run's or a sweep's directory");
  app::ReportOptions report_options;
  app::add_report_options(*report, report_options);

  auto* compare = app.add_subcommand(
      "compare",
      "compare two runs, or two sweeps: metric deltas with 95% intervals, significance above a minimum effect, "
      "each side's validity and SLO verdict, every condition that differs");
  app::CompareCommandOptions compare_options;
  compare->add_option("A", compare_options.a,
                      "the baseline: a run or trials directory (result.json, latency.hlog) or its result.json, or a "
                      "sweep directory (sweep.json)")
      ->required();
  compare->add_option("B", compare_options.b, "the candidate compared with it: the same kind as A")->required();
  compare->add_option("--json", compare_options.json_out, "also write the comparison as JSON to this file");
  compare->add_option("--min-effect", compare_options.min_effect,
                      "the smallest change that can be significant, as a percentage of A (5 or 5%); 0: only the "
                      "measurement's resolution")
      ->default_str("5%");
  compare->footer(R"HELP(A difference is significant when the 95% test shows it AND it is at least the threshold:
max(--min-effect of A, the measurement's resolution: the histogram bucket of a percentile, one
request's share of a throughput). The test: Welch's t-test when both sides have >= 2 trials
(--trials), else the two 95% intervals must not overlap (order-statistic intervals of the
percentiles from latency.hlog, the Poisson interval of the completion count for throughputs).
"no (< thr)" marks a difference the test sees but that is below the threshold.
Each side's validity (VALID, or INVALID with the reasons) and SLO verdict are shown. Conditions
that differ are listed; a material one (endpoint, model, scenario, workload, tool version,
machine) labels the result a comparison across different conditions.
Two sweeps (directories with sweep.json) are compared point by point at each offered load both
have (throughput, goodput, p50/p99 TTFT, TPOT, E2E, each point's verdicts), and capacity against
capacity (both brackets [highest pass, lowest fail), the ratio B / A, whether the brackets
separate). A sweep and a run are not compared.
      llmload compare results/baseline results/candidate --json delta.json
      llmload compare sweep-a sweep-b --min-effect 2%
Exit codes: 0 compared (whatever the differences), 1 the JSON could not be written, 2 an artifact
cannot be read, a sweep against a run, or a bad --min-effect.
See docs/statistics.md ("Comparing two runs").)HELP");

  auto* sweep = app.add_subcommand(
      "sweep", "run a scenario at several loads (concurrency or rate), or search the highest load meeting a p99 SLO");
  app::SweepOptions sweep_options;
  app::add_sweep_options(*sweep, sweep_options);
  // --workers is run's: given to a sweep it gets an error that says so (not CLI11's "arguments
  // were not expected"). Hidden from the sweep's --help.
  std::string sweep_workers_arg;
  sweep->add_option("--workers", sweep_workers_arg)->group("");

  auto* scaling = app.add_subcommand(
      "scaling", "speedup and efficiency across K replicas or devices at the same SLO, from artifacts at K = 1, 2, 4, ...");
  app::ScalingOptions scaling_options;
  app::add_scaling_options(*scaling, scaling_options);

  auto* score = app.add_subcommand(
      "score", "re-grade a run saved with --save-outputs (e.g. with another --grader): accuracy with its 95% interval");
  app::ScoreOptions score_options;
  app::add_score_options(*score, score_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints the help, or the error with the flag's name. Every parse error exits 2 (a
    // bad configuration), whatever CLI11's own code for its kind (106, 109, 114, ...).
    return app.exit(e) == 0 ? app::kExitOk : app::kExitConfig;
  }

  try {
    if (merge->parsed()) {
      // A signal during the merge is held until its files are written whole, then exits 130.
      app::install_stop_handler();
      app::MergeExtras extras;
      extras.keep_existing_results = !merge_overwrite;
      const int code = app::merge_command(merge_dirs, merge_output, true, merge_fail_on_slo, extras);
      if (app::stop_signal() != 0) {
        std::fprintf(stderr, "llmload merge: signal received: the merge was completed and written first\n");
        return app::kExitInterrupted;
      }
      return code;
    }
    if (report->parsed()) return app::report_command(report_options.dir, report_options);
    if (compare->parsed()) return app::compare_command(compare_options);
    if (scaling->parsed()) return app::scaling_command(scaling_options);
    if (score->parsed()) return app::score_command(score_options);
    if (sweep->parsed()) {
      if (!sweep_workers_arg.empty()) {
        throw ConfigError("--workers is an option of `llmload run`, not of sweep: a sweep runs each load in one client "
                          "process. Run the loads you need with `llmload run --workers N` (one command per load), or "
                          "drop --workers");
      }
      return app::sweep_command(sweep_options, argc, argv);
    }
    const ScenarioConfig cfg = app::build_config(options, argc, argv);
    if (const auto role = app::worker_role_from_env()) {  // a worker of `llmload run --workers N`
      return app::run_as_worker(*role, cfg, app::redacted_argv(argc, argv), app::environment_settings(options, argc, argv));
    }
    const std::string workers_origin = app::origin_of(argc, argv, "workers");
    if (workers_opt->count() > 0 && workers_arg.empty()) {
      throw ConfigError(workers_origin + " was given an empty value: give a number of processes or auto, or leave "
                                         "the flag out for one");
    }
    const int n_workers = app::parse_workers(workers_arg, workers_origin);
    if (workers_arg == "auto" && n_workers == 1 && !cfg.quiet) {
      fmt::print(stderr, "llmload: note: --workers auto: this process may use one CPU core, so the run is one process\n");
    }
    if (const int n = n_workers; n > 1) {
      return app::run_workers(n, workers_arg, cfg, std::vector<std::string>(argv, argv + argc),
                              app::redacted_argv(argc, argv), app::environment_settings(options, argc, argv));
    }
    return app::run_command(cfg, app::redacted_argv(argc, argv), app::environment_settings(options, argc, argv));
  } catch (const ConfigError& e) {
    fmt::print(stderr, "llmload: error: {}\n", e.what());
    return app::kExitConfig;
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload: internal error: {}\n", e.what());
    return app::kExitFailure;
  }
}
