// Multi-turn sessions: turns released think_time after the previous turn completes.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::fixed_service;
using testing::simulate;
using testing::SimResult;

const TimePoint t0_sessions(2000s);

ScenarioConfig sessions(ScenarioKind kind, std::int64_t turns, Nanos think, std::optional<std::int64_t> n) {
  ScenarioConfig c;
  c.kind = kind;
  c.turns = turns;
  c.think_time = think;
  c.num_requests = n;
  c.seed = 5;
  return c;
}

// Checks the session invariants of a finished simulation and returns the releases by session.
std::map<std::int64_t, std::vector<const testing::SimRequest*>> check_sessions(const SimResult& r, Nanos think,
                                                                               std::int64_t turns) {
  std::map<std::int64_t, std::vector<const testing::SimRequest*>> by_session;
  std::int64_t expected_next_session = 0;
  for (const auto& q : r.requests) {
    EXPECT_GE(q.rel.session, 0);
    EXPECT_GE(q.rel.turn, 0);
    EXPECT_LT(q.rel.turn, turns);
    auto& v = by_session[q.rel.session];
    EXPECT_EQ(static_cast<std::int64_t>(v.size()), q.rel.turn) << "turns of a session are released in order";
    if (q.rel.turn == 0) {
      EXPECT_EQ(q.rel.session, expected_next_session) << "sessions are numbered in start order";
      ++expected_next_session;
    } else {
      const auto* prev = v.back();
      EXPECT_TRUE(prev->done.has_value());
      // Turn t+1 is intended exactly think_time after turn t completed, and not released before.
      EXPECT_EQ(q.rel.intended, *prev->done + think) << "session " << q.rel.session << " turn " << q.rel.turn;
      EXPECT_GE(q.sent, q.rel.intended);
    }
    v.push_back(&q);
  }
  return by_session;
}

TEST(Sessions, ConcurrencyHoldsNSessionsAndTurnsFollowCompletionPlusThink) {
  auto cfg = sessions(ScenarioKind::kConcurrency, 3, 500ms, 30);
  cfg.concurrency = 2;
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(100ms), t0_sessions + 600s);
  EXPECT_TRUE(r.exhausted);
  ASSERT_EQ(r.requests.size(), 30u);
  const auto by_session = check_sessions(r, 500ms, 3);
  EXPECT_EQ(by_session.size(), 10u);
  // At most 2 sessions active at once; a new session starts when one's last turn completes.
  for (const auto& [s, v] : by_session) {
    ASSERT_EQ(v.size(), 3u);
    if (s < 2) {
      EXPECT_EQ(v[0]->rel.intended, t0_sessions);
      continue;
    }
    // The session that started it: some session whose last turn completed at this intended time.
    bool found = false;
    for (const auto& [s2, v2] : by_session) {
      if (s2 < s && v2.back()->done == v[0]->rel.intended) found = true;
    }
    EXPECT_TRUE(found) << "session " << s;
  }
  for (const auto& q : r.requests) {
    std::int64_t active = 0;  // sessions started and not finished at q's release
    for (const auto& [s, v] : by_session) {
      if (v.front()->sent <= q.sent && (!v.back()->done || *v.back()->done > q.sent)) ++active;
    }
    EXPECT_LE(active, 2);
  }
  EXPECT_EQ(r.max_in_flight, 2);
}

TEST(Sessions, IntendedIsCompletionPlusThinkEvenWhenTheDriverIsLate) {
  auto cfg = sessions(ScenarioKind::kConcurrency, 2, 1s, 10);
  cfg.concurrency = 1;
  cfg.validate();
  auto p = make_pacer(cfg);
  p->begin(t0_sessions);
  const auto a = p->next(t0_sessions);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->session, 0);
  EXPECT_EQ(a->turn, 0);
  EXPECT_FALSE(p->next(t0_sessions));
  p->on_complete(a->index, t0_sessions + 1s);
  EXPECT_EQ(p->wake_time(), t0_sessions + 2s);  // the think time's end
  EXPECT_FALSE(p->next(t0_sessions + 1999ms));  // never before completion + think
  const auto b = p->next(t0_sessions + 5s);     // the driver wakes late
  ASSERT_TRUE(b);
  EXPECT_EQ(b->intended, t0_sessions + 2s);
  EXPECT_EQ(b->session, 0);
  EXPECT_EQ(b->turn, 1);
  p->on_complete(b->index, t0_sessions + 6s);  // last turn: the slot starts session 1 at once
  const auto c = p->next(t0_sessions + 6s);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->session, 1);
  EXPECT_EQ(c->turn, 0);
  EXPECT_EQ(c->intended, t0_sessions + 6s);
}

TEST(Sessions, WakeTimeIsTheEarliestThinkExpiry) {
  auto cfg = sessions(ScenarioKind::kConcurrency, 3, 2s, 100);
  cfg.concurrency = 3;
  cfg.validate();
  auto p = make_pacer(cfg);
  p->begin(t0_sessions);
  std::vector<Release> rs;
  while (auto r = p->next(t0_sessions)) rs.push_back(*r);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_FALSE(p->wake_time());
  p->on_complete(rs[1].index, t0_sessions + 3s);
  p->on_complete(rs[0].index, t0_sessions + 1s);  // completions need not come in time order
  EXPECT_EQ(p->wake_time(), t0_sessions + 3s);
  const auto r = p->next(t0_sessions + 3s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->session, rs[0].session);
  EXPECT_EQ(p->wake_time(), t0_sessions + 5s);
}

TEST(Sessions, ServerStartsSessionsAsTheArrivalProcess) {
  auto cfg = sessions(ScenarioKind::kServer, 3, 200ms, 900);
  cfg.request_rate = 10;  // sessions per second
  cfg.arrivals.process = "gamma";
  cfg.arrivals.burstiness = 2;
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(50ms), t0_sessions + 3600s);
  EXPECT_TRUE(r.exhausted);
  ASSERT_EQ(r.requests.size(), 900u);
  check_sessions(r, 200ms, 3);
  ArrivalStream starts(cfg.arrivals, cfg.request_rate, arrival_seed(cfg.seed));
  std::int64_t n_starts = 0;
  for (const auto& q : r.requests) {
    if (q.rel.turn != 0) continue;
    EXPECT_EQ(q.rel.intended, t0_sessions + starts.next()) << "session " << q.rel.session;
    ++n_starts;
  }
  // 900 requests of 3 turns: 300 sessions, plus a few started near the end and cut short.
  EXPECT_GE(n_starts, 300);
  EXPECT_LE(n_starts, 310);
}

TEST(Sessions, ServerSessionsHonourTheCapForEveryTurn) {
  auto cfg = sessions(ScenarioKind::kServer, 4, 0ms, 400);
  cfg.request_rate = 50;
  cfg.max_inflight = 3;
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(300ms), t0_sessions + 3600s);
  EXPECT_TRUE(r.exhausted);
  EXPECT_EQ(r.max_in_flight, 3);
  EXPECT_EQ(r.requests.size(), 400u);
  check_sessions(r, 0ms, 4);
}

TEST(Sessions, TimedStartsFromATrace) {
  const std::vector<Nanos> starts = {0ms, 10ms, 2s};
  auto cfg = sessions(ScenarioKind::kServer, 2, 1s, std::nullopt);
  cfg.timed_arrivals = true;
  cfg.validate();
  auto p = make_pacer(cfg, &starts);
  const auto r = simulate(*p, t0_sessions, fixed_service(100ms), t0_sessions + 60s);
  EXPECT_TRUE(r.exhausted);
  ASSERT_EQ(r.requests.size(), 6u);
  check_sessions(r, 1s, 2);
  std::vector<TimePoint> firsts;
  for (const auto& q : r.requests) {
    if (q.rel.turn == 0) firsts.push_back(q.rel.intended);
  }
  EXPECT_EQ(firsts, (std::vector<TimePoint>{t0_sessions, t0_sessions + 10ms, t0_sessions + 2s}));
}

TEST(Sessions, OfflineStartsEverySessionAtOnce) {
  auto cfg = sessions(ScenarioKind::kOffline, 3, 100ms, 10);
  cfg.validate();
  auto p = make_pacer(cfg);
  p->begin(t0_sessions);
  std::vector<Release> first;
  while (auto r = p->next(t0_sessions)) first.push_back(*r);
  ASSERT_EQ(first.size(), 4u);  // ceil(10 / 3) sessions
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first[i].session, static_cast<std::int64_t>(i));
    EXPECT_EQ(first[i].turn, 0);
  }
  auto p2 = make_pacer(cfg);
  const auto r = simulate(*p2, t0_sessions, fixed_service(1s), t0_sessions + 60s);
  EXPECT_EQ(r.requests.size(), 10u);  // the limit cuts the last sessions short
  check_sessions(r, 100ms, 3);

  cfg.max_inflight = 2;
  cfg.validate();
  auto p3 = make_pacer(cfg);
  const auto capped = simulate(*p3, t0_sessions, fixed_service(1s), t0_sessions + 60s);
  EXPECT_EQ(capped.max_in_flight, 2);
  EXPECT_EQ(capped.requests.size(), 10u);
}

TEST(Sessions, SingleStreamRunsOneSessionAtATime) {
  auto cfg = sessions(ScenarioKind::kSingleStream, 2, 300ms, 8);
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(100ms), t0_sessions + 60s);
  ASSERT_EQ(r.requests.size(), 8u);
  EXPECT_EQ(r.max_in_flight, 1);
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    EXPECT_EQ(r.requests[i].rel.session, static_cast<std::int64_t>(i / 2));
    EXPECT_EQ(r.requests[i].rel.turn, static_cast<std::int64_t>(i % 2));
  }
  // Each session: 100 ms, think 300 ms, 100 ms; the next starts at once.
  EXPECT_EQ(r.requests[2].rel.intended, t0_sessions + 500ms);
}

TEST(Sessions, NumRequestsCountsRequestsAndCutsTheLastSession) {
  auto cfg = sessions(ScenarioKind::kConcurrency, 4, 0ms, 6);
  cfg.concurrency = 1;
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(10ms), t0_sessions + 60s);
  EXPECT_TRUE(r.exhausted);
  ASSERT_EQ(r.requests.size(), 6u);
  EXPECT_EQ(r.requests[5].rel.session, 1);
  EXPECT_EQ(r.requests[5].rel.turn, 1);
}

TEST(Sessions, WarmupCountsRequests) {
  auto cfg = sessions(ScenarioKind::kConcurrency, 3, 0ms, 5);
  cfg.concurrency = 1;
  cfg.warmup = parse_warmup("2");
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(10ms), t0_sessions + 60s);
  ASSERT_EQ(r.requests.size(), 7u);  // 2 warmup + 5 measured
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(r.requests[i].rel.warmup, i < 2) << i;
  EXPECT_EQ(p->window_start(), r.requests[2].rel.intended);
}

TEST(Sessions, NoTurnsAfterTheWindowEnds) {
  auto cfg = sessions(ScenarioKind::kConcurrency, 5, 1s, std::nullopt);
  cfg.concurrency = 1;
  cfg.duration = 5s;
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(1s), t0_sessions + 600s);
  EXPECT_TRUE(r.exhausted);
  // Turns at 0, 2 s, 4 s; the next would be intended at 6 s, past the window's end (5 s).
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[2].rel.intended, t0_sessions + 4s);
  EXPECT_EQ(p->window_end(), t0_sessions + 5s);

  // Open loop: no new session after the window either.
  auto srv = sessions(ScenarioKind::kServer, 2, 0ms, std::nullopt);
  srv.request_rate = 20;
  srv.duration = 3s;
  srv.validate();
  auto q = make_pacer(srv);
  const auto rs = simulate(*q, t0_sessions, fixed_service(10ms), t0_sessions + 600s);
  EXPECT_TRUE(rs.exhausted);
  ASSERT_TRUE(q->window_end());
  for (const auto& x : rs.requests) EXPECT_LT(x.rel.intended, *q->window_end());
  EXPECT_GT(rs.requests.size(), 60u);
}

TEST(Sessions, PlainRunsCarryNoSession) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 2;
  cfg.num_requests = 4;
  cfg.validate();
  auto p = make_pacer(cfg);
  const auto r = simulate(*p, t0_sessions, fixed_service(10ms), t0_sessions + 60s);
  for (const auto& q : r.requests) {
    EXPECT_EQ(q.rel.session, -1);
    EXPECT_EQ(q.rel.stage, -1);
  }
}

}  // namespace
}  // namespace llmload
