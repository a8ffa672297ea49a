// llmload against servers that misbehave: every fault ends as the right error class in
// requests.jsonl, the run continues with the other requests, and the outputs are complete.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <filesystem>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "fault_server.hpp"
#include "poll.hpp"
#include "llmload/loadgen/redact.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct Outputs {
  json result;
  std::vector<json> records;
};

Outputs read_outputs(const TempDir& dir) {
  Outputs o;
  o.result = json::parse(read_file(dir.file("result.json")));
  std::istringstream in(read_file(dir.file("requests.jsonl")));
  std::string line;
  while (std::getline(in, line)) o.records.push_back(json::parse(line));
  return o;
}

std::vector<std::string> llmload_args(const std::string& url, const TempDir& dir, std::vector<std::string> extra) {
  // The scripted server answers generation requests only: no /tokenize calibration.
  std::vector<std::string> a = {binary_path("llmload"), "run", "--base-url", url, "--output", dir.path(),
                                "--input-tokens", "3", "--output-tokens", "4", "--prompt-calibration", "estimate"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(Faults, EachFaultEndsAsTheRightErrorClassAndTheRunContinues) {
  // One request at a time, so request i meets fault i.
  const std::vector<std::pair<Fault, std::string>> cases = {
      {Fault::kOk, "none"},
      {Fault::kResetBefore, "incomplete"},
      {Fault::kOk, "none"},
      {Fault::kResetMid, "incomplete"},
      {Fault::kHttp500Json, "http_status"},
      {Fault::kHttp503Text, "http_status"},
      {Fault::kHttp429, "http_status"},
      {Fault::kMalformedSse, "protocol"},
      {Fault::kTruncatedEvent, "incomplete"},
      {Fault::kHugeEvent, "none"},
      {Fault::kInvalidUtf8, "protocol"},
      {Fault::kNoDone, "incomplete"},
      {Fault::kStreamError, "stream_error"},
      {Fault::kStallForever, "idle_timeout"},
      {Fault::kOk, "none"},
      {Fault::kDoneNoEnd, "none"},  // issue 16: was idle_timeout, though the stream had finished
      {Fault::kOk, "none"},
      {Fault::kRedirect, "http_status"},  // issue 16: the messages did not say what happened
      {Fault::kGzipStream, "protocol"},
  };
  std::vector<Fault> script;
  for (const auto& c : cases) script.push_back(c.first);
  FaultServer server(script);
  TempDir dir;
  auto r = run(llmload_args(server.base_url(), dir,
                            {"--scenario", "single-stream", "--num-requests", std::to_string(cases.size()),
                             "--idle-timeout", "3s", "--timeout", "30s"}),
               120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto o = read_outputs(dir);
  ASSERT_EQ(o.records.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(o.records[i]["error_class"], cases[i].second)
        << "request " << i << ": " << o.records[i].dump();
  }
  EXPECT_EQ(o.result["completed"], 6);
  EXPECT_EQ(o.result["failed"], static_cast<int>(cases.size()) - 6);
  // Messages say what happened.
  EXPECT_NE(o.records[4]["error"].get<std::string>().find("HTTP 500: engine crashed"), std::string::npos);
  EXPECT_NE(o.records[5]["error"].get<std::string>().find("upstream overloaded"), std::string::npos);
  EXPECT_NE(o.records[6]["error"].get<std::string>().find("Retry-After: 2"), std::string::npos) << o.records[6];
  EXPECT_NE(o.records[11]["error"].get<std::string>().find("[DONE]"), std::string::npos);
  EXPECT_NE(o.records[12]["error"].get<std::string>().find("out of KV cache"), std::string::npos);
  EXPECT_NE(o.records[13]["error"].get<std::string>().find("idle timeout"), std::string::npos);
  // Counted by status with an example each.
  EXPECT_EQ(o.result["errors"]["by_http_status"]["429"]["count"], 1);
  EXPECT_EQ(o.result["errors"]["by_class"]["incomplete"]["count"], 4);
  // The huge (5 MB) event was taken as the output it is.
  EXPECT_EQ(o.records[9]["output_tokens"], 1);
  EXPECT_NE(o.records[17]["error"].get<std::string>().find("redirects to 'http://127.0.0.1:9/v1/completions'"),
            std::string::npos) << o.records[17];
  EXPECT_NE(o.records[18]["error"].get<std::string>().find("compressed (Content-Encoding: gzip)"), std::string::npos)
      << o.records[18];
  // A body left open after [DONE] is closed by llmload soon after, long before the idle timeout
  // (3 s: a stall of the test's own server, writing the 5 MB event, must not look like a fault).
  EXPECT_EQ(o.records[15]["output_tokens"], 4);
  EXPECT_LT(o.records[15]["t_done_ms"].get<double>() - o.records[15]["t_last_ms"].get<double>(), 1500.0);
}

TEST(Faults, ServerClosingKeepAliveBetweenRequestsCostsNothing) {
  FaultServer server({Fault::kCloseAfter});
  TempDir dir;
  auto r = run(llmload_args(server.base_url(), dir, {"--scenario", "single-stream", "--num-requests", "10"}), 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto o = read_outputs(dir);
  EXPECT_EQ(o.result["completed"], 10) << o.result["errors"].dump();
  EXPECT_EQ(server.posts(), 10);  // nothing was sent twice
  EXPECT_GE(o.result["connections_opened"].get<int>(), 10);
}

TEST(Faults, WholeRequestTimeoutBoundsANeverEndingStream) {
  FaultServer server({Fault::kTrickleForever});
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(llmload_args(server.base_url(), dir,
                            {"--num-requests", "2", "--concurrency", "2", "--timeout", "1s", "--idle-timeout", "10s"}),
               60s);
  ASSERT_EQ(r.exit_code, 6) << r.err;  // every request timed out: nothing measured, all written
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  auto o = read_outputs(dir);
  ASSERT_EQ(o.records.size(), 2u);
  for (const auto& rec : o.records) {
    EXPECT_EQ(rec["error_class"], "timeout");
    EXPECT_NE(rec["error"].get<std::string>().find("total timeout"), std::string::npos);
  }
}

TEST(Faults, ConnectionRefusedDuringTheRun) {
  FaultServer server({Fault::kOk});
  server.refuse_after_probe();
  TempDir dir;
  auto r = run(llmload_args(server.base_url(), dir, {"--num-requests", "3", "--concurrency", "1"}), 60s);
  ASSERT_EQ(r.exit_code, 6) << r.err;  // every request refused: nothing measured, all written
  auto o = read_outputs(dir);
  ASSERT_EQ(o.records.size(), 3u);
  for (const auto& rec : o.records) {
    EXPECT_EQ(rec["error_class"], "connect") << rec.dump();
    EXPECT_NE(rec["error"].get<std::string>().find("refused"), std::string::npos) << rec.dump();
  }
}

TEST(Faults, HelpShowsTheTimeoutDefaults) {
  auto r = run({binary_path("llmload"), "run", "--help"}, 30s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--timeout"), std::string::npos);
  EXPECT_NE(r.out.find("default 10m"), std::string::npos);
  EXPECT_NE(r.out.find("--idle-timeout"), std::string::npos);
  EXPECT_NE(r.out.find("default 60s"), std::string::npos);
}

// Issue 16: a stream that never ends grew the client's memory by ~18 MB/s until --timeout. It is
// cut at 4 x max_tokens + 1,024 output events, as its own outcome.
TEST(Faults, AStreamThatNeverEndsIsCutAsOutputOverflow) {
  FaultServer server({Fault::kEndlessTokens});
  TempDir dir;
  auto r = run(llmload_args(server.base_url(), dir, {"--scenario", "single-stream", "--num-requests", "2",
                                                     "--timeout", "60s"}),  // max_tokens 4
               90s);
  EXPECT_EQ(r.exit_code, 6) << r.err;  // no measured request succeeded (results written all the same)
  auto o = read_outputs(dir);
  ASSERT_EQ(o.records.size(), 2u);
  for (const auto& rec : o.records) {
    EXPECT_EQ(rec["error_class"], "output_overflow") << rec.dump();
    EXPECT_NE(rec["error"].get<std::string>().find("over 1040 output events for max_tokens 4"), std::string::npos)
        << rec.dump();
    // Cut at the bound, long before --timeout.
    EXPECT_LT(rec["e2e_ms"].is_number() ? rec["e2e_ms"].get<double>() : 0.0, 30000.0);
  }
  EXPECT_EQ(o.result["errors"]["by_class"]["output_overflow"]["count"], 2) << o.result["errors"].dump();
}

// ---- secrets ---------------------------------------------------------------------------

TEST(Secrets, AKeyEchoedByTheServerNeverReachesAnyOutput) {
  FaultServer server({Fault::kEchoAuth401, Fault::kOk});
  TempDir dir;
  const std::string secret = "sk-live-TOPSECRET-123456";
  {
    std::ofstream f(dir.file("key.txt"));
    f << secret << "\n";
  }
  TempDir out;
  auto r = run(llmload_args(server.base_url(), out,
                            {"--scenario", "single-stream", "--num-requests", "4", "--api-key-file", dir.file("key.txt")}),
               60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto o = read_outputs(out);
  EXPECT_EQ(o.result["failed"], 2);
  EXPECT_NE(o.records[0]["error"].get<std::string>().find("invalid key: Bearer ***"), std::string::npos)
      << o.records[0].dump();
  // Every output of the run: stdout, stderr, and every file written.
  EXPECT_EQ(r.out.find(secret), std::string::npos);
  EXPECT_EQ(r.err.find(secret), std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(out.path())) {
    EXPECT_EQ(read_file(entry.path().string()).find(secret), std::string::npos) << entry.path();
  }
  // Also from the environment and on the command line (stored redacted).
  TempDir out2;
  auto r2 = run(llmload_args(server.base_url(), out2, {"--num-requests", "2", "--api-key", secret}), 60s,
                {"OPENAI_API_KEY=" + secret});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  for (const auto& entry : std::filesystem::directory_iterator(out2.path())) {
    EXPECT_EQ(read_file(entry.path().string()).find(secret), std::string::npos) << entry.path();
  }
  auto o2 = read_outputs(out2);
  EXPECT_NE(o2.result["conditions"]["command_line"].dump().find("***"), std::string::npos);
}

// Issue 16: error text was cut to 300 characters before redaction, so a key straddling the cut was
// written almost whole. Keys whose echo is cut at every position near its end: no 8 consecutive
// characters of the key in any output (stdout, stderr, every file written, at any depth).
TEST(Secrets, AKeyStraddlingTheCutOfAnEchoedErrorLeavesNoFragment) {
  FaultServer server({Fault::kEchoAuth401, Fault::kOk});
  // "invalid key: Bearer " is 20 characters: the 300-character excerpt cuts keys longer than 280.
  for (std::size_t len : {270u, 281u, 290u, 299u, 300u, 320u}) {
    std::string key = "sk-";
    for (std::size_t i = 0; key.size() < len; ++i) key += "0123456789abcdef"[(i * 7 + len) % 16];
    TempDir out;
    auto r = run(llmload_args(server.base_url(), out, {"--scenario", "single-stream", "--num-requests", "2"}), 60s,
                 {"OPENAI_API_KEY=" + key});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(longest_secret_fragment(r.out, key), kMinSecretFragment) << len;
    EXPECT_LT(longest_secret_fragment(r.err, key), kMinSecretFragment) << len;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(out.path())) {
      if (!entry.is_regular_file()) continue;
      EXPECT_LT(longest_secret_fragment(read_file(entry.path().string()), key), kMinSecretFragment)
          << "key of " << len << " characters in " << entry.path();
    }
  }
}

TEST(Secrets, ApiKeyInAScenarioFileIsRefused) {
  TempDir dir;
  {
    std::ofstream f(dir.file("s.yaml"));
    f << "scenario: concurrency\napi_key: sk-abc\n";
  }
  auto r = run({binary_path("llmload"), "run", "--scenario-file", dir.file("s.yaml")}, 30s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("API keys do not belong in scenario files"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sk-abc"), std::string::npos);
}

// ---- output directory problems are found before the run ---------------------------------

// Never lose or overwrite a result: a run without --output writes to a new directory named for
// the run (and says where); a used directory is refused before anything is sent, with the fix;
// --overwrite allows it.
TEST(OutputDir, EveryRunWritesANewDirectoryAndNeverOverwritesAnother) {
  namespace fs = std::filesystem;
  FaultServer server({Fault::kOk});
  TempDir cwd;
  const std::string bin = binary_path("llmload");
  auto in_cwd = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd.path(), bin, "run",
                                     "--base-url", server.base_url(), "--concurrency", "2"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, 60s);
  };
  auto a = in_cwd({"--num-requests", "3"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(cwd.file("llmload-runs"))) runs.push_back(e.path());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].filename().string().find("-concurrency-c2"), std::string::npos) << runs[0];
  EXPECT_TRUE(fs::exists(runs[0] / "result.json"));
  EXPECT_NE(a.err.find("results written to llmload-runs/"), std::string::npos) << a.err;

  const int posts_before = server.posts();
  auto b = in_cwd({"--num-requests", "3", "--output", runs[0].string()});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("is not empty"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("--overwrite"), std::string::npos) << b.err;
  EXPECT_EQ(server.posts(), posts_before) << "refused before the run";

  auto c = in_cwd({"--num-requests", "4", "--output", runs[0].string(), "--overwrite"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::ifstream f(runs[0] / "result.json");
  EXPECT_EQ(nlohmann::json::parse(f)["completed"], 4);
}

TEST(OutputDir, UnwritableOrFullIsDetectedBeforeTheRun) {
  FaultServer server({Fault::kOk});
  TempDir dir;
  auto a = run(llmload_args(server.base_url(), dir, {"--num-requests", "1"}), 30s);
  ASSERT_EQ(a.exit_code, 0);
  const int posts_before = server.posts();
  // Not a directory that can be made.
  auto b = run({binary_path("llmload"), "run", "--base-url", server.base_url(), "--output", "/dev/null/results",
                "--num-requests", "1"},
               30s);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("cannot create --output directory"), std::string::npos) << b.err;
  // A full disk: the write probe lands on /dev/full (ENOSPC).
  TempDir full;
  std::filesystem::create_symlink("/dev/full", full.file(".llmload-write-test"));
  auto c = run({binary_path("llmload"), "run", "--base-url", server.base_url(), "--output", full.path(),
                "--num-requests", "1"},
               30s);
  EXPECT_EQ(c.exit_code, 2);
  // Named as what it is, with the fix.
  EXPECT_NE(c.err.find("No space left on device (free some space, or choose another --output)"), std::string::npos)
      << c.err;
  EXPECT_EQ(server.posts(), posts_before);  // nothing was sent
}

// ---- signals -----------------------------------------------------------------------------

TEST(Signals, SigintStopsIssuingDrainsAndWritesAnInterruptedArtifact) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "10ms"});
  TempDir dir;
  Subprocess p(llmload_args(srv.base_url, dir, {"--concurrency", "4", "--duration", "60s"}));
  // The signal once more than 10 requests are done (requests.jsonl has their lines, written at
  // least every second), not after a fixed sleep a slow start could use up.
  poll_until([&] { return complete_lines(dir.file("requests.jsonl")) >= 12; }, 50ms);
  p.signal(SIGINT);
  const int code = p.wait(30s);
  EXPECT_EQ(code, 130) << p.err();
  auto o = read_outputs(dir);
  EXPECT_TRUE(o.result["interrupted"].get<bool>());
  EXPECT_GT(o.result["completed"].get<int>(), 10);
  EXPECT_EQ(o.result["failed"], 0);  // the in-flight requests were drained, not cut
  EXPECT_NE(o.result["window"]["method"].get<std::string>().find("interrupted"), std::string::npos);
  EXPECT_NE(p.out().find("RUN INTERRUPTED"), std::string::npos);
}

// Issue 16: one SIGTERM between requests (nothing in flight) used to leave the run waiting for a
// second signal, whatever --drain-timeout and --duration said.
TEST(Signals, OneSigtermWithNothingInFlightEndsTheRunAtOnce) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "5ms"});
  TempDir dir;
  Subprocess p(llmload_args(srv.base_url, dir, {"--scenario", "server", "--request-rate", "2", "--duration", "30s"}));
  std::this_thread::sleep_for(2200ms);  // between two arrivals 0.5 s apart on average: idle most of the time
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  const int code = p.wait(40s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s) << "the run waited for a second signal";
  EXPECT_EQ(code, 130) << p.err();
  auto o = read_outputs(dir);
  EXPECT_TRUE(o.result["interrupted"].get<bool>());
  EXPECT_EQ(o.result["failed"], 0);
}

TEST(Signals, SecondSignalStopsAtOnceAndStillWritesWhatItHas) {
  // Two requests complete, then every request stalls forever: a drain would never end.
  FaultServer server({Fault::kOk, Fault::kOk, Fault::kStallForever});
  TempDir dir;
  Subprocess p(llmload_args(server.base_url(), dir, {"--concurrency", "3", "--num-requests", "50", "--idle-timeout", "60s"}));
  for (int i = 0; i < 100 && server.posts() < 5; ++i) std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(200ms);
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGINT);
  std::this_thread::sleep_for(300ms);
  p.signal(SIGTERM);
  const int code = p.wait(30s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_EQ(code, 130) << p.err();
  auto o = read_outputs(dir);
  EXPECT_TRUE(o.result["interrupted"].get<bool>());
  // The requests the second signal canceled are the user's decision, not failures of the server:
  // outcome stopped_early, outside `failed` and the error rate (they made a run "100% failed").
  int stopped = 0;
  for (const auto& rec : o.records) {
    stopped += rec["error_class"] == "stopped_early" ? 1 : 0;
    EXPECT_NE(rec["error_class"], "canceled") << rec.dump();
  }
  EXPECT_GE(stopped, 1);
  EXPECT_EQ(o.result["requests"]["stopped_early"], stopped);
  EXPECT_EQ(o.result["failed"], 0);
  EXPECT_GE(o.result["completed"].get<int>(), 2);
  for (const auto& why : o.result["validity"]["reasons"]) EXPECT_NE(why["code"], "error_rate") << why.dump();
}

// Issue 16: against a stalled server, --duration 3s --max-duration 5s took 60 s (the idle timeout).
TEST(Faults, MaxDurationIsAHardBoundAgainstAStalledServer) {
  FaultServer server({Fault::kOk, Fault::kOk, Fault::kStallForever});
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(llmload_args(server.base_url(), dir,
                            {"--concurrency", "2", "--duration", "3s", "--max-duration", "5s", "--idle-timeout", "60s"}),
               60s);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 20s) << r.err;
  EXPECT_NE(r.exit_code, 130) << r.err;
  auto o = read_outputs(dir);
  ASSERT_TRUE(o.result["stopped_early"].is_object()) << o.result.dump(2);
  EXPECT_NE(o.result["stopped_early"]["reason"].get<std::string>().find("--max-duration"), std::string::npos);
  EXPECT_FALSE(o.result["interrupted"].get<bool>());
  int cut = 0;
  for (const auto& rec : o.records) cut += rec["error_class"] == "stopped_early" ? 1 : 0;
  // The script repeats (ok, ok, stall): requests 0, 1, 3 and 4 complete, 2 and 5 hold the two
  // slots until the bound cuts them.
  EXPECT_EQ(cut, 2) << "the two stalled requests";
  EXPECT_EQ(o.result["completed"], 4);
}

// Issue 16: running out of descriptors showed as "canceled". Now a connect failure that names the
// client's limit and the fix (an open-loop run cannot be checked up front: its in-flight count is
// the server's doing).
TEST(Faults, RunningOutOfDescriptorsNamesTheClientsLimit) {
  auto srv = start_server({"--latency-model", "fixed", "--ttft", "400ms", "--itl", "1ms"});
  TempDir dir;
  const std::string cmd = "ulimit -n 48 && exec " + binary_path("llmload") + " run --base-url " + srv.base_url +
                          " --output " + dir.path() +
                          " --input-tokens 4 --output-tokens 2 --scenario server --request-rate 400 --num-requests 120"
                          " --seed 1 --quiet";
  auto r = run({"/bin/bash", "-c", cmd}, 60s);
  ASSERT_TRUE(std::filesystem::exists(dir.file("result.json"))) << r.err;
  auto o = read_outputs(dir);
  int limited = 0, canceled = 0;
  for (const auto& rec : o.records) {
    const std::string msg = rec["error"].is_string() ? rec["error"].get<std::string>() : "";
    if (msg.find("open-file limit") != std::string::npos) {
      ++limited;
      EXPECT_EQ(rec["error_class"], "connect") << rec.dump();
      EXPECT_NE(msg.find("ulimit -n"), std::string::npos) << msg;
    }
    canceled += rec["error_class"] == "canceled" ? 1 : 0;
  }
  EXPECT_GT(limited, 0) << o.result["errors"].dump();
  EXPECT_EQ(canceled, 0) << o.result["errors"].dump();
}

TEST(Signals, DrainIsBoundedByDrainTimeout) {
  FaultServer server({Fault::kStallForever});
  TempDir dir;
  Subprocess p(llmload_args(server.base_url(), dir,
                            {"--concurrency", "2", "--num-requests", "10", "--idle-timeout", "60s", "--drain-timeout", "1s"}));
  for (int i = 0; i < 100 && server.posts() < 2; ++i) std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  const int code = p.wait(30s);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(code, 130);
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 15s);
  auto o = read_outputs(dir);
  ASSERT_EQ(o.records.size(), 2u);
  for (const auto& rec : o.records) EXPECT_EQ(rec["error_class"], "stopped_early");  // not failures
  EXPECT_EQ(o.result["failed"], 0);
}

}  // namespace
}  // namespace llmload::testing
