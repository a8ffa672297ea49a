// `llmload run --workers N` with the real binaries against one llmload-server on loopback (fixed
// latency model): the merged artifact holds exactly the run's requests once each, its histograms
// count them, its conditions say how many workers; SIGINT to the parent is passed on and the run
// ends like an interrupted single run (130, the artifact written); bad combinations exit 2; `auto` is
// one worker per core the command may run on.
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <sched.h>

#include <csignal>
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::testing::workers_test {

using nlohmann::json;
using namespace std::chrono_literals;

class Workers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerHandle(start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "1ms"}));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::vector<std::string> args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"--base-url", server_->base_url, "--input-tokens", "16", "--output-tokens", "8",
                                  "--seed", "5"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  static ServerHandle* server_;
};
ServerHandle* Workers::server_ = nullptr;

std::vector<json> read_lines(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

TEST_F(Workers, TwoWorkersMergeIntoOneRunOfExactlyTheRequests) {
  TempDir dir;
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "8", "--num-requests", "200",
                                          "--workers", "2"}));
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  // The merged report on stdout, as a single run prints its own.
  EXPECT_NE(run.proc.out.find("merged 2 shards"), std::string::npos) << run.proc.out;
  const json& r = run.result;
  ASSERT_TRUE(r.is_object()) << run.proc.err;
  EXPECT_EQ(r["completed"], 200);
  EXPECT_EQ(r["failed"], 0);
  EXPECT_EQ(r["latency"]["ttft"]["count"], 200);
  EXPECT_EQ(r["latency"]["e2e"]["count"], 200);
  EXPECT_EQ(r["latency"]["tpot"]["count"], 200);
  EXPECT_EQ(r["latency"]["itl"]["count"], 200 * 7);  // 7 gaps between 8 tokens
  EXPECT_EQ(r["total_output_tokens"], 200 * 8);
  EXPECT_EQ(r["conditions"]["workers"], 2);
  EXPECT_EQ(r["conditions"]["shard"]["count"], 2);
  EXPECT_EQ(r["conditions"]["shard"]["merged"], true);
  ASSERT_EQ(run.records.size(), 200u);
  std::set<std::int64_t> global;
  for (const auto& rec : run.records) {
    global.insert(rec["global_index"].get<std::int64_t>());
    // The workload item is the whole run's request's, as in a single process (it was each
    // worker's own count, every item twice: a --reference paired the wrong answers).
    EXPECT_EQ(rec["item"], rec["global_index"]) << rec.dump();
  }
  EXPECT_EQ(global.size(), 200u);
  // The files a single run writes, and each worker's own artifact beside them.
  for (const char* f : {"latency.hlog", "report.html", "summary.md", "summary.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.file(f))) << f;
  }
  std::size_t per_worker = 0;
  for (int i = 0; i < 2; ++i) {
    const auto lines = read_lines(dir.file("workers/worker-" + std::to_string(i) + "/requests.jsonl"));
    EXPECT_EQ(lines.size(), 100u) << i;  // concurrency and requests split evenly
    per_worker += lines.size();
  }
  EXPECT_EQ(per_worker, 200u);
}

TEST_F(Workers, OneWorkerIsTheSingleProcessRun) {
  TempDir dir;
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "20",
                                          "--workers", "1"}));
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  EXPECT_FALSE(run.result["conditions"].contains("workers"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("workers")));
  EXPECT_EQ(run.records.size(), 20u);
}

TEST_F(Workers, SigintIsPassedOnAndTheMergedRunIsWritten) {
  TempDir dir;
  Subprocess p({binary_path("llmload"), "run", "--base-url", server_->base_url, "--scenario", "concurrency",
                "--concurrency", "4", "--duration", "60s", "--output-tokens", "8", "--workers", "2", "--output",
                dir.path()},
               {});
  // Wait (bounded) until both workers have measured something, then interrupt the parent only.
  const auto until = std::chrono::steady_clock::now() + 30s;
  auto measured = [&] {
    for (int i = 0; i < 2; ++i) {
      std::error_code ec;
      const auto f = dir.file("workers/worker-" + std::to_string(i) + "/requests.jsonl");
      if (!std::filesystem::exists(f, ec) || std::filesystem::file_size(f, ec) == 0) return false;
    }
    return true;
  };
  while (!measured() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(measured()) << "the workers measured nothing in 30 s";
  p.signal(SIGINT);
  const int code = p.wait(60s);
  EXPECT_EQ(code, 130) << p.err();
  EXPECT_NE(p.err().find("passed on to the 2 workers"), std::string::npos) << p.err();
  const json r = json::parse(read_file(dir.file("result.json")));
  EXPECT_EQ(r["interrupted"], true);
  EXPECT_EQ(r["conditions"]["workers"], 2);
  EXPECT_GT(r["completed"].get<std::int64_t>(), 0);
  EXPECT_EQ(read_lines(dir.file("requests.jsonl")).size(),
            static_cast<std::size_t>(r["completed"].get<std::int64_t>() + r["failed"].get<std::int64_t>()));
  // Said as a single run says it, and the client's CPU kept (the busiest worker's share).
  EXPECT_NE(p.out().find("RUN INTERRUPTED"), std::string::npos) << p.out();
  ASSERT_TRUE(r["client_cpu"].is_object()) << r.dump(1);
  EXPECT_GT(r["client_cpu"]["core_share"].get<double>(), 0.0);
  EXPECT_GE(r["client_cpu"]["cores_used"].get<double>(), r["client_cpu"]["core_share"].get<double>() - 1e-9);
  EXPECT_TRUE(r["shards"][0]["client_core_share"].is_number());
}

// --max-duration cutting a worker's requests stops the merged run early, said as for one process
// (it was null in the merged result and missing from its report).
TEST_F(Workers, AMaxDurationCutIsTheMergedRunsEarlyStop) {
  TempDir dir;
  // Every request's first byte 5 s late (the mock's fault header): the bound cuts them all.
  const auto run = run_llmload(dir, args({"--scenario", "server", "--request-rate", "20", "--duration", "2s",
                                          "--max-duration", "3s", "--header", "X-Llmload-Fault: slow-first-byte=5s",
                                          "--workers", "2"}));
  ASSERT_TRUE(run.result.is_object()) << run.proc.err;
  ASSERT_TRUE(run.result["stopped_early"].is_object()) << run.result.dump(1);
  EXPECT_NE(run.result["stopped_early"]["reason"].get<std::string>().find("--max-duration"), std::string::npos);
  EXPECT_NE(run.proc.out.find("Stopped early: shard "), std::string::npos) << run.proc.out;
}

/// Pins the calling thread (whose affinity a forked child inherits) to the first `n` CPUs it may
/// use now, for the object's lifetime. `pinned()` says how many it got (fewer where fewer exist).
class PinnedCpus {
 public:
  explicit PinnedCpus(int n) {
    CPU_ZERO(&old_);
    if (::sched_getaffinity(0, sizeof(old_), &old_) != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu = 0; cpu < CPU_SETSIZE && pinned_ < n; ++cpu) {
      if (CPU_ISSET(cpu, &old_)) {
        CPU_SET(cpu, &set);
        ++pinned_;
      }
    }
    if (::sched_setaffinity(0, sizeof(set), &set) != 0) pinned_ = 0;
  }
  ~PinnedCpus() { ::sched_setaffinity(0, sizeof(old_), &old_); }
  PinnedCpus(const PinnedCpus&) = delete;
  PinnedCpus& operator=(const PinnedCpus&) = delete;
  int pinned() const { return pinned_; }

 private:
  cpu_set_t old_;
  int pinned_ = 0;
};

// `auto` counts the cores the command may run on (as nproc does), not the machine's: started with
// `taskset -c 0`, it is the single-process run; with two cores, two workers.
TEST_F(Workers, AutoIsOnePerCoreTheCommandMayRunOn) {
  {
    PinnedCpus one(1);
    ASSERT_EQ(one.pinned(), 1);
    TempDir dir;
    const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "4", "--num-requests", "40",
                                            "--workers", "auto"}));
    ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
    EXPECT_FALSE(run.result["conditions"].contains("workers")) << run.result["conditions"].dump();
    EXPECT_FALSE(std::filesystem::exists(dir.file("workers")));
    EXPECT_EQ(run.records.size(), 40u);
  }
  PinnedCpus two(2);
  if (two.pinned() < 2) GTEST_SKIP() << "one CPU only";
  TempDir dir;
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "4", "--num-requests", "40",
                                          "--workers", "auto"}));
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  EXPECT_EQ(run.result["conditions"]["workers"], 2);
  EXPECT_EQ(run.result["conditions"]["workers_requested"], "auto");
  EXPECT_EQ(run.records.size(), 40u);
}

TEST_F(Workers, CombinationsThatCannotWorkExit2BeforeAnythingStarts) {
  const std::vector<std::vector<std::string>> bad = {
      {"--workers", "2", "--shard-count", "2", "--shard-index", "0", "--concurrency", "4", "--num-requests", "8"},
      {"--workers", "2", "--trials", "2", "--concurrency", "4", "--num-requests", "8"},
      {"--workers", "2", "--scenario", "single-stream", "--num-requests", "8"},
      {"--workers", "many", "--concurrency", "4", "--num-requests", "8"},
      {"--workers", "", "--concurrency", "4", "--num-requests", "8"},
      {"--workers", "2", "--scenario", "concurrency", "--concurrency", "4", "--min-requests", "8"},
  };
  for (const auto& extra : bad) {
    TempDir dir;
    const auto run = run_llmload(dir, args(extra));
    EXPECT_EQ(run.proc.exit_code, 2) << extra[2] << ": " << run.proc.err;
    EXPECT_NE(run.proc.err.find("llmload: error:"), std::string::npos) << run.proc.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("workers"))) << extra[2];
  }
  // The advice names the flag given, and a bad value from the environment says so.
  {
    TempDir dir;
    const auto many = run_llmload(dir, args({"--workers", "8", "--concurrency", "4", "--num-requests", "8"}));
    EXPECT_EQ(many.proc.exit_code, 2);
    EXPECT_NE(many.proc.err.find("use fewer --workers"), std::string::npos) << many.proc.err;
    EXPECT_EQ(many.proc.err.find("--shard-count)"), std::string::npos) << many.proc.err;
    const auto env = run_llmload(dir, args({"--concurrency", "4", "--num-requests", "8"}), {"LLMLOAD_WORKERS=abc"});
    EXPECT_EQ(env.proc.exit_code, 2);
    EXPECT_NE(env.proc.err.find("bad --workers (from $LLMLOAD_WORKERS) 'abc'"), std::string::npos) << env.proc.err;
  }
  // A sweep is told that --workers is run's, not CLI11's "arguments were not expected".
  const auto sweep = run({binary_path("llmload"), "sweep", "--workers", "2", "--base-url", server_->base_url,
                          "--concurrency", "1,2", "--num-requests", "4"},
                         std::chrono::seconds(60));
  EXPECT_EQ(sweep.exit_code, 2) << sweep.err;
  EXPECT_NE(sweep.err.find("--workers is an option of `llmload run`, not of sweep"), std::string::npos) << sweep.err;
}

TEST_F(Workers, AnUnreachableServerIsReportedOnceWithTheWorkersError) {
  TempDir dir;
  const auto run = run_llmload(dir, {"--base-url", "http://127.0.0.1:9", "--scenario", "concurrency", "--concurrency",
                                     "4", "--num-requests", "8", "--workers", "2"});
  EXPECT_EQ(run.proc.exit_code, 2) << run.proc.err;
  EXPECT_NE(run.proc.err.find(" of 2 failed (exit 2)"), std::string::npos) << run.proc.err;
  EXPECT_NE(run.proc.err.find("cannot reach the endpoint"), std::string::npos) << run.proc.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("workers")));
}

// Multi-turn sessions split across workers: each session has the whole run's own id (they were
// numbered per worker, so the merged records named every session once per worker and each worker
// dealt its sessions the same models and tools).
TEST_F(Workers, SessionsHaveTheWholeRunsIds) {
  TempDir dir;
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "4", "--num-requests", "16",
                                          "--turns", "2", "--workers", "2"}));
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  ASSERT_EQ(run.records.size(), 16u);
  std::set<std::pair<std::int64_t, std::int64_t>> turns;
  std::set<std::int64_t> sessions;
  for (const auto& rec : run.records) {
    turns.insert({rec["session"].get<std::int64_t>(), rec["turn"].get<std::int64_t>()});
    sessions.insert(rec["session"].get<std::int64_t>());
  }
  EXPECT_EQ(turns.size(), 16u) << "a (session, turn) twice";
  EXPECT_EQ(sessions.size(), 8u) << "8 sessions of 2 turns";
}

// The workers are quiet, but what the server's model list warns of reached nobody with --workers:
// it is said once (worker 0's), before the load, as a single process says it.
TEST_F(Workers, TheServersModelListWarningIsSaidOnceBeforeTheLoad) {
  TempDir dir;
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "4",
                                          "--model", "nosuchmodel", "--workers", "2"}));
  EXPECT_EQ(run.proc.exit_code, 6) << run.proc.err;  // the mock answers 404 for it
  const std::string warning = "llmload: warning: GET " + server_->base_url + "/v1/models does not list --model nosuchmodel";
  const auto at = run.proc.err.find(warning);
  ASSERT_NE(at, std::string::npos) << run.proc.err;
  EXPECT_EQ(run.proc.err.find(warning, at + 1), std::string::npos) << "said once:\n" << run.proc.err;
  EXPECT_LT(at, run.proc.err.find("workers ready")) << run.proc.err;
  // --quiet drops the notes ("workers ready"), not the warning.
  TempDir quiet;
  const auto q = run_llmload(quiet, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "4",
                                          "--model", "nosuchmodel", "--workers", "2", "--quiet"}));
  EXPECT_EQ(q.proc.exit_code, 6) << q.proc.err;
  const auto q_at = q.proc.err.find(warning);
  ASSERT_NE(q_at, std::string::npos) << q.proc.err;
  EXPECT_EQ(q.proc.err.find(warning, q_at + 1), std::string::npos) << "said once:\n" << q.proc.err;
  EXPECT_EQ(q.proc.err.find("workers ready"), std::string::npos) << q.proc.err;
}

// A worker that warns and then fails: the warning is said once (the relay), not again in the
// failed worker's last output.
TEST_F(Workers, AFailedWorkersWarningIsNotRepeatedInItsLastOutput) {
  TempDir dir;
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "4",
                                          "--model", "nosuchmodel", "--tokenizer", dir.file("none.model"),
                                          "--workers", "2"}));
  EXPECT_EQ(run.proc.exit_code, 2) << run.proc.err;
  const std::string warning = "does not list --model nosuchmodel";
  const auto at = run.proc.err.find(warning);
  ASSERT_NE(at, std::string::npos) << run.proc.err;
  EXPECT_EQ(run.proc.err.find(warning, at + 1), std::string::npos) << "said once:\n" << run.proc.err;
  EXPECT_NE(run.proc.err.find("its last output:\n    llmload: error: --tokenizer"), std::string::npos) << run.proc.err;
}

// A worker's warning at its end (its records spilled into a tmpfs) reached nobody: the workers
// are quiet. It is said once, by the parent, as a single process says it.
TEST_F(Workers, AWarningAtTheWorkersEndIsSaidOnce) {
  struct statfs fs {};
  if (::statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC || ::access("/dev/shm", W_OK) != 0) {
    GTEST_SKIP() << "no writable tmpfs at /dev/shm";
  }
  TempDir dir;
  // Over 1,024 records a worker: each spills its records (RecordStore's batch) into TMPDIR.
  const auto run = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "8", "--num-requests", "2200",
                                          "--workers", "2"}),
                               {"TMPDIR=/dev/shm"}, 120s);
  ASSERT_EQ(run.proc.exit_code, 0) << run.proc.err;
  const std::string warning = "llmload: warning: the run's records were kept in a temporary file in /dev/shm";
  const auto at = run.proc.err.find(warning);
  ASSERT_NE(at, std::string::npos) << run.proc.err;
  EXPECT_EQ(run.proc.err.find(warning, at + 1), std::string::npos) << "said once:\n" << run.proc.err;
}

// A single run --overwrite into a --workers run's directory takes the workers' artifacts away
// with the merged ones (left, they read as this run's); a report of a directory whose parent never
// merged (killed outright) says how to merge it.
TEST_F(Workers, WhatIsLeftOfAWorkersRunIsReplacedOrNamed) {
  TempDir dir;
  const auto two = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "8",
                                          "--workers", "2"}));
  ASSERT_EQ(two.proc.exit_code, 0) << two.proc.err;
  ASSERT_TRUE(std::filesystem::exists(dir.file("workers/worker-0")));
  // A --workers run over it (fewer workers, an earlier one's third left): only its own workers stay.
  std::filesystem::create_directories(dir.file("workers/worker-2"));
  const auto again = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "8",
                                            "--workers", "2", "--overwrite"}));
  ASSERT_EQ(again.proc.exit_code, 0) << again.proc.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("workers/worker-1")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("workers/worker-2")));
  const auto one = run_llmload(dir, args({"--scenario", "concurrency", "--concurrency", "2", "--num-requests", "8",
                                          "--overwrite"}));
  ASSERT_EQ(one.proc.exit_code, 0) << one.proc.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("workers")));

  TempDir unmerged;
  std::filesystem::create_directories(unmerged.file("workers/worker-0"));
  const auto report = run({binary_path("llmload"), "report", unmerged.path()}, 30s);
  EXPECT_EQ(report.exit_code, 2) << report.err;
  EXPECT_NE(report.err.find("llmload merge " + unmerged.path() + "/workers/worker-*"), std::string::npos) << report.err;
}

}  // namespace llmload::testing::workers_test
