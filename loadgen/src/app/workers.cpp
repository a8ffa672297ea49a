// `llmload run --workers N`: see workers.hpp.
#include "workers.hpp"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "llmload/common/process_limits.hpp"
#include "llmload/common/temp_file.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "merge.hpp"
#include "output_dir.hpp"
#include "settings.hpp"
#include "worker_progress.hpp"

namespace llmload::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kMaxWorkers = 1024;
constexpr auto kPollStep = std::chrono::milliseconds(20);
constexpr auto kTick = std::chrono::milliseconds(500);
// Preparing (probe, calibration, schedule) longer than this is taken for a hung worker.
constexpr auto kReadyLimit = std::chrono::minutes(30);

// The parent's signals: counted, so that each one is forwarded once (the first makes the workers
// drain, a second aborts them, as for one process).
volatile std::sig_atomic_t g_signals = 0;
volatile std::sig_atomic_t g_last_signal = 0;
extern "C" void count_signal(int sig) {
  g_last_signal = sig;
  g_signals = g_signals + 1;
}

void install_parent_handler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = count_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

using Workers = std::vector<std::unique_ptr<WorkerProcess>>;

// Forwards the signals received since the last call to every worker still running.
void forward_signals(Workers& workers, int& forwarded, bool quiet) {
  while (forwarded < g_signals) {
    const int sig = g_last_signal;
    for (auto& w : workers) w->signal(sig);
    ++forwarded;
    if (quiet) continue;
    if (forwarded == 1) {
      fmt::print(stderr, "\nllmload: {} received: passed on to the {} workers; each stops releasing requests, drains "
                         "what is in flight and writes what it measured (again to stop at once)\n",
                 signal_name(sig), workers.size());
    } else if (forwarded == 2) {
      fmt::print(stderr, "llmload: {} received again: the workers stop at once\n", signal_name(sig));
    }
  }
}

bool all_exited(Workers& workers) {
  bool all = true;
  for (auto& w : workers) all = w->reap() && all;
  return all;
}

enum class ReadyState { kAllReady, kWorkerExited, kSignaled, kTimedOut };

// Waits until every worker is ready, one exits (failed to prepare), or a signal arrives.
ReadyState wait_ready(Workers& workers, int& forwarded, bool quiet) {
  const auto until = std::chrono::steady_clock::now() + kReadyLimit;
  while (std::chrono::steady_clock::now() < until) {
    if (g_signals > 0) {
      forward_signals(workers, forwarded, quiet);
      return ReadyState::kSignaled;
    }
    bool all = true;
    for (auto& w : workers) {
      if (w->reap()) return ReadyState::kWorkerExited;
      all = w->poll_ready() && all;
    }
    if (all) return ReadyState::kAllReady;
    std::this_thread::sleep_for(kPollStep);
  }
  return ReadyState::kTimedOut;
}

// The workers are quiet, but print their warnings to their logs, as any run does: each
// different line, from the logs' warning lines not shown before, is shown once.
std::vector<std::string> log_warnings(const WorkerProcess& w) {
  std::vector<std::string> lines;
  std::ifstream in(w.log_path());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(kWarningLinePrefix, 0) == 0) lines.push_back(line);
  }
  return lines;
}

void show_warnings(const std::vector<std::string>& lines, std::set<std::string>& shown) {
  for (const auto& l : lines) {
    if (shown.insert(l).second) fmt::print(stderr, "{}\n", l);
  }
}

// Waits for every worker to exit (each bounds its own run: --duration, --num-requests,
// --max-duration, --drain-timeout), forwarding signals and drawing the progress line.
void wait_all(Workers& workers, int& forwarded, WorkerProgress& progress, bool quiet) {
  auto next_tick = std::chrono::steady_clock::now();
  while (!all_exited(workers)) {
    forward_signals(workers, forwarded, quiet);
    if (std::chrono::steady_clock::now() >= next_tick) {
      progress.tick();
      next_tick += kTick;
    }
    std::this_thread::sleep_for(kPollStep);
  }
  progress.finish();
}

std::string worker_dir(const fs::path& root, int i) { return (root / "workers" / fmt::format("worker-{}", i)).string(); }

bool wrote_result(const fs::path& root, int i) {
  std::error_code ec;
  return fs::exists(fs::path(worker_dir(root, i)) / "result.json", ec);
}

// Says which workers failed, with the tail of each one's stderr; returns the first failure's code
// (0 when none failed). Interrupted workers (130) and those stopped by the parent are not failures.
int report_failures(const Workers& workers, int n, bool signaled) {
  int first = kExitOk;
  std::string first_tail;
  for (const auto& w : workers) {
    const int c = w->exit_code().value_or(kExitFailure);
    if (c == kExitOk || c == kExitInterrupted) continue;
    if (signaled && (c == 128 + SIGTERM || c == 128 + SIGINT)) continue;
    const std::string how = c > 128 ? fmt::format("killed by signal {}", c - 128) : fmt::format("exit {}", c);
    const std::string tail = log_tail(w->log_path());
    if (first != kExitOk && c == first && tail == first_tail) {
      fmt::print(stderr, "llmload: error: worker {} of {} failed the same way ({})\n", w->index(), n, how);
      continue;
    }
    if (first == kExitOk) {
      first = c;
      first_tail = tail;
    }
    fmt::print(stderr, "llmload: error: worker {} of {} failed ({}){}\n{}", w->index(), n, how,
               tail.empty() ? "; it printed nothing" : "; its last output:", tail);
  }
  return first;
}

// A run refused or stopped before its load leaves nothing behind (as a single run): the worker
// logs go, and DIR when this run created it.
void remove_if_unused(const fs::path& root, int n, bool created_root) {
  std::error_code ec;
  for (int i = 0; i < n; ++i) {
    if (fs::exists(fs::path(worker_dir(root, i)) / "requests.jsonl", ec) || wrote_result(root, i)) return;
  }
  fs::remove_all(root / "workers", ec);
  if (created_root && fs::is_empty(root, ec)) fs::remove(root, ec);
}

WorkerProgressOptions progress_options(const ScenarioConfig& cfg, int n) {
  WorkerProgressOptions p;
  p.workers = n;
  const char* term = std::getenv("TERM");
  p.line = !cfg.quiet && isatty(STDERR_FILENO) == 1 && term != nullptr && std::string_view(term) != "dumb";
  if (!cfg.quiet && !p.line) p.log_interval = kProgressLogInterval;
  if (cfg.num_requests) p.planned_requests = *cfg.num_requests + cfg.warmup.requests;
  if (cfg.duration) p.planned_duration_s = std::chrono::duration<double>(*cfg.duration + cfg.warmup.duration).count();
  return p;
}

// The merged run into DIR, and the exit code (mpi_main's rules: a failed worker's code first, then
// 130 when interrupted, then the merged run's: 6 nothing measured, 3-5 with --fail-on-slo).
int merge_workers(const ScenarioConfig& cfg, const fs::path& root, int n, const std::string& requested,
                  int failure, bool interrupted) {
  for (int i = 0; i < n; ++i) {
    if (!wrote_result(root, i)) {
      if (failure != kExitOk) {
        fmt::print(stderr, "llmload: nothing merged: worker {} wrote no result; what the others measured is in {}/"
                           "workers/worker-<i> (`llmload report DIR` reads each)\n", i, root.string());
        return failure;
      }
      if (!cfg.quiet) {
        fmt::print(stderr, "llmload: {} received before the load started: stopping; nothing was measured\n",
                   signal_name(g_last_signal == 0 ? SIGINT : static_cast<int>(g_last_signal)));
      }
      return kExitInterrupted;
    }
  }
  std::vector<std::string> dirs;
  for (int i = 0; i < n; ++i) dirs.push_back(worker_dir(root, i));
  MergeExtras extras;
  extras.notes = false;
  extras.amend = [&](json& r) {
    if (!r.contains("conditions") || !r["conditions"].is_object()) return;
    r["conditions"]["workers"] = n;
    r["conditions"]["workers_requested"] = requested.empty() ? std::to_string(n) : requested;
    r["conditions"]["worker_dirs"] = fmt::format("workers/worker-0 .. workers/worker-{}", n - 1);
  };
  const int merged = merge_command(dirs, root.string(), true, cfg.fail_on_slo && !interrupted && failure == kExitOk,
                                   extras);
  if (!cfg.quiet && merged != kExitConfig && merged != kExitFailure) {
    fmt::print(stderr, "llmload: results of {} workers merged into {}/{{result.json,requests.jsonl,latency.hlog,"
                       "report.html,summary.md,summary.csv}}; each worker's own in {}/workers\n",
               n, root.string(), root.string());
  }
  if (!cfg.vllm_result_file.empty() && fs::exists(root / "result.json")) {
    std::error_code ec;
    fs::copy_file(root / "result.json", cfg.vllm_result_file, fs::copy_options::overwrite_existing, ec);
    if (ec) fmt::print(stderr, "llmload: error: writing '{}' failed: {}\n", cfg.vllm_result_file, ec.message());
  }
  if (failure != kExitOk) return failure;
  if (merged == kExitConfig || merged == kExitFailure) return merged;
  return interrupted ? kExitInterrupted : merged;
}

}  // namespace

int parse_workers(const std::string& text, const std::string& origin) {
  if (text.empty()) return 1;
  if (text == "auto") return static_cast<int>(std::clamp<long>(usable_cores(), 1, kMaxWorkers));
  int n = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || n > kMaxWorkers) {
      n = -1;
      break;
    }
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > kMaxWorkers) {
    throw ConfigError(fmt::format("bad {} '{}': give the number of client processes (1 to {}), or auto for one per "
                                  "CPU core",
                                  origin, text, kMaxWorkers));
  }
  return n;
}

void check_workers_config(const ScenarioConfig& cfg_in, int n) {
  if (cfg_in.shard.count_given || cfg_in.shard.index_given) {
    throw ConfigError(fmt::format("--workers {} makes the shards itself (one per worker process): drop --shard-count/"
                                  "--shard-index (and LLMLOAD_SHARD_*). To split a run over several machines, run one "
                                  "shard per machine and `llmload merge` them (docs/distributed.md)",
                                  n));
  }
  if (cfg_in.trials > 1) {
    throw ConfigError("--workers cannot be combined with --trials yet: run each trial as its own `llmload run "
                      "--workers N` (with its own --seed), or drop --workers");
  }
  if (cfg_in.fail_on_slo && !cfg_in.slo) {
    throw ConfigError("--fail-on-slo needs an SLO to gate on: add --slo, e.g. --slo ttft:500ms,tpot:50ms");
  }
  ScenarioConfig cfg = cfg_in;
  cfg.endpoint = parse_backend(cfg.backend).api;
  cfg.fail_on_slo = false;  // gated on the merged run
  for (int i = 0; i < n; ++i) {
    cfg.shard.index = i;
    cfg.shard.count = n;
    cfg.shard.made_by = ShardSpec::MadeBy::kWorkers;
    try {
      check_before_contact(cfg);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("--workers {} splits the run into {} shards, one per process: {}", n, n, e.what()));
    }
  }
}

int run_as_worker(const WorkerRole& role, ScenarioConfig cfg, const std::vector<std::string>& argv,
                  const json& env_settings) {
  cfg.shard.index = role.index;
  cfg.shard.count = role.count;
  cfg.shard.made_by = ShardSpec::MadeBy::kWorkers;
  cfg.shard.index_given = cfg.shard.count_given = true;
  cfg.output_dir = role.output_dir;
  cfg.save_result = false;
  cfg.vllm_result_file.clear();
  cfg.quiet = true;
  cfg.fail_on_slo = false;  // the parent gates the merged run
  return run_command(cfg, argv, env_settings, worker_hooks(role));
}

int run_workers(int n, const std::string& requested, const ScenarioConfig& cfg_in,
                const std::vector<std::string>& raw_argv, const std::vector<std::string>& argv,
                const json& env_settings) {
  (void)argv;
  (void)env_settings;  // the workers record their own (the same command line and environment)
  check_workers_config(cfg_in, n);
  ScenarioConfig cfg = cfg_in;
  resolve_output_dir(cfg, std::time(nullptr));
  check_output_dir_unused(cfg.output_dir, cfg.overwrite);
  const fs::path root = fs::absolute(cfg.output_dir);
  std::error_code ec;
  const bool created_root = !fs::exists(root, ec);
  if (cfg.overwrite) remove_earlier_workers(root.string());
  fs::create_directories(root / "workers", ec);
  if (ec) throw ConfigError(fmt::format("cannot create '{}': {}", (root / "workers").string(), ec.message()));
  install_parent_handler();
  // The workers are quiet; the merge of their records keeps them in temporary files too.
  if (const auto w = temp_dir_warning()) fmt::print(stderr, "llmload: warning: {}\n", *w);
  if (!cfg.quiet) {
    fmt::print(stderr, "llmload {}: {} against {} split across {} worker processes (shard i of {} each); preparing\n",
               kVersion, scenario_summary(cfg), cfg.base_url, n, n);
  }
  Workers workers;
  try {
    for (int i = 0; i < n; ++i) {
      workers.push_back(std::make_unique<WorkerProcess>(i, n, worker_dir(root, i),
                                                        (root / "workers" / fmt::format("worker-{}.log", i)).string(),
                                                        raw_argv));
    }
  } catch (const std::exception& e) {
    for (auto& w : workers) w->signal(SIGTERM);
    fmt::print(stderr, "llmload: error: starting worker {} of {} failed: {}\n", workers.size(), n, e.what());
    return kExitFailure;  // the destructors kill and reap the others
  }
  int forwarded = 0;
  std::set<std::string> warnings_shown;
  const ReadyState ready = wait_ready(workers, forwarded, cfg.quiet);
  bool stopped_by_parent = false;
  WorkerProgress progress(
      [&] {
        std::vector<std::string> j;
        for (int i = 0; i < n; ++i) j.push_back(worker_dir(root, i) + "/requests.jsonl");
        return j;
      }(),
      progress_options(cfg, n));
  if (ready == ReadyState::kAllReady) {
    const WallTime t = cfg.shard.start_at ? *cfg.shard.start_at
                                          : std::chrono::time_point_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now() + kWorkersStartLead);
    // What the setup warns of (the server's model list) is the same in each: worker 0's.
    show_warnings(log_warnings(*workers.front()), warnings_shown);
    for (auto& w : workers) w->send_start(t);
    if (!cfg.quiet) fmt::print(stderr, "llmload: {} workers ready; common start at {}\n", n, format_rfc3339(t));
    // The workers' common start on this process's steady clock (their records' times count from it).
    progress.start(std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(t - std::chrono::system_clock::now()));
  } else if (ready != ReadyState::kSignaled) {
    // One worker could not get ready (or none in time): the others never start their load.
    if (ready == ReadyState::kTimedOut) fmt::print(stderr, "llmload: error: the workers were not ready in 30 min\n");
    stopped_by_parent = true;
    for (auto& w : workers) w->signal(SIGTERM);
  }
  wait_all(workers, forwarded, progress, cfg.quiet);
  for (const auto& wk : workers) show_warnings(log_warnings(*wk), warnings_shown);  // e.g. the records in a tmpfs
  const int failure = report_failures(workers, n, stopped_by_parent || g_signals > 0);
  const bool interrupted = g_signals > 0 || std::any_of(workers.begin(), workers.end(), [](const auto& w) {
                             return w->exit_code() == kExitInterrupted;
                           });
  // Stopped before the load (a worker failed to prepare): nothing to merge.
  const int code = stopped_by_parent ? (failure != kExitOk ? failure : kExitFailure)
                                     : merge_workers(cfg, root, n, requested, failure, interrupted);
  remove_if_unused(root, n, created_root);
  return code;
}

}  // namespace llmload::app
