// --warmup auto from a run's requests: the interval width, the per-interval series (throughput,
// TTFT, in flight) computed exactly on hand-made requests, and the MSER-5 decision on runs with a
// cold start, a steady run, an endless trend and a run too short to tell.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/steady_state.hpp"

namespace {

using namespace llmload::analysis;
using namespace std::chrono_literals;

RequestRecord request(Nanos send, Nanos ttft, Nanos e2e) {
  RequestRecord r;
  r.t_intended = send;
  r.t_send = send;
  r.t_first = send + ttft;
  r.t_last = send + e2e;
  r.t_done = send + e2e;
  r.output_tokens = 4;
  r.in_window = true;
  return r;
}

// Deterministic jitter in [-1, 1) (splitmix64), the same on every standard library.
double jitter(std::uint64_t i) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return 2.0 * (static_cast<double>(z >> 11) / 9007199254740992.0) - 1.0;
}

// One request every `gap` over [0, span), TTFT from `ttft_at(send)` with 20% jitter.
template <class F>
std::vector<RequestRecord> run(Nanos span, Nanos gap, F ttft_at) {
  std::vector<RequestRecord> rs;
  std::uint64_t i = 0;
  for (Nanos t{0}; t < span; t += gap, ++i) {
    const double base = static_cast<double>(ttft_at(t).count());
    const Nanos ttft(static_cast<std::int64_t>(base * (1.0 + 0.2 * jitter(i))));
    rs.push_back(request(t, ttft, ttft + 30ms));
  }
  return rs;
}

TEST(warmup_auto, IntervalWidthFollowsTheRunLength) {
  EXPECT_EQ(warmup_interval(10s), Nanos(50ms));
  EXPECT_EQ(warmup_interval(60s), Nanos(300ms));
  EXPECT_EQ(warmup_interval(10'100ms), Nanos(50ms));  // whole milliseconds
  EXPECT_EQ(warmup_interval(2s), Nanos(10ms));
  EXPECT_EQ(warmup_interval(1s), Nanos(10ms));  // at least 10 ms
  EXPECT_EQ(warmup_interval(Nanos(0)), Nanos(10ms));
}

TEST(warmup_auto, SeriesAreExactForHandMadeRequests) {
  // Span 1 s: 100 intervals of 10 ms. Request A in flight [0, 25 ms), TTFT 5 ms; request B sent
  // at 12 ms, TTFT 7 ms, done at 40 ms; request C failed (no TTFT), [15 ms, 20 ms).
  std::vector<RequestRecord> rs = {request(0ms, 5ms, 25ms), request(12ms, 7ms, 28ms), request(15ms, 5ms, 5ms)};
  rs[2].error = ErrorClass::kHttpStatus;
  rs[2].t_first.reset();
  rs[2].t_last.reset();
  const WarmupDetection d = detect_warmup(rs, 1s);
  ASSERT_EQ(d.intervals, 100u);
  ASSERT_EQ(d.series.size(), 3u);
  const auto& tput = d.series[0];
  const auto& ttft = d.series[1];
  const auto& inflight = d.series[2];
  EXPECT_EQ(tput.name, "throughput");
  EXPECT_EQ(ttft.name, "ttft");
  EXPECT_EQ(inflight.name, "in_flight");
  // Completions (successful only): A at 25 ms (interval 2), B at 40 ms (interval 4); per second.
  EXPECT_DOUBLE_EQ(tput.values[2], 100.0);
  EXPECT_DOUBLE_EQ(tput.values[4], 100.0);
  EXPECT_DOUBLE_EQ(tput.values[1], 0.0);
  // TTFT by the send's interval: A in 0, B in 1 (the failed C has none).
  EXPECT_DOUBLE_EQ(ttft.values[0], 5.0);
  EXPECT_DOUBLE_EQ(ttft.values[1], 7.0);
  EXPECT_TRUE(std::isnan(ttft.values[2]));
  // In flight, time-averaged: [0,10) A; [10,20) A + B from 12 + C from 15; [20,30) A to 25 + B;
  // [30,40) B.
  EXPECT_DOUBLE_EQ(inflight.values[0], 1.0);
  EXPECT_DOUBLE_EQ(inflight.values[1], 1.0 + 0.8 + 0.5);
  EXPECT_DOUBLE_EQ(inflight.values[2], 0.5 + 1.0);
  EXPECT_DOUBLE_EQ(inflight.values[3], 1.0);
  EXPECT_DOUBLE_EQ(inflight.values[4], 0.0);
}

TEST(warmup_auto, AColdStartIsCutAtItsEnd) {
  // 10 s, a request every 10 ms: TTFT 300 ms for the first 2 s, then 30 ms.
  const auto rs = run(10s, 10ms, [](Nanos t) { return t < 2s ? Nanos(300ms) : Nanos(30ms); });
  const WarmupDetection d = detect_warmup(rs, 10s);
  EXPECT_EQ(d.interval, Nanos(50ms));
  ASSERT_TRUE(d.found) << d.summary.reason;
  // Never before the shift (nor before the last cold request is done, ~2.4 s, for in-flight and
  // throughput); MSER may cut a few batches (of 250 ms) more where the noise after the shift
  // happens to be higher, but far from its search limit (5 s).
  EXPECT_GE(d.start, 2s);
  EXPECT_LE(d.start, 4s) << to_json(d).dump();
  for (const auto& [name, r] : d.summary.per_series) {
    EXPECT_TRUE(r.found) << name;
    EXPECT_GE(r.truncation, 40u) << name;  // 2 s in 50 ms intervals
  }
  EXPECT_EQ(d.start % Nanos(250ms), Nanos(0));
  EXPECT_EQ(d.start, Nanos(static_cast<std::int64_t>(d.summary.truncation) * d.interval.count()));
  const auto j = to_json(d);
  EXPECT_EQ(j["method"], "MSER-5");
  EXPECT_DOUBLE_EQ(j["interval_s"].get<double>(), 0.05);
  EXPECT_TRUE(j["found"].get<bool>());
  EXPECT_DOUBLE_EQ(j["start_s"].get<double>(), std::chrono::duration<double>(d.start).count());
  EXPECT_EQ(j["series"]["ttft"]["values"].size(), 200u);
  EXPECT_TRUE(j["series"]["ttft"]["found"].get<bool>());
  EXPECT_TRUE(j["deciding_series"].is_string());
}

TEST(warmup_auto, ASteadyRunKeepsAlmostEverything) {
  const auto rs = run(10s, 10ms, [](Nanos) { return Nanos(30ms); });
  const WarmupDetection d = detect_warmup(rs, 10s);
  ASSERT_TRUE(d.found) << d.summary.reason;
  // Only the pipeline fill (no completion before 30 ms) is cut: within the first batches.
  EXPECT_LE(d.start, 1s);
}

TEST(warmup_auto, AnEndlessTrendHasNoSteadyState) {
  // TTFT grows by 50 ms every second for the whole run.
  const auto rs = run(10s, 10ms, [](Nanos t) { return 20ms + t / 20; });
  const WarmupDetection d = detect_warmup(rs, 10s);
  EXPECT_FALSE(d.found);
  EXPECT_EQ(d.start, Nanos(0));
  EXPECT_NE(d.summary.reason.find("no steady state"), std::string::npos) << d.summary.reason;
  EXPECT_FALSE(to_json(d)["found"].get<bool>());
}

TEST(warmup_auto, ARunTooShortCannotTell) {
  const auto rs = run(400ms, 5ms, [](Nanos) { return Nanos(10ms); });
  const WarmupDetection d = detect_warmup(rs, 400ms);
  EXPECT_EQ(d.intervals, 40u);
  EXPECT_FALSE(d.found);
  EXPECT_NE(d.summary.reason.find("too short"), std::string::npos) << d.summary.reason;
  EXPECT_FALSE(detect_warmup({}, Nanos(0)).found);
}

}  // namespace
