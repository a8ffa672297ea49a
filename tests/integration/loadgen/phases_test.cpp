// Phases, minimums and validity with the real binaries over loopback: `--warmup auto` cuts the
// ramp-up of a run and says how in result.json and requests.jsonl; --min-requests and
// --min-duration keep a run issuing past its count; --max-duration stops it first; a server that
// answers with errors makes the run INVALID with the reasons named; a run sized by its SLO stops
// when its verdict is conclusive.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"

namespace llmload::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::vector<std::string> codes(const json& result) {
  std::vector<std::string> out;
  for (const auto& r : result["validity"]["reasons"]) out.push_back(r["code"].get<std::string>());
  return out;
}
bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(Phases, WarmupAutoCutsTheRampUpAndRecordsHow) {
  // The offered load ramps from 5 to 60 requests/s over the first 2 s of a 6 s run: throughput and
  // requests in flight climb, then hold. The server's TTFT jitter is seeded, so the run repeats.
  auto server = start_server({"--latency-model", "fixed", "--ttft", "40ms", "--itl", "5ms", "--jitter", "0.5",
                              "--seed", "7"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "server", "--request-rate", "60", "--ramp",
                               "linear", "--ramp-duration", "2s", "--ramp-start-rate", "5", "--duration", "6s",
                               "--warmup", "auto", "--input-tokens", "16", "--output-tokens", "8", "--seed", "3"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  const json& r = out.result;
  const json& w = r["window"];
  ASSERT_EQ(w["warmup"]["method"], "auto") << w.dump(2);
  const json& d = w["warmup"]["detection"];
  EXPECT_EQ(d["method"], "MSER-5");
  ASSERT_TRUE(d["found"].get<bool>()) << d["reason"];
  EXPECT_TRUE(d["applied"].get<bool>());
  for (const char* s : {"throughput", "ttft", "in_flight"}) {
    ASSERT_TRUE(d["series"].contains(s)) << s;
    EXPECT_TRUE(d["series"][s].contains("truncation_s")) << s;
    EXPECT_TRUE(d["series"][s].contains("reason")) << s;
  }
  EXPECT_TRUE(d["deciding_series"].is_string());
  EXPECT_EQ(d["cooldown"]["method"], "end of issuing");
  // The cut lies in the ramp's neighbourhood: not at the very start, not past the run's middle.
  const double start = w["start_s"].get<double>();
  EXPECT_DOUBLE_EQ(start, d["start_s"].get<double>());
  EXPECT_GE(start, 0.5);
  EXPECT_LE(start, 4.0);
  // The window ends at the duration's end (counted from the first request, which the auto warmup
  // does not move): the drain after it is not measured.
  double first_ms = 1e300;
  for (const auto& rec : out.records) first_ms = std::min(first_ms, rec["t_intended_ms"].get<double>());
  EXPECT_NEAR(w["end_s"].get<double>(), first_ms / 1e3 + 6.0, 1e-6);

  // requests.jsonl: exactly the requests intended before the cut are warmup, the rest measured.
  int warm = 0;
  int measured = 0;
  for (const auto& rec : out.records) {
    const bool before = rec["t_intended_ms"].get<double>() < start * 1e3;
    EXPECT_EQ(rec["warmup"].get<bool>(), before) << rec.dump();
    EXPECT_EQ(rec["in_window"].get<bool>(), !before) << rec.dump();
    warm += before ? 1 : 0;
    measured += before ? 0 : 1;
  }
  EXPECT_GT(warm, 5);
  EXPECT_EQ(r["requests"]["warmup"], warm);
  EXPECT_EQ(r["requests"]["in_window"], measured);
  EXPECT_EQ(r["completed"].get<int>() + r["failed"].get<int>(), measured);
  // Without the ramp in it, the window's send rate is above the whole run's average.
  const double whole_rate = static_cast<double>(out.records.size()) / 6.0;
  EXPECT_GT(r["load"]["achieved_send_rate"].get<double>(), whole_rate);
  EXPECT_NE(out.proc.out.find("Warmup auto (MSER-5"), std::string::npos) << out.proc.out;
}

// A stage plan that raises the load (a rate, then 32 in flight) is no server falling behind: the
// live watch starts over at each stage (it warned "the server is not keeping up" of a VALID, PASS
// run, taking the planned rise for a growing queue).
TEST(Phases, APlannedRiseBetweenStagesIsNoWarning) {
  auto server = start_server({});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "stages", "--stages",
                               "rate:4@5s,concurrency:32@7s", "--input-dist", "lognormal:512,256", "--output-dist",
                               "uniform:64,256"},
                         {}, 120s);
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  EXPECT_EQ(out.proc.err.find("not keeping up"), std::string::npos) << out.proc.err;
}

TEST(Phases, MinimumsKeepAClosedLoopRunIssuing) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "2ms"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "4",
                               "--num-requests", "10", "--min-requests", "120", "--min-duration", "1s",
                               "--input-tokens", "8", "--output-tokens", "4"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  const json& r = out.result;
  EXPECT_GE(r["requests"]["in_window"].get<int>(), 120);
  EXPECT_GE(r["window"]["length_s"].get<double>(), 1.0);
  EXPECT_EQ(r["minimums"]["min_requests"], 120);
  EXPECT_DOUBLE_EQ(r["minimums"]["min_duration_s"].get<double>(), 1.0);
  EXPECT_TRUE(r["minimums"]["met"].get<bool>());
  EXPECT_FALSE(r["minimums"]["max_duration_reached"].get<bool>());
  EXPECT_EQ(r["failed"], 0);
  EXPECT_EQ(r["validity"]["verdict"], "VALID") << r["validity"].dump(2);
  EXPECT_TRUE(r["validity"]["valid"].get<bool>());
}

TEST(Phases, MinimumRequestsContinueAnOpenLoopSchedule) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "2ms"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "server", "--request-rate", "100",
                               "--num-requests", "20", "--min-requests", "150", "--input-tokens", "8",
                               "--output-tokens", "4", "--seed", "9"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  EXPECT_EQ(out.result["requests"]["in_window"], 150);
  EXPECT_EQ(out.records.size(), 150u);
  EXPECT_TRUE(out.result["minimums"]["met"].get<bool>());
  EXPECT_FALSE(has(codes(out.result), "requests_below_minimum"));
  EXPECT_FALSE(has(codes(out.result), "too_few_samples"));
}

// --slo with no size: the run issues until the verdict is conclusive (docs/statistics.md,
// "Sequential stopping"). A server far within its bound PASSes at the first look; one far over
// it FAILs there; a run bounded before its first look says it is not conclusive.
TEST(Phases, AnSloSizedRunStopsWhenItsVerdictIsConclusive) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir dir;
  // Closed loop: no schedule to lag behind, so the verdict holds on a slow (sanitized) build too.
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "16",
                               "--slo", "ttft:2s", "--fail-on-slo", "--input-tokens", "8", "--output-tokens", "4"},
                         {}, 120s);
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  const json& r = out.result;
  ASSERT_TRUE(r["sequential"].is_object()) << r.dump(2).substr(0, 2000);
  EXPECT_TRUE(r["sequential"]["conclusive"].get<bool>());
  ASSERT_EQ(r["sequential"]["looks"].size(), 1u) << r["sequential"].dump(2);
  const auto n0 = r["sequential"]["looks"][0]["n"].get<std::int64_t>();
  EXPECT_EQ(r["sequential"]["looks"][0]["decision"], "PASS");
  // Issuing stopped at the look; what was in flight then is measured too.
  EXPECT_GE(r["requests"]["in_window"].get<std::int64_t>(), n0);
  EXPECT_LE(r["requests"]["in_window"].get<std::int64_t>(), n0 + 16);  // at most the 16 then in flight
  EXPECT_EQ(r["slo"]["verdict"], "PASS");
  EXPECT_NE(out.proc.out.find("SLO-sized run: conclusive (PASS)"), std::string::npos) << out.proc.out;
}

TEST(Phases, AnSloSizedRunFailsAClearlySlowServerAtTheFirstLook) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "30ms", "--itl", "1ms"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "16",
                               "--slo", "ttft:10ms", "--fail-on-slo", "--input-tokens", "8", "--output-tokens", "4"},
                         {}, 120s);
  EXPECT_EQ(out.proc.exit_code, 3) << out.proc.err;
  const json& r = out.result;
  ASSERT_TRUE(r["sequential"].is_object());
  EXPECT_TRUE(r["sequential"]["conclusive"].get<bool>());
  ASSERT_EQ(r["sequential"]["looks"].size(), 1u);
  EXPECT_EQ(r["sequential"]["looks"][0]["decision"], "FAIL");
  EXPECT_LE(r["requests"]["in_window"].get<std::int64_t>(), r["sequential"]["looks"][0]["n"].get<std::int64_t>() + 16);
  EXPECT_EQ(r["slo"]["verdict"], "FAIL");
}

TEST(Phases, AnSloSizedRunCutByMaxDurationSaysItIsNotConclusive) {
  // About 14 ms a request at concurrency 2: some 280 requests in 2 s, far from the first look's 1,000
  // (closed loop: valid on a slow build too).
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "1ms"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "2",
                               "--max-duration", "2s", "--slo", "ttft:2s", "--fail-on-slo", "--input-tokens", "8",
                               "--output-tokens", "4"},
                         {}, 60s);
  EXPECT_EQ(out.proc.exit_code, 4) << out.proc.err;  // INCONCLUSIVE
  const json& r = out.result;
  ASSERT_TRUE(r["sequential"].is_object());
  EXPECT_FALSE(r["sequential"]["conclusive"].get<bool>());
  EXPECT_TRUE(r["sequential"]["looks"].empty());
  EXPECT_TRUE(r["minimums"]["max_duration_reached"].get<bool>());
  EXPECT_NE(out.proc.out.find("the SLO verdict is not conclusive"), std::string::npos) << out.proc.out;
}

// A size given, or no SLO: a fixed-size run, no sequential stopping.
TEST(Phases, AGivenSizeIsNotSequential) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "8",
                               "--num-requests", "120", "--slo", "ttft:2s", "--input-tokens", "8",
                               "--output-tokens", "4"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  EXPECT_TRUE(out.result["sequential"].is_null());
  EXPECT_EQ(out.result["requests"]["in_window"], 120);
}

// Scheduled sends spin the last --schedule-spin to their due time (default 100 us) or rely on the
// timer alone (0): either way every request is sent once, on or after its intended time, and the
// setting is part of the run's conditions.
TEST(Phases, ScheduleSpinIsRecordedAndKeepsTheSchedule) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  for (const std::string spin : {"default", "0", "500us"}) {
    SCOPED_TRACE(spin);
    TempDir dir;
    std::vector<std::string> args = {"--base-url", server.base_url, "--request-rate", "200", "--num-requests", "100",
                                     "--input-tokens", "8", "--output-tokens", "2", "--seed", "3"};
    if (spin != "default") args.insert(args.end(), {"--schedule-spin", spin});
    auto out = run_llmload(dir, args, {}, 60s);
    ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
    const double want = spin == "default" ? 100.0 : spin == "0" ? 0.0 : 500.0;
    EXPECT_DOUBLE_EQ(out.result["conditions"]["scenario"]["schedule_spin_us"].get<double>(), want);
    ASSERT_EQ(out.records.size(), 100u);
    for (const auto& r : out.records) {
      EXPECT_GE(r["t_send_ms"].get<double>(), r["t_intended_ms"].get<double>()) << "sent before its time: " << r.dump();
    }
    EXPECT_EQ(out.result["completed"], 100);
  }
}

TEST(Phases, MaxDurationStopsBeforeTheMinimumsAndTheRunIsInvalid) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "10ms", "--itl", "2ms"});
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "2",
                               "--num-requests", "100000", "--min-requests", "100000", "--max-duration", "1s",
                               "--input-tokens", "8", "--output-tokens", "4"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 60s);
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;
  const json& r = out.result;
  EXPECT_LT(r["requests"]["issued"].get<int>(), 100000);
  for (const auto& rec : out.records) EXPECT_LT(rec["t_intended_ms"].get<double>(), 1000.0) << rec.dump();
  EXPECT_TRUE(r["minimums"]["max_duration_reached"].get<bool>());
  EXPECT_FALSE(r["minimums"]["met"].get<bool>());
  EXPECT_EQ(r["validity"]["verdict"], "INVALID");
  ASSERT_TRUE(has(codes(r), "requests_below_minimum")) << r["validity"].dump(2);
  EXPECT_NE(out.proc.out.find("RUN INVALID [requests_below_minimum]"), std::string::npos) << out.proc.out;
}

TEST(Phases, ServerErrorsMakeTheRunInvalidWithEveryReasonNamed) {
  // A third of the generation requests get HTTP 503 (seeded, so the same ones every time).
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms", "--fault",
                              "0.3:error=503", "--seed", "4"});
  TempDir dir;
  auto out = run_llmload(dir, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "4",
                               "--num-requests", "150", "--input-tokens", "8", "--output-tokens", "4"});
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.err;  // an INVALID run is still a run: its results are written
  const json& r = out.result;
  const int failed = r["failed"].get<int>();
  EXPECT_GT(failed, 150 * 0.15);
  EXPECT_LT(failed, 150 * 0.45);
  EXPECT_EQ(r["errors"]["by_http_status"]["503"]["count"], failed);
  const json& v = r["validity"];
  EXPECT_FALSE(v["valid"].get<bool>());
  EXPECT_EQ(v["verdict"], "INVALID");
  const auto c = codes(r);
  EXPECT_TRUE(has(c, "error_rate")) << v.dump(2);
  EXPECT_TRUE(has(c, "server_errors")) << v.dump(2);
  EXPECT_EQ(v["reason"], v["reasons"][0]["message"]);
  for (const auto& reason : v["reasons"]) {
    if (reason["code"] == "server_errors") {
      EXPECT_NE(reason["message"].get<std::string>().find("503 x" + std::to_string(failed)), std::string::npos)
          << reason.dump();
    }
    if (reason["code"] == "error_rate") {
      EXPECT_NE(reason["message"].get<std::string>().find(std::to_string(failed) + " of 150"), std::string::npos)
          << reason.dump();
    }
    // The console prints every reason.
    EXPECT_NE(out.proc.out.find(reason["message"].get<std::string>()), std::string::npos) << reason.dump();
  }
  EXPECT_NE(out.proc.out.find("RUN INVALID [server_errors]"), std::string::npos) << out.proc.out;

  // A threshold above the failure rate: the error rate passes, the 5xx answers still do not.
  TempDir dir2;
  auto lenient = run_llmload(dir2, {"--base-url", server.base_url, "--scenario", "concurrency", "--concurrency", "4",
                                    "--num-requests", "150", "--input-tokens", "8", "--output-tokens", "4",
                                    "--max-error-rate", "0.9"});
  ASSERT_EQ(lenient.proc.exit_code, 0) << lenient.proc.err;
  EXPECT_FALSE(has(codes(lenient.result), "error_rate"));
  EXPECT_TRUE(has(codes(lenient.result), "server_errors"));
  EXPECT_DOUBLE_EQ(lenient.result["validity"]["max_error_rate"].get<double>(), 0.9);
}

TEST(Phases, SettingsThatCannotWorkAreRefusedBeforeAnythingIsSent) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> said;
  };
  const std::vector<Case> cases = {
      {{"--min-duration", "10s", "--max-duration", "5s"}, {"--min-duration", "--max-duration", "raise"}},
      {{"--duration", "10s", "--max-duration", "5s"}, {"--duration", "--max-duration"}},
      {{"--scenario", "offline", "--warmup", "auto"}, {"--warmup auto", "offline"}},
      {{"--max-error-rate", "2"}, {"--max-error-rate", "between 0 and 1"}},
      {{"--schedule-spin", "1s"}, {"--schedule-spin", "at most 10ms"}},
      {{"--schedule-spin", "soon"}, {"--schedule-spin", "invalid duration 'soon'"}},
  };
  for (const auto& c : cases) {
    TempDir dir;
    std::vector<std::string> args = {"--base-url", server.base_url, "--num-requests", "5"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto out = run_llmload(dir, args, {}, 60s);
    EXPECT_EQ(out.proc.exit_code, 2) << out.proc.err;
    for (const auto& s : c.said) EXPECT_NE(out.proc.err.find(s), std::string::npos) << s << " in: " << out.proc.err;
    EXPECT_TRUE(out.records.empty());
  }
}

}  // namespace
}  // namespace llmload::testing
