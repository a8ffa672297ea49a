// The RunController's phases (loadgen/run_controller.hpp): warmup auto, minimum requests and
// durations, the maximum duration, stopping early and the validity of a run, on a manual clock
// against the scripted FakeServer.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fake_server.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/schedule.hpp"
#include "run_controller_harness.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using analysis::Metric;
using testing::FakeServer;
using testing::Script;
using namespace run_controller_test;

// ---- phases: warmup auto, minimums, max duration, early stop, validity ----

TEST(RunController, WarmupAutoDiscardsAColdStart) {
  // The server is cold for its first second: TTFT 400 ms instead of 40 ms.
  auto cfg = concurrency(4, 400);
  cfg.warmup = parse_warmup("auto");
  TimePoint start{};
  Harness h(cfg, [&](std::uint64_t, TimePoint now) {
    Script s;
    s.ttft = now - start < 1s ? 400ms : 40ms;
    s.itl = 5ms;
    return s;
  });
  start = h.clock.now();
  auto m = h.run();
  ASSERT_TRUE(m.window.detection);
  const auto& d = *m.window.detection;
  EXPECT_TRUE(d.found) << d.summary.reason;
  EXPECT_EQ(m.window.warmup_method, "auto");
  // Steady state starts once the cold requests (sent before 1 s, done by 1.25 s) are over.
  EXPECT_GE(m.window.start, 1s);
  EXPECT_LE(m.window.start, 2500ms);
  EXPECT_EQ(m.window.start, d.start);
  // The records before the window are warmup, the rest measured: requests.jsonl shows it.
  std::int64_t warm = 0;
  for (const auto& r : h.ctl->records()) {
    EXPECT_EQ(r.warmup, r.t_intended < m.window.start) << r.index;
    EXPECT_EQ(r.in_window, !r.warmup) << r.index;
    warm += r.warmup ? 1 : 0;
  }
  EXPECT_GT(warm, 12);  // at least the cold ones
  EXPECT_EQ(m.warmup, warm);
  EXPECT_EQ(m.in_window, 400 - warm);
  // No cold request is left in the statistics.
  EXPECT_NEAR(ms(m.latency.at(Metric::kTtft).max_us), 40.0, 0.1);
  EXPECT_EQ(m.latency.at(Metric::kTtft).count, m.completed);
  // The window ends where issuing ended (the last request's intended time), not at the drain.
  Nanos last_intended{0};
  Nanos last_done{0};
  for (const auto& r : h.ctl->records()) {
    last_intended = std::max(last_intended, r.t_intended);
    last_done = std::max(last_done, *r.t_done);
  }
  EXPECT_EQ(m.window.end, last_intended);
  ASSERT_TRUE(m.window.drain_end);
  EXPECT_EQ(*m.window.drain_end, last_done);
  // The artifact says how the window was chosen.
  const auto j = analysis::metrics_json(m);
  const auto& w = j["window"];
  EXPECT_EQ(w["warmup"]["method"], "auto");
  EXPECT_EQ(w["warmup"]["detection"]["method"], "MSER-5");
  EXPECT_TRUE(w["warmup"]["detection"]["found"].get<bool>());
  EXPECT_NEAR(w["warmup"]["detection"]["start_s"].get<double>(), w["start_s"].get<double>(), 1e-9);
  EXPECT_GT(w["warmup"]["detection"]["interval_s"].get<double>(), 0.0);
  for (const char* series : {"throughput", "ttft", "in_flight"}) {
    EXPECT_TRUE(w["warmup"]["detection"]["series"].contains(series)) << series;
  }
  EXPECT_EQ(w["warmup"]["detection"]["cooldown"]["method"], "end of issuing");
  EXPECT_NE(w["method"].get<std::string>().find("warmup auto"), std::string::npos);
  EXPECT_EQ(j["requests"]["warmup"], warm);
}

// A run longer than the record store's batch: its records and output events are read back from
// the temporary file after the run (memory flat while it runs), and the auto warmup's
// re-accumulation sees every event (issue 16).
TEST(RunController, RecordsKeptOutOfMemoryComeBackWholeAfterTheRun) {
  const std::int64_t n = 3000;  // 2 batches of 1,024 spilled
  auto cfg = concurrency(4, n);
  cfg.warmup = parse_warmup("auto");
  TimePoint start{};
  std::uint64_t seen = 0;
  Harness h(cfg, [&](std::uint64_t, TimePoint now) {
    Script s;
    s.ttft = now - start < 1s ? 400ms : 40ms;
    s.itl = 5ms;
    s.tokens = 6;
    return s;
  });
  h.ctl->on_record = [&](const analysis::RequestRecord&) { ++seen; };
  start = h.clock.now();
  auto m = h.run();
  EXPECT_FALSE(h.ctl->record_spill_error());
  EXPECT_EQ(seen, static_cast<std::uint64_t>(n));
  const auto& records = h.ctl->records();
  ASSERT_EQ(records.size(), static_cast<std::size_t>(n));
  std::vector<bool> index_seen(static_cast<std::size_t>(n), false);
  for (const auto& r : records) {
    ASSERT_LT(r.index, static_cast<std::uint64_t>(n));
    EXPECT_FALSE(index_seen[r.index]) << r.index;
    index_seen[r.index] = true;
    EXPECT_TRUE(r.ok()) << r.index;
    EXPECT_EQ(r.output_tokens, 6);
  }
  ASSERT_TRUE(m.window.detection && m.window.detection->found);
  EXPECT_GE(m.window.start, 1s);
  EXPECT_EQ(m.warmup + m.in_window, n);
  EXPECT_EQ(m.completed, m.in_window);
  // Every measured request's 5 gaps re-accumulated from the events read back.
  EXPECT_EQ(m.latency.at(Metric::kItl).count, 5 * m.completed);
  EXPECT_NEAR(m.latency.at(Metric::kItl).mean_us, 5'000, 1);
  EXPECT_NEAR(ms(m.latency.at(Metric::kTtft).max_us), 40.0, 0.1);
}

TEST(RunController, WarmupAutoWithoutSteadyStateKeepsTheWholeRunAndSaysSo) {
  // TTFT keeps growing for the whole run: there is no steady state to find.
  auto cfg = concurrency(2, 300);
  cfg.warmup = parse_warmup("auto");
  TimePoint start{};
  Harness h(cfg, [&](std::uint64_t, TimePoint now) {
    Script s;
    s.ttft = 20ms + (now - start) / 20;
    s.tokens = 2;
    return s;
  });
  start = h.clock.now();
  auto m = h.run();
  ASSERT_TRUE(m.window.detection);
  EXPECT_FALSE(m.window.detection->found);
  EXPECT_NE(m.window.detection->summary.reason.find("no steady state"), std::string::npos)
      << m.window.detection->summary.reason;
  EXPECT_EQ(m.warmup, 0);
  EXPECT_EQ(m.window.start, Nanos(0));
  EXPECT_EQ(m.in_window, 300);
  const auto j = analysis::metrics_json(m);
  EXPECT_FALSE(j["window"]["warmup"]["detection"]["found"].get<bool>());
  EXPECT_FALSE(j["window"]["warmup"]["detection"]["applied"].get<bool>());
  EXPECT_NE(j["window"]["method"].get<std::string>().find("no steady state"), std::string::npos);
  EXPECT_NE(analysis::console_report(m, "t").find("no steady state found"), std::string::npos);
}

TEST(RunController, MinimumRequestsExtendACountedRun) {
  auto cfg = concurrency(2, 10);
  cfg.min_requests = 150;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.in_window, 150);
  EXPECT_EQ(m.completed, 150);
  EXPECT_TRUE(m.minimums.met);
  EXPECT_FALSE(m.invalid) << m.invalid_reason;
  EXPECT_EQ(h.ctl->records().size(), 150u);
}

TEST(RunController, MinimumDurationExtendsACountedRun) {
  // 8 in flight, 80 ms each: 100 requests/s; 20 requests would take 0.2 s.
  auto cfg = concurrency(8, 20);
  cfg.min_duration = 3s;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_GE(m.window.length(), 3s);
  EXPECT_GE(m.in_window, 290);
  EXPECT_LE(m.in_window, 320);
  EXPECT_TRUE(m.minimums.met);
  EXPECT_FALSE(has_code(m, "duration_below_minimum"));
}

TEST(RunController, MinimumRequestsExtendADurationRunAndItsWindow) {
  // 2 in flight, 80 ms each: 25 requests/s, so 1 s gives 25 of the 100 required.
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 2;
  cfg.duration = 1s;
  cfg.min_requests = 100;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.in_window, 100);
  // The window runs to the release of the 100th measured request, not to 1 s.
  Nanos last{0};
  for (const auto& r : h.ctl->records()) last = std::max(last, r.t_intended);
  EXPECT_EQ(m.window.end, last);
  EXPECT_GT(m.window.length(), 3s);
  EXPECT_NE(m.window.method.find("extended"), std::string::npos) << m.window.method;
  EXPECT_TRUE(m.minimums.met);
}

TEST(RunController, MaxDurationStopsTheRunBeforeItsMinimums) {
  auto cfg = concurrency(2, 1000);
  cfg.min_requests = 1000;
  cfg.max_duration = 2s;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  // 25 requests/s for 2 s.
  EXPECT_GE(m.in_window, 48);
  EXPECT_LE(m.in_window, 52);
  for (const auto& r : h.ctl->records()) EXPECT_LT(r.t_intended, 2s);
  EXPECT_TRUE(m.minimums.max_duration_reached);
  EXPECT_FALSE(m.minimums.met);
  ASSERT_TRUE(has_code(m, "requests_below_minimum"));
  for (const auto& r : m.validity_reasons) {
    if (r.code == "requests_below_minimum") {
      EXPECT_NE(r.message.find("--max-duration"), std::string::npos) << r.message;
      EXPECT_NE(r.message.find("--min-requests 1000"), std::string::npos) << r.message;
    }
  }
  const auto j = analysis::metrics_json(m);
  EXPECT_FALSE(j["minimums"]["met"].get<bool>());
  EXPECT_TRUE(j["minimums"]["max_duration_reached"].get<bool>());
  EXPECT_DOUBLE_EQ(j["minimums"]["max_duration_s"].get<double>(), 2.0);
  EXPECT_EQ(j["minimums"]["min_requests"], 1000);
  EXPECT_EQ(j["validity"]["verdict"], "INVALID");
}

TEST(RunController, MinimumsExtendMultiTurnSessions) {
  auto cfg = concurrency(2, 12);
  cfg.turns = 3;
  cfg.min_requests = 30;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.in_window, 30);
  std::int64_t max_session = 0;
  for (const auto& r : h.ctl->records()) max_session = std::max(max_session, r.session);
  EXPECT_GE(max_session, 9);  // 30 turns of 3: at least 10 sessions

  // Open-loop sessions kept going past the window for the minimum count, cut at the hard maximum.
  ScenarioConfig srv;
  srv.kind = ScenarioKind::kServer;
  srv.request_rate = 20;
  srv.turns = 2;
  srv.duration = 1s;
  srv.min_requests = 1000;
  srv.max_duration = 2s + 500ms;
  srv.seed = 4;
  Harness g(srv, [](std::uint64_t, TimePoint) { return Script{}; });
  auto n = g.run();
  for (const auto& r : g.ctl->records()) EXPECT_LT(r.t_intended, 2500ms) << r.index;
  EXPECT_TRUE(n.minimums.max_duration_reached);
  EXPECT_LE(n.window.end, Nanos(2500ms));
  EXPECT_GT(n.window.end, Nanos(1500ms));  // past the 1 s window: the minimum kept it going
  EXPECT_TRUE(has_code(n, "requests_below_minimum"));
}

ScenarioConfig server(double rate, std::uint64_t seed) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = rate;
  cfg.seed = seed;
  return cfg;
}

TEST(RunController, OpenLoopMinimumsContinueTheSameArrivalProcess) {
  auto cfg = server(50, 5);
  cfg.num_requests = 40;
  cfg.min_requests = 120;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.in_window, 120);
  // Exactly the first 120 arrivals of the seed's process: as if --num-requests 120 had been asked.
  auto whole = server(50, 5);
  whole.num_requests = 120;
  whole.validate();
  const Schedule expected = build_schedule(whole);
  auto recs = analysis::to_vector(h.ctl->records());
  std::sort(recs.begin(), recs.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  ASSERT_EQ(recs.size(), expected.arrivals.size());
  for (std::size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(recs[i].t_intended, expected.arrivals[i]) << i;
  EXPECT_FALSE(has_code(m, "requests_below_minimum"));
  EXPECT_FALSE(has_code(m, "too_few_samples"));
}

TEST(RunController, OpenLoopMinimumDurationExtendsADurationRun) {
  auto cfg = server(50, 8);
  cfg.duration = 1s;
  cfg.min_duration = 3s;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_EQ(m.window.length(), 3s);
  for (const auto& r : h.ctl->records()) EXPECT_LE(r.t_intended, m.window.end);
  // About 150 arrivals in 3 s at 50/s (Poisson: +- 4 sigma).
  EXPECT_GT(m.in_window, 100);
  EXPECT_LT(m.in_window, 200);
  EXPECT_TRUE(m.minimums.met);
}

TEST(RunController, StopEarlyStopsIssuingWithoutInterrupting) {
  auto cfg = concurrency(2, 1000);
  RunController* ctl = nullptr;
  TimePoint stop_time{};
  Harness h(cfg, [&](std::uint64_t n, TimePoint now) {
    if (n == 60) {
      stop_time = now;
      ctl->stop_early("TTFT and the queue grow without bound");
      ctl->stop_early("a second reason is ignored");
    }
    return Script{};
  });
  ctl = h.ctl.get();
  auto m = h.run();
  EXPECT_FALSE(h.ctl->interrupted());
  ASSERT_TRUE(h.ctl->stopped_early());
  EXPECT_EQ(*h.ctl->stopped_early(), "TTFT and the queue grow without bound");
  ASSERT_TRUE(m.stopped_early);
  EXPECT_EQ(*m.stopped_early, "TTFT and the queue grow without bound");
  // Nothing more was released after the stop; in-flight requests finished.
  EXPECT_EQ(m.in_window, 61);
  EXPECT_EQ(m.completed, 61);
  // The window ends where issuing stopped: the drain after it is not in the throughput.
  EXPECT_EQ(m.window.end, stop_time - h.ctl->start_time());
  EXPECT_NE(m.window.method.find("stopped early"), std::string::npos);
  const auto j = analysis::metrics_json(m);
  EXPECT_EQ(j["stopped_early"]["reason"], "TTFT and the queue grow without bound");
  EXPECT_NE(analysis::console_report(m, "t").find("Stopped early: TTFT"), std::string::npos);

  Harness plain(concurrency(1, 2), [](std::uint64_t, TimePoint) { return Script{}; });
  auto n = plain.run();
  EXPECT_FALSE(n.stopped_early);
  EXPECT_TRUE(analysis::metrics_json(n)["stopped_early"].is_null());
}

TEST(RunController, ValidityNamesEveryReason) {
  // 20 requests, every 4th answered 503: 25% failed, 15 samples for p99.
  Harness h(concurrency(1, 20), [](std::uint64_t n, TimePoint) {
    Script s;
    if (n % 4 == 3) {
      s.status = 503;
      s.error_body = R"({"error":{"message":"overloaded"}})";
    }
    return s;
  });
  auto m = h.run();
  EXPECT_EQ(m.failed, 5);
  EXPECT_EQ(codes(m), (std::vector<std::string>{"too_few_samples", "error_rate", "server_errors"}));
  EXPECT_TRUE(m.invalid);
  EXPECT_EQ(m.invalid_reason, m.validity_reasons.front().message);
  for (const auto& r : m.validity_reasons) {
    if (r.code == "too_few_samples") {
      EXPECT_NE(r.message.find("p99 needs at least 100"), std::string::npos) << r.message;
    }
    if (r.code == "error_rate") {
      EXPECT_NE(r.message.find("5 of 20"), std::string::npos) << r.message;
    }
    if (r.code == "server_errors") {
      EXPECT_NE(r.message.find("503 x5"), std::string::npos) << r.message;
      EXPECT_NE(r.message.find("overloaded"), std::string::npos) << r.message;
    }
  }
  // Closed loop: every check but the schedule lag.
  EXPECT_EQ(m.validity_checks,
            (std::vector<std::string>{"too_few_samples", "error_rate", "server_errors"}));
  const std::string console = analysis::console_report(m, "t");
  EXPECT_NE(console.find("INVALID"), std::string::npos);
  for (const auto& r : m.validity_reasons) EXPECT_NE(console.find(r.message), std::string::npos) << r.code;

  // A higher threshold lets the error rate pass; the 5xx answers are still a reason.
  auto lenient = concurrency(1, 20);
  lenient.max_error_rate = 0.5;
  Harness g(lenient, [](std::uint64_t n, TimePoint) {
    Script s;
    if (n % 4 == 3) s.status = 500;
    return s;
  });
  auto k = g.run();
  EXPECT_FALSE(has_code(k, "error_rate"));
  EXPECT_TRUE(has_code(k, "server_errors"));
}

TEST(RunController, EnoughSuccessfulRequestsAreValid) {
  Harness h(concurrency(4, 100), [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_FALSE(m.invalid) << m.invalid_reason;
  EXPECT_TRUE(m.minimums.met);
  EXPECT_EQ(m.minimums.required_samples, 100);
  const auto j = analysis::metrics_json(m);
  EXPECT_TRUE(j["validity"]["valid"].get<bool>());
  EXPECT_EQ(j["validity"]["verdict"], "VALID");
  EXPECT_TRUE(j["validity"]["reasons"].empty());
  EXPECT_TRUE(j["validity"]["reason"].is_null());
  EXPECT_FALSE(j["validity"]["checked"].get<bool>());  // no schedule-lag check in closed loop

  // Asking for p99.9 needs 1,000 samples.
  auto deep = concurrency(4, 100);
  deep.metric_percentiles = {50, 99.9};
  Harness d(deep, [](std::uint64_t, TimePoint) { return Script{}; });
  auto n = d.run();
  EXPECT_EQ(n.minimums.required_samples, 1000);
  EXPECT_EQ(codes(n), std::vector<std::string>{"too_few_samples"});
}

TEST(RunController, AShardLeavesSamplesAndMinimumsToTheMergedRun) {
  auto cfg = concurrency(2, 10);
  cfg.shard.count = 2;
  cfg.shard.index = 0;
  Harness h(cfg, [](std::uint64_t, TimePoint) { return Script{}; });
  auto m = h.run();
  EXPECT_FALSE(has_code(m, "too_few_samples"));
  EXPECT_FALSE(m.minimums.checked);
  EXPECT_FALSE(m.invalid);
}

}  // namespace
}  // namespace llmload
