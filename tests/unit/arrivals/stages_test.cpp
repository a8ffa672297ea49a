// Scenario stages: rate and concurrency stages at fixed times.

#include <gtest/gtest.h>

#include <cmath>

#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::config_error;
using testing::fixed_service;
using testing::simulate;
using testing::SimResult;

const TimePoint t0_stages(1000s);

ScenarioConfig staged(std::string_view plan, std::optional<std::int64_t> cap = std::nullopt,
                      std::string process = "poisson", std::uint64_t seed = 3) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kStages;
  c.arrivals.stages = parse_stages(plan);
  c.arrivals.process = std::move(process);
  c.max_inflight = cap;
  c.seed = seed;
  c.validate();
  return c;
}

SimResult run(const ScenarioConfig& cfg, Nanos service, Pacer** out = nullptr) {
  static std::unique_ptr<Pacer> keep;
  keep = make_pacer(cfg);
  if (out) *out = keep.get();
  return simulate(*keep, t0_stages, fixed_service(service), t0_stages + 3600s);
}

std::int64_t in_flight_at(const SimResult& r, TimePoint t) {
  std::int64_t n = 0;
  for (const auto& q : r.requests) {
    if (q.sent <= t && (!q.done || *q.done > t)) ++n;
  }
  return n;
}

std::vector<TimePoint> intended(const SimResult& r) {
  std::vector<TimePoint> v;
  for (const auto& q : r.requests) v.push_back(q.rel.intended);
  return v;
}

TEST(ParseStages, ReadsRateAndConcurrencyStages) {
  const auto s = parse_stages("rate:5@30s,rate:10@30s,concurrency:16@60s");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s[0].concurrency);
  EXPECT_EQ(s[0].value, 5);
  EXPECT_EQ(s[0].duration, Nanos(30s));
  EXPECT_EQ(s[1].value, 10);
  EXPECT_TRUE(s[2].concurrency);
  EXPECT_EQ(s[2].value, 16);
  EXPECT_EQ(s[2].duration, Nanos(60s));
  const auto t = parse_stages(" rate:2.5@500ms , concurrency:1@1m");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].value, 2.5);
  EXPECT_EQ(t[0].duration, Nanos(500ms));
  EXPECT_EQ(t[1].duration, Nanos(60s));
}

TEST(ParseStages, ErrorsNameTheBadPartAndGiveAnExample) {
  for (const char* bad : {"rate5@30s", "rate:5", "speed:5@1s", "rate:0@1s", "rate:-1@1s", "rate:x@1s",
                          "concurrency:2.5@1s", "concurrency:0@1s", "rate:5@0s", "rate:5@abc", "rate:5@30s,",
                          "rate:5@30s,,concurrency:2@1s"}) {
    const std::string msg = config_error([&] { parse_stages(bad); });
    ASSERT_FALSE(msg.empty()) << bad;
    EXPECT_NE(msg.find("--stages"), std::string::npos) << msg;
    EXPECT_NE(msg.find("e.g."), std::string::npos) << msg;
  }
  const std::string msg = config_error([] { parse_stages("rate:5@30s,conc:3@1s"); });
  EXPECT_NE(msg.find("'conc:3@1s'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stage 2"), std::string::npos) << msg;
  EXPECT_FALSE(config_error([] { parse_stages(""); }).empty());
}

TEST(Stages, RateStagesReleaseAtTheirRates) {
  const auto r = run(staged("rate:50@20s,rate:200@20s"), 10ms);
  EXPECT_TRUE(r.exhausted);
  std::int64_t n0 = 0, n1 = 0;
  for (const auto& q : r.requests) {
    ASSERT_TRUE(q.rel.stage == 0 || q.rel.stage == 1);
    if (q.rel.stage == 0) {
      ++n0;
      EXPECT_LT(q.rel.intended, t0_stages + 20s);
    } else {
      ++n1;
      EXPECT_GE(q.rel.intended, t0_stages + 20s);
      EXPECT_LT(q.rel.intended, t0_stages + 40s);
    }
    EXPECT_EQ(q.sent, q.rel.intended);  // the simulated driver is never late
    EXPECT_FALSE(q.rel.warmup);
  }
  EXPECT_NEAR(static_cast<double>(n0), 1000, 5 * std::sqrt(1000.0));
  EXPECT_NEAR(static_cast<double>(n1), 4000, 5 * std::sqrt(4000.0));
}

TEST(Stages, ConcurrencyStageKeepsExactlyNInFlight) {
  Pacer* p = nullptr;
  const auto r = run(staged("concurrency:8@10s"), 100ms, &p);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(r.max_in_flight, 8);
  // Completions at 0.1 s, 0.2 s, ... each release one more; those at exactly 10 s do not.
  EXPECT_EQ(r.requests.size(), 800u);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(in_flight_at(r, t0_stages + k * 100ms + 50ms), 8) << k;
  std::int64_t at_start = 0;
  for (const auto& q : r.requests) {
    EXPECT_EQ(q.rel.stage, 0);
    EXPECT_LT(q.rel.intended, t0_stages + 10s);
    if (q.rel.intended == t0_stages) ++at_start;
  }
  EXPECT_EQ(at_start, 8);
  // Closed loop: a slot's next request is intended at the completion that freed it.
  EXPECT_EQ(r.requests[8].rel.intended, t0_stages + 100ms);
  EXPECT_EQ(p->window_start(), t0_stages);
  EXPECT_EQ(p->window_end(), t0_stages + 10s);
}

TEST(Stages, BoundariesAreFixedEvenWhenAStageIsOverloaded) {
  const auto cfg = staged("rate:100@5s,rate:10@5s");
  const auto fast = run(cfg, 1ms);
  const auto slow = run(cfg, 30s);  // the server falls hopelessly behind
  EXPECT_TRUE(slow.exhausted);
  EXPECT_EQ(intended(fast), intended(slow));  // the schedule never depends on completions
  for (const auto& q : slow.requests) {
    if (q.rel.stage == 0) {
      EXPECT_LT(q.rel.intended, t0_stages + 5s);
    } else {
      EXPECT_EQ(q.rel.stage, 1);
      EXPECT_GE(q.rel.intended, t0_stages + 5s);
      EXPECT_LT(q.rel.intended, t0_stages + 10s);
    }
  }
  EXPECT_GT(slow.max_in_flight, 400);
}

TEST(Stages, CapHoldsArrivalsButKeepsTheirIntendedTimesAndStages) {
  const auto free_run = run(staged("rate:100@5s,rate:10@5s"), 1s);
  const auto capped = run(staged("rate:100@5s,rate:10@5s", 10), 1s);
  EXPECT_TRUE(capped.exhausted);
  EXPECT_LE(capped.max_in_flight, 10);
  ASSERT_EQ(free_run.requests.size(), capped.requests.size());
  bool some_late = false;
  for (std::size_t i = 0; i < capped.requests.size(); ++i) {
    EXPECT_EQ(capped.requests[i].rel.intended, free_run.requests[i].rel.intended) << i;
    EXPECT_EQ(capped.requests[i].rel.stage, free_run.requests[i].rel.stage) << i;
    EXPECT_GE(capped.requests[i].sent, capped.requests[i].rel.intended);
    some_late = some_late || capped.requests[i].sent > capped.requests[i].rel.intended + 1s;
  }
  EXPECT_TRUE(some_late);  // the wait shows as schedule lag
  // Stage-0 arrivals waiting for the cap go out after stage 0 has ended, still as stage 0.
  EXPECT_GT(capped.requests.back().sent, t0_stages + 10s);
}

TEST(Stages, ConcurrencyStageCountsRequestsStillInFlightFromTheStageBefore) {
  const auto r = run(staged("rate:20@10s,concurrency:4@10s,rate:20@10s"), 1s);
  EXPECT_TRUE(r.exhausted);
  std::int64_t n1 = 0;
  for (const auto& q : r.requests) {
    if (q.rel.stage != 1) continue;
    ++n1;
    EXPECT_GE(q.rel.intended, t0_stages + 10s);
    EXPECT_LT(q.rel.intended, t0_stages + 20s);
    EXPECT_LE(in_flight_at(r, q.sent), 4) << "released at " << (q.sent - t0_stages).count();
  }
  EXPECT_GT(n1, 30);  // about 4 per second for 9 s
  for (int s = 12; s < 20; ++s) EXPECT_EQ(in_flight_at(r, t0_stages + std::chrono::seconds(s) + 500ms), 4) << s;
  for (const auto& q : r.requests) {
    if (q.rel.stage == 2) {
      EXPECT_GE(q.rel.intended, t0_stages + 20s);
    }
    EXPECT_LT(q.rel.intended, t0_stages + 30s);
  }
}

TEST(Stages, SlotsOfAConcurrencyStageEndWithIt) {
  const auto r = run(staged("concurrency:4@5s,rate:10@5s"), 2s);
  EXPECT_TRUE(r.exhausted);
  std::int64_t n0 = 0;
  for (const auto& q : r.requests) {
    if (q.rel.stage == 0) {
      ++n0;
      EXPECT_LT(q.rel.intended, t0_stages + 5s);
    } else {
      EXPECT_GE(q.rel.intended, t0_stages + 5s);
    }
  }
  EXPECT_EQ(n0, 12);  // at 0, 2 s and 4 s; the completions at 6 s start nothing
  // Requests in flight at the boundary continue: those sent at 4 s complete at 6 s.
  std::int64_t stage0_in_flight = 0;
  for (const auto& q : r.requests) {
    if (q.rel.stage == 0 && q.sent <= t0_stages + 5500ms && q.done && *q.done > t0_stages + 5500ms) ++stage0_in_flight;
  }
  EXPECT_EQ(stage0_in_flight, 4);
  for (const auto& q : r.requests) EXPECT_TRUE(q.done.has_value());
}

TEST(Stages, RunEndsAfterTheLastStage) {
  Pacer* p = nullptr;
  const auto r = run(staged("concurrency:2@3s"), 1s, &p);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(r.requests.size(), 6u);  // at 0, 1 s, 2 s
  EXPECT_FALSE(p->wake_time());
  EXPECT_FALSE(p->next(t0_stages + 100s));
}

TEST(Stages, ConstantProcessInARateStage) {
  const auto r = run(staged("rate:10@10s", std::nullopt, "constant"), 1ms);
  ASSERT_EQ(r.requests.size(), 99u);  // 0.1 s ... 9.9 s; 10 s is the next stage's
  for (std::size_t i = 0; i < r.requests.size(); ++i) EXPECT_EQ(r.requests[i].rel.intended, t0_stages + (i + 1) * 100ms);
}

TEST(Stages, SameSeedSameStreamsOtherSeedOtherStreams) {
  const auto a = run(staged("rate:30@5s,concurrency:2@1s,rate:30@5s"), 10ms);
  const auto b = run(staged("rate:30@5s,concurrency:2@1s,rate:30@5s"), 10ms);
  const auto c = run(staged("rate:30@5s,concurrency:2@1s,rate:30@5s", std::nullopt, "poisson", 4), 10ms);
  EXPECT_EQ(intended(a), intended(b));
  EXPECT_NE(intended(a), intended(c));
}

TEST(Stages, WarmupAppliesToTheStartOfTheRun) {
  auto cfg = staged("rate:100@4s,rate:100@4s");
  cfg.warmup = parse_warmup("2s");
  cfg.validate();
  Pacer* p = nullptr;
  const auto r = run(cfg, 1ms, &p);
  for (const auto& q : r.requests) EXPECT_EQ(q.rel.warmup, q.rel.intended < t0_stages + 2s);
  EXPECT_EQ(p->window_start(), t0_stages + 2s);
  EXPECT_EQ(p->window_end(), t0_stages + 8s);

  auto by_count = staged("concurrency:1@2s");
  by_count.warmup = parse_warmup("10");
  by_count.validate();
  const auto q = run(by_count, 100ms, &p);
  ASSERT_GT(q.requests.size(), 11u);
  for (std::size_t i = 0; i < q.requests.size(); ++i) EXPECT_EQ(q.requests[i].rel.warmup, i < 10) << i;
  EXPECT_EQ(p->window_start(), t0_stages + 1s);
  EXPECT_EQ(p->window_end(), t0_stages + 2s);
}

TEST(Stages, StopEndsTheRun) {
  auto p = make_pacer(staged("rate:100@10s"));
  p->begin(t0_stages);
  while (p->next(t0_stages + 1s)) {
  }
  p->stop();
  EXPECT_TRUE(p->exhausted());
  EXPECT_FALSE(p->next(t0_stages + 5s));
  EXPECT_FALSE(p->wake_time());
}

}  // namespace
}  // namespace llmload
