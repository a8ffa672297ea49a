// Open-loop rate with an in-flight cap, and timed arrivals (trace replay).

#include <gtest/gtest.h>

#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::config_error;
using testing::fixed_service;
using testing::simulate;

const TimePoint t0_cap(500s);

TEST(ServerCap, NeverMoreThanTheCapInFlightAndIntendedTimesUnchanged) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = 100;
  cfg.num_requests = 2000;
  cfg.max_inflight = 5;
  cfg.seed = 21;
  cfg.validate();
  const Schedule uncapped = build_schedule(cfg);  // the cap never changes the schedule
  auto p = make_pacer(cfg);
  // 200 ms each at 100/s would need about 20 in flight: the cap binds all the time.
  const auto r = simulate(*p, t0_cap, fixed_service(200ms), t0_cap + 3600s);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(r.max_in_flight, 5);
  ASSERT_EQ(r.requests.size(), uncapped.arrivals.size());
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    EXPECT_EQ(r.requests[i].rel.intended, t0_cap + uncapped.arrivals[i]) << i;
    EXPECT_GE(r.requests[i].sent, r.requests[i].rel.intended);
  }
  // The wait shows as schedule lag: the last request goes out long after its arrival.
  EXPECT_GT(r.requests.back().sent - r.requests.back().rel.intended, 30s);
  EXPECT_EQ(p->window_start(), t0_cap + uncapped.arrivals.front());
}

TEST(ServerCap, ABindingCapReleasesOnlyOnCompletion) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = 1000;
  cfg.num_requests = 10;
  cfg.max_inflight = 2;
  cfg.arrivals.process = "constant";
  cfg.validate();
  auto p = make_pacer(cfg);
  p->begin(t0_cap);
  EXPECT_TRUE(p->next(t0_cap + 1s));
  EXPECT_TRUE(p->next(t0_cap + 1s));
  EXPECT_FALSE(p->next(t0_cap + 1s));
  EXPECT_FALSE(p->wake_time());  // only a completion can release more
  p->on_complete(0, t0_cap + 2s);
  const auto r = p->next(t0_cap + 2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->intended, t0_cap + 3ms);  // its own arrival time, not the completion
}

TEST(TimedArrivals, UsedVerbatim) {
  const std::vector<Nanos> trace = {0ms, 0ms, 5ms, 1s, 1s, 2500ms, 7s};
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.timed_arrivals = true;
  cfg.validate();  // no --request-rate needed, and no default request count
  EXPECT_FALSE(cfg.num_requests);
  const auto s = build_schedule(cfg, &trace);
  EXPECT_EQ(s.arrivals, trace);
  EXPECT_EQ(s.warmup_requests, 0);

  auto p = make_pacer(cfg, &trace);
  const auto r = simulate(*p, t0_cap, fixed_service(10ms), t0_cap + 60s);
  EXPECT_TRUE(r.exhausted);
  ASSERT_EQ(r.requests.size(), trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) EXPECT_EQ(r.requests[i].rel.intended, t0_cap + trace[i]);
}

TEST(TimedArrivals, WarmupByCountAndByTime) {
  const std::vector<Nanos> trace = {0ms, 100ms, 200ms, 1s, 1100ms, 3s};
  EXPECT_EQ(schedule_from_arrivals(trace, parse_warmup("2")).warmup_requests, 2);
  EXPECT_EQ(schedule_from_arrivals(trace, parse_warmup("1s")).warmup_requests, 3);  // those before 1 s
  EXPECT_EQ(schedule_from_arrivals(trace, parse_warmup("10")).warmup_requests, 6);
  EXPECT_EQ(schedule_from_arrivals(trace, WarmupSpec{}).warmup_requests, 0);

  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.timed_arrivals = true;
  cfg.warmup = parse_warmup("1s");
  cfg.validate();
  auto p = make_pacer(cfg, &trace);
  const auto r = simulate(*p, t0_cap, fixed_service(1ms), t0_cap + 60s);
  ASSERT_EQ(r.requests.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(r.requests[i].rel.warmup, i < 3) << i;
  EXPECT_EQ(p->window_start(), t0_cap + 1s);
}

TEST(TimedArrivals, NumRequestsAndDurationCutTheMeasuredPart) {
  const std::vector<Nanos> trace = {0ms, 100ms, 200ms, 1s, 1100ms, 3s};
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.timed_arrivals = true;
  cfg.warmup = parse_warmup("2");
  cfg.num_requests = 3;
  cfg.validate();
  auto s = build_schedule(cfg, &trace);
  EXPECT_EQ(s.arrivals, (std::vector<Nanos>{0ms, 100ms, 200ms, 1s, 1100ms}));
  EXPECT_EQ(s.warmup_requests, 2);

  cfg.num_requests.reset();
  cfg.warmup = WarmupSpec{};
  cfg.duration = 1s;  // window from the first request (0) to 1 s
  s = build_schedule(cfg, &trace);
  EXPECT_EQ(s.arrivals, (std::vector<Nanos>{0ms, 100ms, 200ms, 1s}));
}

TEST(TimedArrivals, UnsortedOrNegativeOffsetsAreConfigErrors) {
  const std::string unsorted = config_error([] { schedule_from_arrivals({0ms, 2s, 1s}, {}); });
  EXPECT_NE(unsorted.find("request 2"), std::string::npos) << unsorted;
  EXPECT_NE(unsorted.find("sort"), std::string::npos) << unsorted;
  EXPECT_FALSE(config_error([] { schedule_from_arrivals({-1ms, 2s}, {}); }).empty());
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.timed_arrivals = true;
  cfg.validate();
  const std::vector<Nanos> bad = {1s, 0s};
  EXPECT_FALSE(config_error([&] { make_pacer(cfg, &bad); }).empty());
}

TEST(TimedArrivals, HonourTheCap) {
  std::vector<Nanos> trace(50, 0ms);
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.timed_arrivals = true;
  cfg.max_inflight = 4;
  cfg.validate();
  auto p = make_pacer(cfg, &trace);
  const auto r = simulate(*p, t0_cap, fixed_service(1s), t0_cap + 600s);
  EXPECT_EQ(r.max_in_flight, 4);
  EXPECT_EQ(r.requests.size(), 50u);
  for (const auto& q : r.requests) EXPECT_EQ(q.rel.intended, t0_cap);
}

}  // namespace
}  // namespace llmload
