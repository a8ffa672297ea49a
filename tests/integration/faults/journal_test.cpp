// A run killed outright (SIGKILL: no handler, no drain) leaves what it measured: requests.jsonl,
// streamed as requests complete and flushed at least every second, beside run-in-progress.json;
// `llmload report DIR` rebuilds result.json and latency.hlog from them (app/run_journal.hpp,
// app/rebuild.hpp). A run that finishes leaves no run-in-progress.json.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "poll.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::vector<std::string> run_args(const std::string& url, const TempDir& dir, std::vector<std::string> extra) {
  std::vector<std::string> a = {binary_path("llmload"), "run", "--base-url", url, "--output", dir.path(),
                                "--input-tokens", "8", "--output-tokens", "8", "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(Journal, ARunKilledOutrightLeavesItsRequestsAndAReportRebuildsItsResult) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "5ms"});
  TempDir dir;
  Subprocess p(run_args(srv.base_url, dir,
                        {"--scenario", "server", "--request-rate", "40", "--duration", "60s", "--slo", "ttft:1s,p90"}));
  // Requests reach the disk while the run goes on (flushed at least every second).
  poll_until([&] { return complete_lines(dir.file("requests.jsonl")) >= 40; }, 100ms);
  const std::size_t seen = complete_lines(dir.file("requests.jsonl"));
  ASSERT_GE(seen, 40u) << "requests.jsonl is not written as the run goes";
  EXPECT_TRUE(fs::exists(dir.file("run-in-progress.json")));
  EXPECT_FALSE(fs::exists(dir.file("result.json")));
  p.signal(SIGKILL);
  EXPECT_EQ(p.wait(10s), 128 + SIGKILL);

  // What was flushed before the kill is still there; the report rebuilds the result from it.
  const std::size_t left = complete_lines(dir.file("requests.jsonl"));
  EXPECT_GE(left, seen);
  auto r = run({binary_path("llmload"), "report", dir.path()}, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("did not finish"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("run-in-progress.json")));
  const json result = json::parse(read_file(dir.file("result.json")));
  EXPECT_TRUE(result["interrupted"].get<bool>());
  ASSERT_TRUE(result["rebuilt"].is_object()) << result.dump(2);
  EXPECT_GE(result["rebuilt"]["requests"].get<std::size_t>(), left);
  // Judged by the run's own rules: its SLO, in the response-time view of an open-loop run.
  EXPECT_EQ(result["slo"]["spec"], "ttft:1000ms,p90") << result["slo"].dump();
  EXPECT_EQ(result["slo"]["view"], "response");
  EXPECT_GE(result["completed"].get<std::int64_t>(), 30);
  EXPECT_EQ(result["failed"], 0);
  EXPECT_GT(result["request_throughput"].get<double>(), 20.0);
  EXPECT_GT(result["output_throughput"].get<double>(), 100.0);  // tokens arriving in the window
  EXPECT_GT(result["median_ttft_ms"].get<double>(), 15.0);
  EXPECT_TRUE(result["p99_itl_ms"].is_null()) << "no ITL without the events' times";
  EXPECT_EQ(result["conditions"]["scenario"]["request_rate"], 40.0);
  EXPECT_EQ(result["load"]["offered_rate"], 40.0);
  EXPECT_TRUE(fs::exists(dir.file("latency.hlog")));
  EXPECT_TRUE(fs::exists(dir.file("report.html")));
  // A second report renders the rebuilt result as it is.
  auto again = run({binary_path("llmload"), "report", dir.path()}, 60s);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("did not finish"), std::string::npos) << again.err;
}

// requests.jsonl streamed whole (every line written, none relabeled after: a counted warmup) is
// kept as the final file, not made and written again: the file the run streamed is still there.
TEST(Journal, AFinishedRunLeavesNoInProgressFileAndTheFinalRequests) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir dir;
  Subprocess p(run_args(srv.base_url, dir, {"--concurrency", "2", "--num-requests", "300", "--warmup", "5"}));
  ino_t streamed = 0;
  poll_until(
      [&] {
        struct stat st {};
        if (::stat(dir.file("requests.jsonl").c_str(), &st) != 0 || fs::exists(dir.file("result.json"))) return false;
        streamed = st.st_ino;
        return true;
      },
      2ms);
  ASSERT_EQ(p.wait(60s), 0) << p.err();
  ASSERT_NE(streamed, 0u) << "the run ended before its requests.jsonl could be seen";
  struct stat after {};
  ASSERT_EQ(::stat(dir.file("requests.jsonl").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, streamed) << "requests.jsonl was written again";
  EXPECT_FALSE(fs::exists(dir.file("requests.jsonl.tmp")));
  EXPECT_FALSE(fs::exists(dir.file("run-in-progress.json")));
  EXPECT_EQ(complete_lines(dir.file("requests.jsonl")), 305u);
  // The lines are the records as the run counted them: the 5 warmup requests are the first 5
  // sent (indexes 0-4), whatever order they completed in.
  std::size_t warm = 0;
  std::istringstream lines(read_file(dir.file("requests.jsonl")));
  for (std::string line; std::getline(lines, line);) {
    const json rec = json::parse(line);
    EXPECT_EQ(rec["warmup"].get<bool>(), rec["index"].get<int>() < 5) << line;
    warm += rec["warmup"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(warm, 5u);
  const json result = json::parse(read_file(dir.file("result.json")));
  EXPECT_FALSE(result.contains("rebuilt"));
  // Nothing to rebuild: the report leaves result.json as the run wrote it.
  const std::string before = read_file(dir.file("result.json"));
  auto rep = run({binary_path("llmload"), "report", dir.path()}, 60s);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(read_file(dir.file("result.json")), before);
}

// The rebuild reads a run as the run itself does: a finished run's final requests.jsonl, with the
// run-in-progress.json it had while it ran, rebuilds to the result.json the run wrote (every
// number taken from the records; ITL, which needs the events, is left out of a rebuild).
TEST(Journal, ARebuildOfAFinishedRunGivesTheRunsOwnNumbers) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "5ms", "--jitter", "0.5"});
  TempDir dir;
  Subprocess p(run_args(srv.base_url, dir, {"--concurrency", "4", "--num-requests", "300", "--warmup", "0"}));
  // The marker exists while the load runs: keep a copy of it.
  TempDir copy;
  poll_until(
      [&] {
        std::error_code ec;
        return fs::copy_file(dir.file("run-in-progress.json"), copy.file("run-in-progress.json"), ec) && !ec;
      },
      5ms);
  ASSERT_EQ(p.wait(60s), 0);
  ASSERT_TRUE(fs::exists(copy.file("run-in-progress.json"))) << "the run ended before its marker could be copied";
  fs::copy_file(dir.file("requests.jsonl"), copy.file("requests.jsonl"));
  auto rep = run({binary_path("llmload"), "report", copy.path()}, 60s);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const json ran = json::parse(read_file(dir.file("result.json")));
  const json rebuilt = json::parse(read_file(copy.file("result.json")));
  ASSERT_TRUE(rebuilt["rebuilt"].is_object());
  EXPECT_EQ(rebuilt["completed"], ran["completed"]);
  EXPECT_EQ(rebuilt["failed"], ran["failed"]);
  EXPECT_EQ(rebuilt["total_output_tokens"], ran["total_output_tokens"]);
  for (const char* k : {"ttft", "tpot", "e2el"}) {
    for (const char* stat : {"mean", "median", "p90", "p99"}) {
      const std::string key = std::string(stat) + "_" + k + "_ms";
      EXPECT_NEAR(rebuilt[key].get<double>(), ran[key].get<double>(), 1e-6 * ran[key].get<double>()) << key;
    }
  }
  EXPECT_NEAR(rebuilt["duration"].get<double>(), ran["duration"].get<double>(), 1e-6);
  EXPECT_NEAR(rebuilt["request_throughput"].get<double>(), ran["request_throughput"].get<double>(),
              1e-6 * ran["request_throughput"].get<double>());
  // Every token arrived inside the window of a counted run, so the token rate agrees too.
  EXPECT_NEAR(rebuilt["output_throughput"].get<double>(), ran["output_throughput"].get<double>(),
              1e-6 * ran["output_throughput"].get<double>());
}

// A full disk under requests.jsonl itself (its writes land on /dev/full: ENOSPC): while the run
// goes, a warning and the run goes on; at the end result.json is written and names the file it
// could not write, with the operating system's reason.
TEST(Journal, AFullDiskUnderRequestsJsonlIsNamedAndResultJsonSaysSo) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir dir;
  fs::create_symlink("/dev/full", dir.file("requests.jsonl"));
  fs::create_symlink("/dev/full", dir.file("requests.jsonl.tmp"));
  auto args = run_args(srv.base_url, dir, {"--concurrency", "2", "--num-requests", "400", "--overwrite"});
  args.erase(std::find(args.begin(), args.end(), "--quiet"));  // the journal's warning is not an error
  auto r = run(args, 60s);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // results could not all be written
  EXPECT_NE(r.err.find("requests.jsonl can no longer be written as the run goes (No space left on device"),
            std::string::npos)
      << r.err;
  const json result = json::parse(read_file(dir.file("result.json")));
  ASSERT_TRUE(result["incomplete_files"].is_array()) << result.dump(2);
  EXPECT_NE(result["incomplete_files"][0].get<std::string>().find("requests.jsonl: No space left on device"),
            std::string::npos)
      << result["incomplete_files"];
  EXPECT_EQ(result["completed"], 400);
}

// Requests the server has finished (its /metrics, read with curl as the other tests do).
double journal_served(const ServerHandle& server) {
  const RunResult r = run({"curl", "-sS", "--max-time", "10", server.base_url + "/metrics"}, 20s);
  const std::string series = R"(vllm:request_success_total{engine="0",finished_reason="length",model_name="llmload-mock"} )";
  const auto at = r.out.find(series);
  return at == std::string::npos ? 0 : std::stod(r.out.substr(at + series.size()));
}

// A file that takes nothing for a while (a disk the kernel makes a writer wait on; here
// requests.jsonl is a FIFO that nobody reads until the server has served every request): the run
// goes on sending, since its files are written from a thread of their own (background_appender.hpp);
// once the file is read, every line arrives. Before, the event loop itself waited in write(2)
// once the pipe was full (about 150 lines), so the server never got the rest.
TEST(Journal, AFileThatTakesNothingDoesNotHoldUpTheRequests) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "0ms"});
  TempDir dir;
  const std::string fifo = dir.file("requests.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int hold = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // an open end that reads nothing
  ASSERT_GE(hold, 0);
  Subprocess p(run_args(srv.base_url, dir, {"--concurrency", "4", "--num-requests", "1000", "--overwrite"}));
  // A deadlock breaker, not a time the test judges: 1,000 short requests take a few seconds.
  const bool all_served = poll_until([&] { return journal_served(srv) >= 1000; }, 200ms, 90s);
  EXPECT_TRUE(all_served) << "the server got " << journal_served(srv) << " requests while requests.jsonl took nothing";
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  ::close(hold);
  ::fcntl(reader, F_SETFL, 0);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(reader, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(reader);
  EXPECT_EQ(p.wait(60s), 0) << p.err();
  const json result = json::parse(read_file(dir.file("result.json")));
  EXPECT_EQ(result["completed"], 1000);
  std::size_t lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line); ++lines) {
    EXPECT_TRUE(json::accept(line)) << line;
  }
  EXPECT_EQ(lines, 1000u);
}

// Issue 16: SIGTERM during --trial-pause exited 143 and the trials summary was never written.
TEST(Signals, ASignalBetweenTrialsWritesTheTrialsSoFarAndExits130) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir dir;
  Subprocess p(run_args(srv.base_url, dir,
                        {"--concurrency", "2", "--num-requests", "20", "--trials", "3", "--trial-pause", "30s"}));
  poll_until([&] { return fs::exists(dir.file("trial-1/result.json")); }, 100ms);
  ASSERT_TRUE(fs::exists(dir.file("trial-1/result.json")));
  std::this_thread::sleep_for(500ms);  // in the pause
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(20s), 130) << p.err();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  const json summary = json::parse(read_file(dir.file("result.json")));
  EXPECT_EQ(summary["trials"].size(), 1u) << summary.dump(2);
  EXPECT_FALSE(fs::exists(dir.file("trial-2")));
}

// Issue 16: a signal during the --start-at wait; the run ends at once, exit 130, no directory.
TEST(Signals, ASignalDuringTheStartWaitEndsTheRunAtOnce) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir parent;
  const std::string out = parent.file("waiting");
  const auto start = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch() + std::chrono::seconds(60))
                         .count();
  Subprocess p({binary_path("llmload"), "run", "--base-url", srv.base_url, "--output", out, "--input-tokens", "8",
                "--output-tokens", "8", "--num-requests", "10", "--start-at", std::to_string(start)});
  std::this_thread::sleep_for(2s);  // probed and calibrated: waiting for the start
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(20s), 130) << p.err();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_NE(p.err().find("before the load started"), std::string::npos) << p.err();
  EXPECT_FALSE(fs::exists(out));
}

// Issue 16: a run refused before its load (here: nothing listens) left an empty directory.
TEST(OutputDir, ARunRefusedBeforeItsLoadLeavesNoDirectory) {
  TempDir parent;
  const std::string out = parent.file("never");
  auto r = run({binary_path("llmload"), "run", "--base-url", "http://127.0.0.1:1", "--model", "m", "--output", out,
                "--num-requests", "5"},
               60s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(fs::exists(out)) << r.err;
}

}  // namespace
}  // namespace llmload::testing
