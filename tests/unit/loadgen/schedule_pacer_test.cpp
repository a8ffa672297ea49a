#include <gtest/gtest.h>

#include <cmath>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/schedule.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;

ScenarioConfig server_cfg(double rate, std::int64_t n, std::uint64_t seed) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = rate;
  c.num_requests = n;
  c.seed = seed;
  c.validate();
  return c;
}

TEST(Schedule, DeterministicForASeedAndDifferentAcrossSeeds) {
  auto a = build_schedule(server_cfg(10, 500, 42));
  auto b = build_schedule(server_cfg(10, 500, 42));
  auto c = build_schedule(server_cfg(10, 500, 43));
  ASSERT_EQ(a.arrivals.size(), 500u);
  EXPECT_EQ(a.arrivals, b.arrivals);
  EXPECT_NE(a.arrivals, c.arrivals);
  EXPECT_TRUE(std::is_sorted(a.arrivals.begin(), a.arrivals.end()));
}

TEST(Schedule, PoissonGapsHaveTheRightMeanAndCv) {
  const double rate = 25.0;
  const int n = 40000;
  auto s = build_schedule(server_cfg(rate, n, 7));
  std::vector<double> gaps;
  Nanos prev{0};
  for (auto t : s.arrivals) {
    gaps.push_back(std::chrono::duration<double>(t - prev).count());
    prev = t;
  }
  double mean = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size() - 1);
  const double cv = std::sqrt(var) / mean;
  // Standard error of the mean is (1/rate)/sqrt(n) = 0.5%: allow 3%.
  EXPECT_NEAR(mean, 1.0 / rate, 0.03 / rate);
  EXPECT_NEAR(cv, 1.0, 0.03);
  // Not rescaled to end at n/rate exactly.
  EXPECT_NE(s.arrivals.back(), Nanos(static_cast<std::int64_t>(n / rate * 1e9)));
}

TEST(Schedule, DurationBoundsTheArrivalsAndWarmupComesFirst) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = 100;
  c.duration = 2s;
  c.warmup = parse_warmup("1s");
  c.validate();
  auto s = build_schedule(c);
  EXPECT_GT(s.warmup_requests, 50);
  EXPECT_LT(s.warmup_requests, 150);
  for (std::int64_t i = 0; i < s.warmup_requests; ++i) EXPECT_LT(s.arrivals[static_cast<std::size_t>(i)], 1s);
  EXPECT_LE(s.arrivals.back(), 3s);
  const auto measured = static_cast<std::int64_t>(s.arrivals.size()) - s.warmup_requests;
  EXPECT_GT(measured, 150);
  EXPECT_LT(measured, 250);
}

TEST(Schedule, OfflineReleasesEverythingAtZero) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kOffline;
  c.num_requests = 10;
  c.warmup = parse_warmup("3");
  c.validate();
  auto s = build_schedule(c);
  ASSERT_EQ(s.arrivals.size(), 13u);
  EXPECT_EQ(s.warmup_requests, 3);
  for (auto t : s.arrivals) EXPECT_EQ(t, Nanos(0));
}

TEST(Pacer, OpenLoopReleasesAtScheduledTimesAndLateOnesKeepTheirIntendedTime) {
  Schedule s;
  s.arrivals = {Nanos(100ms), Nanos(200ms), Nanos(300ms)};
  auto p = make_open_loop_pacer(s, std::nullopt, std::nullopt, {});
  const TimePoint t0(10s);
  p->begin(t0);
  EXPECT_FALSE(p->next(t0 + 99ms));
  EXPECT_EQ(p->wake_time(), t0 + 100ms);
  auto r = p->next(t0 + 100ms);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->intended, t0 + 100ms);
  // The client stalls until 350 ms: both remaining requests come out at once, never skipped,
  // each with its own intended time.
  auto a = p->next(t0 + 350ms);
  auto b = p->next(t0 + 350ms);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->intended, t0 + 200ms);
  EXPECT_EQ(b->intended, t0 + 300ms);
  EXPECT_TRUE(p->exhausted());
}

TEST(Pacer, OfflineCapHoldsRequestsButKeepsIntendedTime) {
  Schedule s;
  s.arrivals.assign(5, Nanos(0));
  auto p = make_open_loop_pacer(s, 2, std::nullopt, {});
  const TimePoint t0(1s);
  p->begin(t0);
  EXPECT_TRUE(p->next(t0));
  EXPECT_TRUE(p->next(t0));
  EXPECT_FALSE(p->next(t0 + 1s));
  EXPECT_FALSE(p->wake_time());  // only a completion can release more
  p->on_complete(0, t0 + 2s);
  auto r = p->next(t0 + 2s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->intended, t0);
}

TEST(Pacer, ClosedLoopKeepsConcurrencyAndUsesSlotFreeTimeAsIntended) {
  auto p = make_closed_loop_pacer(3, 5, std::nullopt, {});
  const TimePoint t0(1s);
  p->begin(t0);
  int released = 0;
  while (p->next(t0)) ++released;
  EXPECT_EQ(released, 3);
  p->on_complete(0, t0 + 70ms);
  auto r = p->next(t0 + 70ms);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->intended, t0 + 70ms);
  EXPECT_FALSE(p->next(t0 + 70ms));
  p->on_complete(1, t0 + 80ms);
  EXPECT_TRUE(p->next(t0 + 80ms));
  p->on_complete(2, t0 + 90ms);
  EXPECT_FALSE(p->next(t0 + 90ms));  // 5 measured requests released
  EXPECT_TRUE(p->exhausted());
}

TEST(Pacer, WarmupByCountIsFlaggedAndWindowStartsAfterIt) {
  auto p = make_closed_loop_pacer(1, 2, std::nullopt, parse_warmup("2"));
  const TimePoint t0(1s);
  p->begin(t0);
  auto a = p->next(t0);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->warmup);
  p->on_complete(0, t0 + 10ms);
  EXPECT_TRUE(p->next(t0 + 10ms)->warmup);
  EXPECT_FALSE(p->window_start());
  p->on_complete(1, t0 + 20ms);
  auto c = p->next(t0 + 20ms);
  EXPECT_FALSE(c->warmup);
  EXPECT_EQ(p->window_start(), t0 + 20ms);
}

TEST(Scenario, ValidationNamesTheFieldAndTheFix) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  try {
    c.validate();
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--request-rate"), std::string::npos);
  }
  EXPECT_THROW(parse_scenario_kind("bogus"), ConfigError);
  ScenarioConfig huge;
  huge.input_tokens = 1'000'000'000'000;
  EXPECT_THROW(huge.validate(), ConfigError);
  ScenarioConfig many;  // every request is kept in memory: the count is bounded
  many.kind = ScenarioKind::kOffline;
  many.num_requests = 60'000'000;
  EXPECT_THROW(many.validate(), ConfigError);
  EXPECT_THROW(parse_warmup("ten"), ConfigError);
  EXPECT_EQ(parse_warmup("5s").duration, Nanos(5s));
  EXPECT_EQ(parse_warmup("12").requests, 12);
  ScenarioConfig d;
  d.validate();
  EXPECT_EQ(d.num_requests, 100);
}

}  // namespace
}  // namespace llmload
