// llmload-mpi: `llmload run` with one shard per MPI rank, launched by mpirun (docs/distributed.md).
//
//   mpirun -np N llmload-mpi ARGS...      (ARGS as for `llmload run`; --output DIR is required)
//
// Rank r of size N runs shard r of N. Every rank prepares (probes the server, calibrates, builds
// its part of the schedule); then all meet (a collective that also tells whether any rank failed
// to get ready: then none sends anything), rank 0 broadcasts the start time (--start-at, else one
// second ahead of its system clock) and every rank sleeps until it and runs on its own monotonic
// clock, writing its artifact to DIR/shard-<r>. After the runs the ranks meet again and rank 0
// merges DIR/shard-0 .. DIR/shard-(N-1) into DIR and prints the merged report. That merge reads
// the other ranks' files, so DIR must be on a filesystem every rank shares (NFS, a shared volume);
// otherwise copy the shard directories to one place and run `llmload merge`.
//
// The waits use non-blocking collectives polled with short sleeps, so a rank that finished early
// does not spin on a core that a rank still measuring needs.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "merge.hpp"
#include "run_command.hpp"

namespace {

using namespace llmload;

// How far ahead of rank 0's clock the common start lies when no --start-at is given: enough for
// the broadcast and for every rank to begin its sleep.
constexpr std::chrono::seconds kStartLead{1};

// Completes a non-blocking MPI request, sleeping between tests instead of spinning.
void wait_gently(MPI_Request& req) {
  int done = 0;
  while (true) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// True when every rank passes ok = true. Every rank calls it the same number of times.
bool all_ok(bool ok) {
  int mine = ok ? 1 : 0;
  int all = 0;
  MPI_Request req;
  MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
  wait_gently(req);
  return all == 1;
}

// Every rank's exit code, at rank 0 (empty elsewhere).
std::vector<int> gather_codes(int code, int rank, int size) {
  std::vector<int> codes(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Request req;
  MPI_Igather(&code, 1, MPI_INT, codes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  wait_gently(req);
  return codes;
}

// Rank 0, after every rank ran: merges OUTPUT/shard-0..N-1 into OUTPUT when every rank finished
// (interrupted included), and returns the run's exit code: a failed rank's (the first), or the
// merged run's (130 when a rank was interrupted; else 6 when it measured nothing; else with
// --fail-on-slo 3-5).
int merge_at_rank0(const std::vector<int>& codes, const std::string& output, bool fail_on_slo) {
  std::vector<std::string> failed;
  int first_failure = app::kExitOk;
  bool interrupted = false;
  for (std::size_t r = 0; r < codes.size(); ++r) {
    const int c = codes[r];
    if (c == app::kExitInterrupted) interrupted = true;
    if (c != app::kExitOk && c != app::kExitInterrupted) {
      failed.push_back(fmt::format("{} (exit {})", r, c));
      if (first_failure == app::kExitOk) first_failure = c;
    }
  }
  if (!failed.empty()) {
    fmt::print(stderr, "llmload-mpi: rank{} {} failed (see {} errors above): nothing merged\n",
               failed.size() > 1 ? "s" : "", fmt::join(failed, ", "), failed.size() > 1 ? "their" : "its");
    return first_failure;
  }
  std::vector<std::string> dirs;
  for (std::size_t r = 0; r < codes.size(); ++r) dirs.push_back(fmt::format("{}/shard-{}", output, r));
  const int merged = app::merge_command(dirs, output, true, fail_on_slo && !interrupted);
  if (merged == app::kExitConfig || merged == app::kExitFailure) return merged;
  return interrupted ? app::kExitInterrupted : merged;
}

int run_rank(int argc, char** argv, int rank, int size) {
  // `llmload-mpi run ARGS` is accepted too.
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::string(args[1]) == "run") args.erase(args.begin() + 1);
  const int n_args = static_cast<int>(args.size());

  CLI::App app{"llmload-mpi: `llmload run` on every MPI rank, one shard per rank; rank 0 merges the shards into "
               "--output (which every rank must be able to write and rank 0 to read: a shared filesystem)"};
  app.set_version_flag("--version", std::string("llmload-mpi ") + kVersion);
  app::RunOptions options;
  app::add_run_options(app, options);
  try {
    app.parse(n_args, args.data());
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same arguments: rank 0 speaks for all.
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    return code == 0 ? app::kExitOk : app::kExitConfig;  // every parse error: 2, as in llmload
  }

  int code = app::kExitOk;
  bool synced = false;  // took part in the "ready" collective
  std::string output;
  bool fail_on_slo = false;
  try {
    if (options.options.at("shard-index")->count() > 0 || options.options.at("shard-count")->count() > 0) {
      throw ConfigError("llmload-mpi takes the shard from the MPI rank and size: drop --shard-index and --shard-count "
                        "(and LLMLOAD_SHARD_*), and choose the number of shards with mpirun -np N");
    }
    ScenarioConfig cfg = app::build_config(options, n_args, args.data());
    if (cfg.output_dir.empty()) {
      throw ConfigError("llmload-mpi needs --output DIR: rank r writes DIR/shard-<r> and rank 0 merges them into DIR, "
                        "so DIR must be on a filesystem every rank shares");
    }
    output = cfg.output_dir;
    // --fail-on-slo gates the merged run at rank 0: a shard's own verdict is partial (the sample
    // and minimum checks are the merge's), and a rank exiting 3-5 would stop the merge.
    if (cfg.fail_on_slo && !cfg.slo) {
      throw ConfigError("--fail-on-slo needs an SLO to gate on: add --slo, e.g. --slo ttft:500ms,tpot:50ms");
    }
    fail_on_slo = cfg.fail_on_slo;
    cfg.fail_on_slo = false;
    cfg.shard.index = rank;
    cfg.shard.count = size;
    cfg.shard.made_by = ShardSpec::MadeBy::kMpiRanks;
    cfg.shard.index_given = cfg.shard.count_given = true;
    cfg.output_dir = fmt::format("{}/shard-{}", output, rank);

    app::RunHooks hooks;
    hooks.print_report = false;
    hooks.gate_nothing_measured = false;  // rank 0 judges the merged run
    hooks.ready = [&](std::optional<WallTime> requested) -> std::optional<WallTime> {
      synced = true;
      if (!all_ok(true)) {
        throw ConfigError(fmt::format("rank {}: another rank could not get ready (see its error); no rank sent any "
                                      "load",
                                      rank));
      }
      std::int64_t start_ns = 0;
      if (rank == 0) {
        const WallTime t = requested ? *requested
                                     : std::chrono::time_point_cast<std::chrono::nanoseconds>(
                                           std::chrono::system_clock::now() + kStartLead);
        start_ns = t.time_since_epoch().count();
      }
      MPI_Request req;
      MPI_Ibcast(&start_ns, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &req);
      wait_gently(req);
      return WallTime(std::chrono::nanoseconds(start_ns));
    };
    code = app::run_command(cfg, app::redacted_argv(argc, argv), app::environment_settings(options, n_args, args.data()),
                            hooks);
  } catch (const ConfigError& e) {
    fmt::print(stderr, "llmload-mpi (rank {} of {}): error: {}\n", rank, size, e.what());
    code = app::kExitConfig;
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload-mpi (rank {} of {}): internal error: {}\n", rank, size, e.what());
    code = app::kExitFailure;
  }
  if (!synced) all_ok(false);  // the ranks waiting to start learn that this one failed

  // Every rank has written its artifact (or failed): rank 0 merges and decides the exit code, which
  // it then sends to every rank. So no rank exits before the merge is done (Open MPI aborts the
  // job when a rank exits non-zero), and mpirun's status is the run's whatever rank ends first.
  const std::vector<int> codes = gather_codes(code, rank, size);
  int final_code = code;
  if (rank == 0) {
    // Whatever happens here, rank 0 must reach the broadcast below: the other ranks wait for it.
    try {
      final_code = merge_at_rank0(codes, output, fail_on_slo);
    } catch (const std::exception& e) {
      fmt::print(stderr, "llmload-mpi (rank 0): internal error while merging: {}\n", e.what());
      final_code = app::kExitFailure;
    }
  }
  MPI_Request req;
  MPI_Ibcast(&final_code, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  wait_gently(req);
  return final_code;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = app::kExitFailure;
  try {
    code = run_rank(argc, argv, rank, size);
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload-mpi (rank {}): internal error: {}\n", rank, e.what());
  }
  MPI_Finalize();
  return code;
}
