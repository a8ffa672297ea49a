#include <gtest/gtest.h>

#include "llmload/analysis/stats.hpp"
#include "llmload/analysis/sequential_slo.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

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
  EXPECT_EQ(d.num_requests, 1000) << "p99 from 1,000 samples: not low-confidence";
  EXPECT_FALSE(d.sequential);
  // With an SLO and no size: sequential stopping from a first look of 1,000 (sequential_slo.hpp),
  // bounded by 64 x that and, unless given, 10 minutes.
  ScenarioConfig with_slo;
  with_slo.slo = analysis::parse_slo("ttft:500ms,tpot:50ms");
  with_slo.validate();
  EXPECT_TRUE(with_slo.sequential);
  EXPECT_EQ(with_slo.num_requests, analysis::SequentialSlo::first_look_size(*with_slo.slo));
  EXPECT_EQ(with_slo.sequential_cap, 64 * *with_slo.num_requests);
  EXPECT_EQ(with_slo.max_duration, kSequentialMaxDuration);
  EXPECT_EQ(run_limits(with_slo).min_requests, with_slo.sequential_cap);
  // A TPOT bound without streaming: no time between tokens is observed (TPOT 0 met any bound).
  ScenarioConfig no_stream;
  no_stream.stream = false;
  no_stream.slo = analysis::parse_slo("ttft:500ms,tpot:50ms");
  try {
    no_stream.validate();
    FAIL() << "a TPOT bound without streaming was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("a TPOT bound needs streaming"), std::string::npos) << e.what();
  }
  no_stream.slo = analysis::parse_slo("ttft:500ms");
  EXPECT_NO_THROW(no_stream.validate());
  // --warmup auto: the measured requests are known only after the run, so no look can count
  // them: the fixed SLO size.
  ScenarioConfig auto_warmup;
  auto_warmup.slo = with_slo.slo;
  auto_warmup.warmup = parse_warmup("auto");
  auto_warmup.validate();
  EXPECT_FALSE(auto_warmup.sequential);
  EXPECT_TRUE(auto_warmup.num_requests.has_value());
  // Offline releases everything at once: a fixed size, enough for a conclusive PASS at half the
  // allowed exceedances.
  ScenarioConfig offline = with_slo;
  offline.kind = ScenarioKind::kOffline;
  offline.sequential = false;
  offline.num_requests.reset();
  offline.max_duration.reset();
  offline.validate();
  EXPECT_FALSE(offline.sequential);
  ASSERT_TRUE(offline.num_requests);
  const std::int64_t n = *offline.num_requests;
  EXPECT_LE(analysis::early_stopping_min_requests(n / 200, 0.99, 0.99), n);
  EXPECT_GT(analysis::early_stopping_min_requests((n - 100) / 200, 0.99, 0.99), n - 100);
  // A size given: not sequential.
  ScenarioConfig sized = ScenarioConfig{};
  sized.slo = with_slo.slo;
  sized.num_requests = 300;
  sized.validate();
  EXPECT_FALSE(sized.sequential);
  EXPECT_EQ(sized.num_requests, 300);
}

// Issue 16: a rate below the schedule's range (1e-12/s) overflowed it into a flood of requests.
TEST(Scenario, RatesBelowTheScheduleRangeAreRefused) {
  ScenarioConfig server;
  server.kind = ScenarioKind::kServer;
  server.request_rate = 1e-10;
  server.num_requests = 3;
  EXPECT_THROW(server.validate(), ConfigError);
  server.request_rate = 1e-3;  // one every 17 minutes: fine
  EXPECT_NO_THROW(server.validate());
  ScenarioConfig stages;
  stages.kind = ScenarioKind::kStages;
  stages.arrivals.stages = parse_stages("rate:1e-12@2s,rate:5@1s");
  EXPECT_THROW(stages.validate(), ConfigError);
}

// ---- minimums and the hard maximum ----

// Drives a closed-loop pacer with requests that take `each`: returns the releases.
std::vector<Release> drive_closed(Pacer& p, TimePoint t0, Nanos each, std::size_t guard = 100000) {
  std::vector<Release> out;
  std::deque<std::pair<TimePoint, std::uint64_t>> inflight;
  p.begin(t0);
  TimePoint now = t0;
  while (out.size() < guard) {
    while (auto r = p.next(now)) {
      out.push_back(*r);
      inflight.emplace_back(now + each, r->index);
    }
    if (inflight.empty()) break;
    now = inflight.front().first;
    p.on_complete(inflight.front().second, now);
    inflight.pop_front();
  }
  return out;
}

std::int64_t measured(const std::vector<Release>& rs) {
  return std::count_if(rs.begin(), rs.end(), [](const Release& r) { return !r.warmup; });
}

TEST(PacerLimits, ClosedLoopMinimumRequestsGoPastTheCount) {
  RunLimits l;
  l.min_requests = 25;
  auto p = make_closed_loop_pacer(2, 10, std::nullopt, parse_warmup("3"), l);
  auto rs = drive_closed(*p, TimePoint(1s), 100ms);
  EXPECT_EQ(measured(rs), 25);
  EXPECT_EQ(rs.size(), 28u);
  EXPECT_TRUE(p->exhausted());
  EXPECT_FALSE(p->max_duration_reached());
  // Without the minimum: the count.
  auto q = make_closed_loop_pacer(2, 10, std::nullopt, parse_warmup("3"));
  EXPECT_EQ(measured(drive_closed(*q, TimePoint(1s), 100ms)), 10);
}

TEST(PacerLimits, ClosedLoopMinimumDurationMovesTheWindowEnd) {
  RunLimits l;
  l.min_duration = 3s;
  const TimePoint t0(1s);
  auto p = make_closed_loop_pacer(1, std::nullopt, 1s, {}, l);
  auto rs = drive_closed(*p, t0, 100ms);
  ASSERT_TRUE(p->window_end());
  EXPECT_EQ(*p->window_end(), t0 + 3s);
  for (const auto& r : rs) EXPECT_LT(r.intended, t0 + 3s);
  EXPECT_EQ(measured(rs), 30);
  // The minimum below the duration changes nothing.
  l.min_duration = 500ms;
  auto q = make_closed_loop_pacer(1, std::nullopt, 1s, {}, l);
  EXPECT_EQ(measured(drive_closed(*q, t0, 100ms)), 10);
  EXPECT_EQ(*q->window_end(), t0 + 1s);
}

TEST(PacerLimits, MaxDurationStopsEvenWarmupAndBeatsTheMinimums) {
  RunLimits l;
  l.min_requests = 1000;
  l.max_duration = 1s;
  const TimePoint t0(1s);
  auto p = make_closed_loop_pacer(1, 5, std::nullopt, parse_warmup("100"), l);
  auto rs = drive_closed(*p, t0, 100ms);
  EXPECT_EQ(rs.size(), 10u);  // releases at 0, 100, ..., 900 ms: all warmup
  EXPECT_EQ(measured(rs), 0);
  EXPECT_TRUE(p->max_duration_reached());
  EXPECT_TRUE(p->exhausted());
}

TEST(PacerLimits, OpenLoopExtensionContinuesTheProcessUntilTheMinimumsHold) {
  Schedule s;
  s.arrivals = {Nanos(100ms), Nanos(200ms), Nanos(300ms)};
  s.warmup_requests = 1;
  Nanos next_t = 300ms;
  int asked = 0;
  auto more = [&] {
    ++asked;
    next_t += 100ms;
    return next_t;
  };
  RunLimits l;
  l.min_requests = 5;
  l.min_duration = 450ms;
  const TimePoint t0(10s);
  auto p = make_open_loop_pacer(s, std::nullopt, 200ms, {}, l, more);
  p->begin(t0);
  std::vector<Release> rs;
  while (!p->exhausted()) {
    auto w = p->wake_time();
    ASSERT_TRUE(w);
    while (auto r = p->next(*w)) rs.push_back(*r);
  }
  // 5 measured (200 ms ... 600 ms): the window (from 200 ms) has lasted 450 ms by the 5th.
  EXPECT_EQ(measured(rs), 5);
  EXPECT_EQ(rs.back().intended, t0 + 600ms);
  for (std::size_t i = 0; i < rs.size(); ++i) EXPECT_EQ(rs[i].intended, t0 + Nanos(100ms) * static_cast<int>(i + 1));
  // The window's end moved from 200 + 200 ms to the last released arrival.
  EXPECT_EQ(p->window_start(), t0 + 200ms);
  EXPECT_EQ(p->window_end(), t0 + 650ms);  // window start + min_duration
  EXPECT_EQ(asked, 4);                     // 400, 500, 600 released; 700 meets both minimums
}

TEST(PacerLimits, OpenLoopMaxDurationCutsTheSchedule) {
  Schedule s;
  for (int i = 1; i <= 10; ++i) s.arrivals.push_back(Nanos(i * 100ms));
  RunLimits l;
  l.max_duration = 550ms;
  const TimePoint t0(1s);
  auto p = make_open_loop_pacer(s, std::nullopt, std::nullopt, {}, l);
  p->begin(t0);
  int n = 0;
  while (!p->exhausted()) {
    auto w = p->wake_time();
    ASSERT_TRUE(w);
    while (p->next(*w)) ++n;
  }
  EXPECT_EQ(n, 5);
  EXPECT_TRUE(p->max_duration_reached());
}

TEST(PacerLimits, WhichRunsTheMinimumsExtend) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kConcurrency;
  c.min_duration = 10s;
  c.min_requests = 500;
  c.max_duration = 1min;
  auto l = run_limits(c);
  EXPECT_EQ(l.min_duration, Nanos(10s));
  EXPECT_EQ(l.min_requests, 500);
  EXPECT_EQ(l.max_duration, Nanos(1min));
  c.kind = ScenarioKind::kOffline;  // everything at once: only the count can grow
  l = run_limits(c);
  EXPECT_FALSE(l.min_duration);
  EXPECT_EQ(l.min_requests, 500);
  c.kind = ScenarioKind::kServer;
  c.timed_arrivals = true;  // a trace has its own length
  l = run_limits(c);
  EXPECT_FALSE(l.min_duration);
  EXPECT_FALSE(l.min_requests);
  EXPECT_EQ(l.max_duration, Nanos(1min));
  c.timed_arrivals = false;
  c.kind = ScenarioKind::kStages;
  EXPECT_FALSE(run_limits(c).min_requests);

  // Offline: the minimum count is more requests released at the start.
  ScenarioConfig off;
  off.kind = ScenarioKind::kOffline;
  off.num_requests = 10;
  off.min_requests = 40;
  off.validate();
  auto p = make_pacer(off);
  p->begin(TimePoint(1s));
  int n = 0;
  while (p->next(TimePoint(1s))) ++n;
  EXPECT_EQ(n, 40);
}

std::string validation_error(ScenarioConfig c) {
  try {
    c.validate();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Scenario, PhaseSettingsThatCannotWorkAreRefusedWithTheFix) {
  ScenarioConfig base;
  base.kind = ScenarioKind::kConcurrency;
  auto c = base;
  c.min_duration = 60s;
  c.max_duration = 30s;
  auto e = validation_error(c);
  EXPECT_NE(e.find("--min-duration 60"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-duration 30"), std::string::npos) << e;
  EXPECT_NE(e.find("raise --max-duration"), std::string::npos) << e;

  c = base;
  c.duration = 20s;
  c.warmup = parse_warmup("15s");
  c.max_duration = 30s;
  e = validation_error(c);
  EXPECT_NE(e.find("--duration 20"), std::string::npos) << e;
  EXPECT_NE(e.find("warmup"), std::string::npos) << e;

  c = base;
  c.max_duration = Nanos(0);
  EXPECT_NE(validation_error(c).find("bad --max-duration"), std::string::npos) << validation_error(c);
  c = base;
  c.min_duration = Nanos(-1);
  EXPECT_NE(validation_error(c).find("bad --min-duration"), std::string::npos);
  c = base;
  c.min_requests = 0;
  EXPECT_NE(validation_error(c).find("bad --min-requests"), std::string::npos);
  c = base;
  c.max_error_rate = 1.5;
  EXPECT_NE(validation_error(c).find("--max-error-rate"), std::string::npos);

  c = base;
  c.kind = ScenarioKind::kOffline;
  c.warmup = parse_warmup("auto");
  e = validation_error(c);
  EXPECT_NE(e.find("--warmup auto"), std::string::npos) << e;
  EXPECT_NE(e.find("offline"), std::string::npos) << e;
  c = base;
  c.kind = ScenarioKind::kStages;
  c.arrivals.stages = parse_stages("rate:5@10s");
  c.warmup = parse_warmup("auto");
  EXPECT_NE(validation_error(c).find("stage plan"), std::string::npos);
  c = base;
  c.shard.count = 2;
  c.warmup = parse_warmup("auto");
  EXPECT_NE(validation_error(c).find("shard"), std::string::npos);
  c = base;
  c.shard.count = 2;
  c.min_requests = 100;
  EXPECT_NE(validation_error(c).find("sharded run"), std::string::npos);

  // Sensible combinations pass.
  c = base;
  c.warmup = parse_warmup("auto");
  c.min_duration = 10s;
  c.min_requests = 200;
  c.max_duration = 60s;
  EXPECT_EQ(validation_error(c), "");
  EXPECT_TRUE(parse_warmup("auto").automatic);
  EXPECT_FALSE(parse_warmup("auto").none());
}

}  // namespace
}  // namespace llmload
