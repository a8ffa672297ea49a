// MSER-5 warmup truncation on series whose MSER values are derived by hand, and the saturation
// (growth without bound) detector on stable, drifting and growing simulated series.

#include "llmload/analysis/steady_state.hpp"
#include "normal_rng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <stdexcept>
#include <vector>

namespace {

using namespace llmload::analysis;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Rng = llmload::testing::NormalRng;

// Each batch value repeated for 5 intervals, so the batch means are exactly `batches`.
std::vector<double> expand(const std::vector<double>& batches) {
  std::vector<double> out;
  for (const double z : batches) out.insert(out.end(), 5, z);
  return out;
}

// Level `warm` for `warm_intervals`, then `steady`, each interval +-0.05 alternating.
std::vector<double> step_series(std::size_t warm_intervals, std::size_t total, double warm = 2.0, double steady = 1.0) {
  std::vector<double> out;
  for (std::size_t i = 0; i < total; ++i) out.push_back((i < warm_intervals ? warm : steady) + (i % 2 == 0 ? 0.05 : -0.05));
  return out;
}

// Z = 6,1,3,1,3,1,3,1,3,1. MSER(d) = SS_d / (10 - d)^2: d=0: 24.1/100 = 0.241; d=1 (mean 17/9):
// (5 (8/9)^2 + 4 (10/9)^2) / 81 = 720/6561 = 0.1097; d=2: 8/64 = 0.125; d=3: (336/49)/49 = 0.140;
// d=4: 6/36 = 0.167; d=5: 4.8/25 = 0.192. So d* = 1.
const std::vector<double> kZ = {6, 1, 3, 1, 3, 1, 3, 1, 3, 1};

TEST(steady_state, HandComputedMser) {
  const SteadyStateResult r = mser5(expand(kZ));
  EXPECT_TRUE(r.found) << r.reason;
  EXPECT_EQ(r.batches, 10u);
  EXPECT_EQ(r.search_limit, 5u);
  EXPECT_EQ(r.truncation_batches, 1u);
  EXPECT_EQ(r.truncation, 5u);
  EXPECT_NEAR(r.statistic, 720.0 / 6561, 1e-15);
  // A single high first batch, then flat: d* = 1 with MSER = 0.
  const SteadyStateResult flat = mser5(expand({10, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(flat.truncation, 5u);
  EXPECT_EQ(flat.statistic, 0.0);
  // Constant: nothing to discard (ties go to the smallest d).
  const SteadyStateResult constant = mser5(std::vector<double>(100, 3.0));
  EXPECT_TRUE(constant.found);
  EXPECT_EQ(constant.truncation, 0u);
}

TEST(steady_state, StepWarmupIsCutAtTheStep) {
  // Batch means 2 +- 0.01 for 5 batches, then 1 -+ 0.01 alternating. Keeping any warm batch adds
  // ~(1 / k)^2-sized terms; past the step, MSER(d) = (k - d) 1e-4 / (k - d)^2 (even remainder)
  // grows with d, so d* = 5: 25 intervals.
  const SteadyStateResult r = mser5(step_series(25, 125));
  EXPECT_TRUE(r.found) << r.reason;
  EXPECT_EQ(r.truncation, 25u);
  EXPECT_EQ(r.truncation_batches, 5u);
  EXPECT_NE(r.reason.find("discard the first 25 intervals"), std::string::npos);
  // A warmup below the steady level is found the same way.
  EXPECT_EQ(mser5(step_series(40, 200, 0.2, 1.0)).truncation, 40u);
}

TEST(steady_state, TrendAndShortSeriesHaveNoSteadyState) {
  // Z_j = 2 + 5j: for m = k - d remaining batches MSER = 25 (m^2 - 1) / (12 m), which falls as m
  // falls: the minimum sits at the search limit d = k/2.
  std::vector<double> ramp;
  for (int i = 0; i < 100; ++i) ramp.push_back(i);
  const SteadyStateResult r = mser5(ramp);
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.truncation_batches, r.search_limit);
  EXPECT_EQ(r.search_limit, 10u);
  EXPECT_NE(r.reason.find("no steady state"), std::string::npos);
  // 9 batches (45 intervals) is below the 10-batch minimum.
  const SteadyStateResult s = mser5(std::vector<double>(49, 1.0));
  EXPECT_FALSE(s.found);
  EXPECT_EQ(s.batches, 9u);
  EXPECT_NE(s.reason.find("too short"), std::string::npos);
  const SteadyStateResult none = mser5(std::vector<double>{});
  EXPECT_FALSE(none.found);
  EXPECT_TRUE(std::isnan(none.statistic));
  EXPECT_THROW(mser(ramp, 0), std::invalid_argument);
}

TEST(steady_state, NanIntervalsAndTrailingPartialBatch) {
  const std::vector<double> base = expand(kZ);
  // Gaps inside batches: a batch's value is the mean of its finite values (unchanged here).
  std::vector<double> holes = base;
  for (const std::size_t i : {1u, 3u, 7u, 12u, 13u, 14u, 26u, 49u}) holes[i] = kNaN;
  const SteadyStateResult h = mser5(holes);
  EXPECT_EQ(h.truncation, 5u);
  EXPECT_NEAR(h.statistic, 720.0 / 6561, 1e-15);
  // A leading batch without data is dropped; the truncation stays in original intervals: the
  // first real batch (intervals 5..9) is discarded, so 10.
  std::vector<double> lead(5, kNaN);
  lead.insert(lead.end(), base.begin(), base.end());
  const SteadyStateResult l = mser5(lead);
  EXPECT_EQ(l.batches, 10u);
  EXPECT_EQ(l.truncation_batches, 1u);
  EXPECT_EQ(l.truncation, 10u);
  // A trailing partial batch (4 wild values) is ignored.
  std::vector<double> tail = base;
  tail.insert(tail.end(), 4, 1000.0);
  EXPECT_EQ(mser5(tail).batches, 10u);
  EXPECT_NEAR(mser5(tail).statistic, 720.0 / 6561, 1e-15);
  // All NaN: no batches.
  EXPECT_FALSE(mser5(std::vector<double>(60, kNaN)).found);
}

TEST(steady_state, SeveralSeriesTakeTheLatestTruncation) {
  const std::vector<NamedSeries> series = {
      {"ttft", std::vector<double>(125, 0.4)},  // truncation 0
      {"throughput", step_series(25, 125)},      // truncation 25
      {"in_flight", step_series(10, 125, 5.0, 20.0)}};  // truncation 10
  const SteadyStateSummary s = detect_steady_state(series);
  EXPECT_TRUE(s.found) << s.reason;
  EXPECT_EQ(s.truncation, 25u);
  EXPECT_EQ(s.deciding_series, "throughput");
  ASSERT_EQ(s.per_series.size(), 3u);
  EXPECT_EQ(s.per_series[2].second.truncation, 10u);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j.at("truncation_intervals"), 25);
  EXPECT_EQ(j.at("series").at("in_flight").at("truncation_intervals"), 10);

  std::vector<NamedSeries> with_trend = series;
  std::vector<double> ramp;
  for (int i = 0; i < 125; ++i) ramp.push_back(i);
  with_trend.push_back({"queue", ramp});
  const SteadyStateSummary t = detect_steady_state(with_trend);
  EXPECT_FALSE(t.found);
  EXPECT_EQ(t.deciding_series, "queue");
  EXPECT_NE(t.reason.find("'queue'"), std::string::npos);
  EXPECT_EQ(t.truncation, 25u);  // still the latest of the series that found one
  EXPECT_FALSE(detect_steady_state({}).found);
}

TEST(saturation, StableNoisySeriesNeverFire) {
  // 60 intervals, in-flight AR(1) (phi 0.8, sd 5) around 50, TTFT iid 0.5 +- 0.1, 50 seeds.
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    Rng rng(seed);
    std::vector<double> queue;
    std::vector<double> ttft;
    double ar = 0;
    for (int i = 0; i < 60; ++i) {
      ar = 0.8 * ar + 3.0 * rng.normal();  // stationary sd 3 / sqrt(1 - 0.64) = 5
      queue.push_back(50 + ar);
      ttft.push_back(0.5 + 0.1 * rng.normal());
    }
    const SaturationResult r = detect_saturation(queue, ttft);
    EXPECT_FALSE(r.saturated) << "seed " << seed << ": " << r.reason;
    EXPECT_FALSE(r.ttft.growing) << "seed " << seed << ": " << r.ttft.reason;
  }
}

TEST(saturation, LinearGrowthFires) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    std::vector<double> queue;
    std::vector<double> ttft;
    for (int i = 0; i < 60; ++i) {
      queue.push_back(10 + 2.0 * i + 3 * rng.normal());
      ttft.push_back(0.2 + 0.05 * i + 0.05 * rng.normal());
    }
    const SaturationResult r = detect_saturation(queue, ttft);
    EXPECT_TRUE(r.saturated) << "seed " << seed << ": " << r.reason;
    EXPECT_NEAR(r.queue.slope, 2.0, 0.3);
    EXPECT_NEAR(r.ttft.slope, 0.05, 0.01);
    EXPECT_NE(r.reason.find("over-loaded"), std::string::npos);
  }
  // An exact line (zero residuals) is growth too.
  std::vector<double> line;
  for (int i = 0; i < 20; ++i) line.push_back(5.0 + i);
  EXPECT_TRUE(detect_saturation(line, line).saturated);
}

TEST(saturation, NeedsBothSeriesAndARealRise) {
  Rng rng(7);
  std::vector<double> growing;
  std::vector<double> flat;
  std::vector<double> drift_q;
  std::vector<double> drift_t;
  for (int i = 0; i < 60; ++i) {
    growing.push_back(10 + 2.0 * i + rng.normal());
    flat.push_back(0.5 + 0.02 * rng.normal());
    // 5% drift over the run with little noise: a significant slope but no real rise.
    drift_q.push_back(50 * (1 + 0.05 * i / 60.0) + 0.3 * rng.normal());
    drift_t.push_back(0.5 * (1 + 0.05 * i / 60.0) + 0.003 * rng.normal());
  }
  const SaturationResult one = detect_saturation(growing, flat);
  EXPECT_FALSE(one.saturated);
  EXPECT_TRUE(one.queue.growing);
  EXPECT_NE(one.reason.find("only in-flight grows"), std::string::npos);

  const SaturationResult drift = detect_saturation(drift_q, drift_t);
  EXPECT_FALSE(drift.saturated) << drift.reason;
  EXPECT_LT(drift.queue.p_value, 0.01);  // the slope alone would have fired
  EXPECT_LT(drift.ttft.p_value, 0.01);
  EXPECT_FALSE(drift.queue.growing);
  EXPECT_FALSE(drift.ttft.growing);
  // The queue rule also needs at least one more request in flight: 0.1 -> 0.9 is not a queue.
  std::vector<double> tiny;
  for (int i = 0; i < 40; ++i) tiny.push_back(0.1 + 0.02 * i);
  EXPECT_FALSE(detect_saturation(tiny, tiny).queue.growing);
  EXPECT_TRUE(detect_saturation(tiny, tiny).ttft.growing);
}

TEST(saturation, NanAndShortSeries) {
  std::vector<double> queue;
  std::vector<double> ttft;
  for (int i = 0; i < 40; ++i) {
    queue.push_back(5.0 + i);
    ttft.push_back(i < 10 ? kNaN : 0.1 * i);  // no completions yet in the first intervals
  }
  const SaturationResult r = detect_saturation(queue, ttft);
  EXPECT_TRUE(r.saturated) << r.reason;
  EXPECT_EQ(r.ttft.points, 30u);
  EXPECT_NEAR(r.ttft.slope, 0.1, 1e-12);  // x is the interval index, NaN intervals keep their place

  const std::vector<double> few = {1, 2, 3, 4, 5};
  const SaturationResult s = detect_saturation(few, few);
  EXPECT_FALSE(s.saturated);
  EXPECT_NE(s.queue.reason.find("cannot tell"), std::string::npos);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j.at("saturated"), false);
  EXPECT_TRUE(j.at("queue").at("slope").is_null());
}

}  // namespace
