// Rate ramps: a non-homogeneous arrival process by time rescaling.

#include <gtest/gtest.h>

#include <cmath>

#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::secs;

ScenarioConfig ramped(std::string ramp, double start, double target, Nanos ramp_len, Nanos duration,
                      std::string process = "poisson", double burstiness = 1.0) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = target;
  c.duration = duration;
  c.arrivals.ramp = std::move(ramp);
  c.arrivals.ramp_start_rate = start;
  c.arrivals.ramp_duration = ramp_len;
  c.arrivals.process = std::move(process);
  c.arrivals.burstiness = burstiness;
  c.seed = 17;
  c.validate();
  return c;
}

// Arrivals per 1 s bin, over [0, bins).
std::vector<double> counts_per_second(const std::vector<Nanos>& arrivals, int bins) {
  std::vector<double> c(static_cast<std::size_t>(bins), 0.0);
  for (auto t : arrivals) {
    const auto b = static_cast<std::size_t>(secs(t));
    if (b < c.size()) c[b] += 1;
  }
  return c;
}

// Each bin's count is Poisson with mean Lambda(b+1) - Lambda(b) (or less variable for gamma
// k > 1 and constant): allow 5 standard deviations.
void expect_counts_follow(const RateCurve& curve, const std::vector<double>& counts, const char* what) {
  for (std::size_t b = 0; b < counts.size(); ++b) {
    const double expected = curve.cumulative(static_cast<double>(b + 1)) - curve.cumulative(static_cast<double>(b));
    EXPECT_NEAR(counts[b], expected, 5 * std::sqrt(expected) + 1) << what << ": second " << b;
  }
}

TEST(RateCurve, LinearAndExponentialShapesAndInverse) {
  ArrivalConfig a;
  a.ramp = "linear";
  a.ramp_duration = 10s;
  a.ramp_start_rate = 10;
  RateCurve lin(a, 110);
  EXPECT_DOUBLE_EQ(lin.rate_at(0), 10);
  EXPECT_DOUBLE_EQ(lin.rate_at(5), 60);
  EXPECT_DOUBLE_EQ(lin.rate_at(10), 110);
  EXPECT_DOUBLE_EQ(lin.rate_at(30), 110);
  EXPECT_DOUBLE_EQ(lin.cumulative(10), 600);  // (10 + 110) / 2 * 10
  EXPECT_DOUBLE_EQ(lin.cumulative(12), 820);

  a.ramp = "exponential";
  RateCurve ex(a, 160);
  EXPECT_NEAR(ex.rate_at(5), 40, 1e-9);  // 10 * 16^(1/2)
  EXPECT_NEAR(ex.cumulative(10), 150 * 10 / std::log(16.0), 1e-9);

  a.ramp = "linear";
  a.ramp_start_rate = 100;
  RateCurve down(a, 20);  // a ramp down is a ramp too
  EXPECT_DOUBLE_EQ(down.rate_at(5), 60);

  for (const RateCurve* c : {&lin, &ex, &down}) {
    for (double t : {0.0, 0.001, 1.0, 4.5, 9.999, 10.0, 10.5, 100.0}) {
      EXPECT_NEAR(c->inverse(c->cumulative(t)), t, 1e-9) << t;
    }
  }
}

TEST(RateCurve, RampStartRateZeroMeansATenthOfTheTarget) {
  ArrivalConfig a;
  a.ramp = "linear";
  a.ramp_duration = 10s;
  EXPECT_DOUBLE_EQ(ramp_start_rate(a, 50), 5);
  EXPECT_DOUBLE_EQ(RateCurve(a, 50).rate_at(0), 5);
  a.ramp_start_rate = 2;
  EXPECT_DOUBLE_EQ(RateCurve(a, 50).rate_at(0), 2);
}

TEST(Ramp, LinearArrivalsFollowTheRateThenHold) {
  const auto cfg = ramped("linear", 100, 1000, 10s, 20s);
  const auto s = build_schedule(cfg);
  const RateCurve curve(cfg.arrivals, cfg.request_rate);
  const auto counts = counts_per_second(s.arrivals, 20);
  expect_counts_follow(curve, counts, "linear");
  // The first second carries about 145, the 10th about 955, then 1000 a second.
  EXPECT_LT(counts[0], 220);
  EXPECT_GT(counts[15], 850);
  double held = 0;
  for (int b = 10; b < 20; ++b) held += counts[static_cast<std::size_t>(b)];
  EXPECT_NEAR(held, 10'000, 5 * 100);
}

TEST(Ramp, ExponentialArrivalsFollowTheRateThenHold) {
  const auto cfg = ramped("exponential", 10, 1000, 10s, 15s);
  const auto s = build_schedule(cfg);
  const RateCurve curve(cfg.arrivals, cfg.request_rate);
  const auto counts = counts_per_second(s.arrivals, 15);
  expect_counts_follow(curve, counts, "exponential");
  // Rate multiplies by 100^(1/10) = 1.585 a second: the ramp's late seconds dominate.
  EXPECT_GT(counts[9], 4 * counts[5]);
}

TEST(Ramp, GammaAndConstantProcessesAreRescaledTheSameWay) {
  {
    const auto cfg = ramped("linear", 100, 1000, 10s, 20s, "gamma", 4.0);
    const auto counts = counts_per_second(build_schedule(cfg).arrivals, 20);
    expect_counts_follow(RateCurve(cfg.arrivals, cfg.request_rate), counts, "gamma");
  }
  // Constant: arrival k lands exactly on Lambda^-1(k).
  const auto cfg = ramped("linear", 10, 100, 10s, 12s, "constant");
  const auto s = build_schedule(cfg);
  const RateCurve curve(cfg.arrivals, cfg.request_rate);
  for (std::size_t k = 0; k < s.arrivals.size(); ++k) {
    EXPECT_EQ(s.arrivals[k], Nanos(std::llround(curve.inverse(static_cast<double>(k + 1)) * 1e9))) << k;
  }
  // The window opens with the first arrival and lasts 12 s.
  EXPECT_NEAR(static_cast<double>(s.arrivals.size()), curve.cumulative(secs(s.arrivals.front()) + 12), 1.5);
}

TEST(Ramp, IsNotWarmupUnlessWarmupCoversIt) {
  // Without --warmup the ramp is measured: the window starts with the first request.
  const auto plain = ramped("linear", 50, 500, 5s, 10s);
  auto p = make_pacer(plain);
  const TimePoint t0(100s);
  const auto r0 = testing::simulate(*p, t0, testing::fixed_service(1ms), t0 + 60s);
  ASSERT_FALSE(r0.requests.empty());
  EXPECT_FALSE(r0.requests.front().rel.warmup);
  EXPECT_EQ(p->window_start(), r0.requests.front().rel.intended);

  // --warmup equal to --ramp-duration: the ramp's requests are all warmup and the window opens at
  // the ramp's end, at the target rate.
  auto cfg = ramped("linear", 50, 500, 5s, 10s);
  cfg.warmup = parse_warmup("5s");
  const auto s = build_schedule(cfg);
  ASSERT_GT(s.warmup_requests, 0);
  for (std::size_t i = 0; i < s.arrivals.size(); ++i) {
    EXPECT_EQ(static_cast<std::int64_t>(i) < s.warmup_requests, s.arrivals[i] < 5s) << i;
  }
  EXPECT_LE(s.arrivals.back(), 15s);
  auto q = make_pacer(cfg);
  const auto r = testing::simulate(*q, t0, testing::fixed_service(1ms), t0 + 60s);
  EXPECT_EQ(q->window_start(), t0 + 5s);
  EXPECT_EQ(q->window_end(), t0 + 15s);
  for (const auto& req : r.requests) EXPECT_EQ(req.rel.warmup, req.rel.intended < t0 + 5s);
}

}  // namespace
}  // namespace llmload
