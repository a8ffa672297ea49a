// The SLO capacity search driven against simulated systems: deterministic thresholds (rates and
// integer concurrencies), a noisy one, scripted outliers, and every stopping reason.

#include "llmload/analysis/capacity.hpp"
#include "normal_rng.hpp"
#include "llmload/analysis/stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <stdexcept>
#include <vector>

namespace {

using namespace llmload::analysis;

TrialOutcome outcome(Verdict v, double goodput, double throughput, bool saturated) {
  TrialOutcome t;
  t.verdict = v;
  t.goodput = goodput;
  t.throughput = throughput;
  t.saturated = saturated;
  return t;
}

// Runs the search to the end; `system(load, trial_index_at_that_load)` gives each trial.
using System = std::function<TrialOutcome(double load, std::size_t trial)>;

CapacityResult drive(CapacitySearch& search, const System& system) {
  std::map<double, std::size_t> trials_run;
  for (int guard = 0; guard < 1000; ++guard) {
    const auto probe = search.next();
    if (!probe) return search.result();
    PointOutcome out;
    for (std::size_t i = 0; i < probe->trials; ++i) out.trials.push_back(system(probe->load, trials_run[probe->load]++));
    search.report(probe->load, out);
  }
  ADD_FAILURE() << "search did not finish";
  return search.result();
}

// PASS up to `capacity`; goodput = the load while it passes, half of it after.
System threshold(double capacity) {
  return [capacity](double load, std::size_t) {
    const bool pass = load <= capacity;
    return outcome(pass ? Verdict::kPass : Verdict::kFail, pass ? load : load / 2, std::min(load, capacity), false);
  };
}

std::vector<double> probed_loads(const CapacityResult& r) {
  std::vector<double> loads;
  for (const auto& h : r.history) loads.push_back(h.probe.load);
  return loads;
}

const CapacityPoint& point_at(const CapacityResult& r, double load) {
  for (const auto& p : r.points) {
    if (p.load == load) return p;
  }
  throw std::runtime_error("no point at that load");
}

using Rng = llmload::testing::NormalRng;

TEST(capacity, DeterministicRateCapacity) {
  CapacityOptions o;
  o.start = 1;
  o.max_load = 1000;
  CapacitySearch search(o);
  const CapacityResult r = drive(search, threshold(37.3));
  // Ramp 1..32 pass, 64 fails; bisect 48 F, 40 F, 36 P; [36, 40] is 11% wide (> 2 x 5%): 38 with
  // one trial, F; [36, 38] is 5.6% (<= 10%): 37 with 3 trials, P; [37, 38] is 2.7% (<= 5%): 38
  // is topped up with 2 more trials before stopping.
  EXPECT_EQ(probed_loads(r), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37, 38}));
  EXPECT_EQ(r.stop, CapacityStop::kToleranceReached);
  ASSERT_TRUE(r.highest_pass && r.lowest_fail);
  EXPECT_EQ(*r.highest_pass, 37);
  EXPECT_EQ(*r.lowest_fail, 38);
  EXPECT_LE(*r.highest_pass, 37.3);
  EXPECT_GT(*r.lowest_fail, 37.3);
  EXPECT_NEAR(r.relative_width, 1.0 / 37, 1e-12);
  EXPECT_DOUBLE_EQ(r.goodput_at_capacity, 37);
  EXPECT_DOUBLE_EQ(r.throughput_at_capacity, 37);
  EXPECT_EQ(r.history[11].probe.trials, 3u);
  EXPECT_TRUE(r.history[11].probe.near_boundary);
  EXPECT_EQ(r.history[10].probe.trials, 1u);
  EXPECT_EQ(r.history[12].probe.why, "confirm lowest fail");
  EXPECT_EQ(r.history[12].probe.trials, 2u);
  EXPECT_EQ(point_at(r, 38).trials.size(), 3u);
  EXPECT_TRUE(search.done());
  EXPECT_FALSE(search.next().has_value());
}

TEST(capacity, BracketContainsAnyCapacityWithinTolerance) {
  for (double capacity = 1.05; capacity < 900; capacity *= 1.07) {
    CapacityOptions o;
    o.start = 1;
    o.max_load = 1000;
    o.trials_near_boundary = 1;
    CapacitySearch search(o);
    const CapacityResult r = drive(search, threshold(capacity));
    ASSERT_EQ(r.stop, CapacityStop::kToleranceReached) << capacity << ": " << r.explanation;
    EXPECT_LE(*r.highest_pass, capacity);
    EXPECT_GT(*r.lowest_fail, capacity);
    EXPECT_LE(r.relative_width, o.tolerance + 1e-12);
    // log2 of the range for the ramp, then log2(1 / tolerance) + 1 bisections.
    EXPECT_LE(r.history.size(), 11u + 7u) << capacity;
  }
}

// A system whose real capacity varies per trial: 37.3 (1 + sigma N(0, 1)); a trial at a load
// passes when the load is below that trial's capacity, so 37.3 is where a trial passes half the time.
CapacityResult noisy_search(std::uint64_t seed, double sigma) {
  Rng rng(seed);
  CapacityOptions o;
  o.start = 1;
  o.max_load = 1000;
  CapacitySearch search(o);
  return drive(search, [&](double load, std::size_t) {
    const double cap = 37.3 * (1 + sigma * rng.normal());
    return outcome(load <= cap ? Verdict::kPass : Verdict::kFail, std::min(load, cap), std::min(load, cap), false);
  });
}

TEST(capacity, NoisyCapacityIsBracketed) {
  const double truth = 37.3;
  // Noise small against the tolerance (0.5% vs 5%): every bracket holds the truth.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const CapacityResult r = noisy_search(seed, 0.005);
    ASSERT_EQ(r.stop, CapacityStop::kToleranceReached) << "seed " << seed;
    EXPECT_LE(*r.highest_pass, truth) << "seed " << seed;
    EXPECT_GT(*r.lowest_fail, truth) << "seed " << seed;
    EXPECT_LE(r.relative_width, 0.05 + 1e-12);
  }
  // Noise of 1%: the loads probed next to the truth (37 and 38, 0.8 sigma away) pass a trial with
  // probability 0.79 and 0.21, so a majority of 3 misjudges each about 11% of the time. The bracket
  // must stay consistent with the truth within 3 sigma always, rest on >= 3 trials at both ends,
  // and contain the truth in most runs (about 85% expected).
  int contains = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const CapacityResult r = noisy_search(seed, 0.01);
    ASSERT_EQ(r.stop, CapacityStop::kToleranceReached) << "seed " << seed;
    ASSERT_TRUE(r.highest_pass && r.lowest_fail);
    EXPECT_LE(r.relative_width, 0.05 + 1e-12);
    EXPECT_LE(*r.highest_pass, truth * 1.03) << "seed " << seed;
    EXPECT_GE(*r.lowest_fail, truth * 0.97) << "seed " << seed;
    EXPECT_GE(point_at(r, *r.highest_pass).trials.size(), 3u);
    EXPECT_GE(point_at(r, *r.lowest_fail).trials.size(), 3u);
    if (*r.highest_pass <= truth && truth < *r.lowest_fail) ++contains;
  }
  EXPECT_GE(contains, 150);
}

TEST(capacity, IntegerConcurrency) {
  CapacityOptions o;
  o.start = 1;
  o.max_load = 512;
  o.integer_loads = true;
  CapacitySearch search(o);
  const CapacityResult r = drive(search, threshold(13));
  // 1, 2, 4, 8 pass, 16 fails; 12 P; [12, 16]: 14 F (one trial: 2 loads left between); [12, 14]:
  // 13 with 3 trials, P; [13, 14] are adjacent: 14 topped up, stop.
  EXPECT_EQ(probed_loads(r), (std::vector<double>{1, 2, 4, 8, 16, 12, 14, 13, 14}));
  EXPECT_EQ(*r.highest_pass, 13);
  EXPECT_EQ(*r.lowest_fail, 14);
  EXPECT_EQ(r.stop, CapacityStop::kToleranceReached);

  // Large concurrency: the relative tolerance stops before adjacent integers.
  CapacityOptions big = o;
  big.start = 8;
  big.max_load = 4096;
  CapacitySearch big_search(big);
  const CapacityResult b = drive(big_search, threshold(300));
  EXPECT_LE(*b.highest_pass, 300);
  EXPECT_GT(*b.lowest_fail, 300);
  EXPECT_GT(*b.lowest_fail - *b.highest_pass, 1);
  EXPECT_LE(b.relative_width, big.tolerance);
  for (const auto& p : b.points) EXPECT_EQ(p.load, std::floor(p.load));
}

TEST(capacity, StoppingReasons) {
  CapacityOptions o;
  o.start = 1;
  o.max_load = 100;
  CapacitySearch passes(o);
  const CapacityResult r = drive(passes, threshold(1000));
  EXPECT_EQ(r.stop, CapacityStop::kMaxLoadPasses);
  EXPECT_EQ(probed_loads(r), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 100}));
  EXPECT_EQ(*r.highest_pass, 100);
  EXPECT_FALSE(r.lowest_fail);

  CapacityOptions floor1 = o;
  floor1.min_load = 1;  // no room to ramp down
  CapacitySearch fails(floor1);
  const CapacityResult f = drive(fails, threshold(0.5));
  EXPECT_EQ(f.stop, CapacityStop::kMinLoadFails);
  EXPECT_FALSE(f.valid);
  EXPECT_EQ(f.confidence, "none");
  EXPECT_FALSE(f.highest_pass);
  EXPECT_EQ(*f.lowest_fail, 1);
  EXPECT_TRUE(std::isnan(f.goodput_at_capacity));

  CapacityOptions few = o;
  few.max_points = 5;
  CapacitySearch limited(few);
  const CapacityResult m = drive(limited, threshold(37.3));
  EXPECT_EQ(m.stop, CapacityStop::kMaxPoints);
  EXPECT_EQ(m.history.size(), 5u);
  EXPECT_EQ(*m.highest_pass, 16);
  EXPECT_NE(m.explanation.find("before any load failed"), std::string::npos);

  CapacityOptions eight = o;
  eight.max_points = 8;  // ramp to 64 (F), then 48 (F): bracket [32, 48] still 50% wide
  CapacitySearch cut(eight);
  const CapacityResult c = drive(cut, threshold(37.3));
  EXPECT_EQ(c.stop, CapacityStop::kMaxPoints);
  EXPECT_EQ(*c.highest_pass, 32);
  EXPECT_EQ(*c.lowest_fail, 48);
  EXPECT_DOUBLE_EQ(c.relative_width, 0.5);

  // Cut just before the first confirming probe: the bracket is narrow enough, an end is not yet
  // confirmed; said so (it read "still 2.63% wide (tolerance 5.00%)").
  CapacitySearch whole(o);
  const CapacityResult full = drive(whole, threshold(37.3));
  std::size_t first_confirm = 0;
  while (first_confirm < full.history.size() && full.history[first_confirm].probe.why.rfind("confirm", 0) != 0) {
    ++first_confirm;
  }
  ASSERT_LT(first_confirm, full.history.size()) << "the full search confirms its ends";
  CapacityOptions unconfirmed = o;
  unconfirmed.max_points = first_confirm;
  CapacitySearch short_search(unconfirmed);
  const CapacityResult u = drive(short_search, threshold(37.3));
  EXPECT_EQ(u.stop, CapacityStop::kMaxPoints);
  EXPECT_NE(u.explanation.find("within the tolerance"), std::string::npos) << u.explanation;
  EXPECT_NE(u.explanation.find("but not confirmed: the next probe was to confirm"), std::string::npos)
      << u.explanation;
  EXPECT_EQ(u.explanation.find("still"), std::string::npos) << u.explanation;
}

TEST(capacity, InconclusiveSaturatedAndTiesAreNotPasses) {
  CapacityOptions o;
  o.start = 1;
  o.max_load = 1000;
  // Always INCONCLUSIVE above 37.3 (e.g. exceedances a bigger probe cannot resolve): never taken
  // as a FAIL; re-probed max_extensions times, then it bounds the bracket from above (the SLO
  // could not be shown to hold there) and the search goes on below it.
  CapacitySearch inc(o);
  const CapacityResult i = drive(inc, [](double load, std::size_t) {
    return outcome(load <= 37.3 ? Verdict::kPass : Verdict::kInconclusive, load, load, false);
  });
  // Each INCONCLUSIVE point costs three probes: the probe budget may end the search first.
  EXPECT_TRUE(i.stop == CapacityStop::kToleranceReached || i.stop == CapacityStop::kMaxPoints) << to_string(i.stop);
  EXPECT_EQ(point_at(i, 64).verdict, Verdict::kInconclusive);
  EXPECT_EQ(point_at(i, 64).extensions, 2u);
  const std::vector<double> loads = probed_loads(i);
  EXPECT_EQ(std::vector<double>(loads.begin(), loads.begin() + 9), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 64, 64}));
  ASSERT_TRUE(i.highest_pass && i.lowest_fail);
  EXPECT_LE(*i.highest_pass, 37.3);
  EXPECT_GT(*i.lowest_fail, 37.3);
  EXPECT_LE(*i.lowest_fail - *i.highest_pass, 0.25 * *i.highest_pass);
  for (const auto& p : i.points) EXPECT_NE(p.verdict, Verdict::kFail) << p.load;  // never a FAIL
  EXPECT_TRUE(i.valid);
  EXPECT_EQ(i.confidence, "low");
  ASSERT_EQ(i.notes.size(), 1u);
  EXPECT_NE(i.notes[0].find("stayed INCONCLUSIVE"), std::string::npos) << i.notes[0];
  // A saturated run is a FAIL even when its window's verdict passed.
  CapacitySearch sat(o);
  const CapacityResult s = drive(sat, [](double load, std::size_t) {
    return outcome(Verdict::kPass, load, load, load > 37.3);
  });
  EXPECT_EQ(*s.highest_pass, 37);
  EXPECT_EQ(point_at(s, 38).verdict, Verdict::kFail);
  // Two trials near the boundary, one pass and one fail at 37: a tie is not a pass.
  CapacityOptions two = o;
  two.trials_near_boundary = 2;
  CapacitySearch tie(two);
  const CapacityResult t = drive(tie, [](double load, std::size_t trial) {
    const bool pass = load == 37 ? trial == 0 : load <= 37.3;
    return outcome(pass ? Verdict::kPass : Verdict::kFail, load, load, false);
  });
  const CapacityPoint& p37 = point_at(t, 37);
  EXPECT_EQ(p37.passes, 1u);
  EXPECT_EQ(p37.fails, 1u);
  EXPECT_EQ(p37.verdict, Verdict::kFail);
  EXPECT_EQ(*t.highest_pass, 36);
  EXPECT_EQ(*t.lowest_fail, 37);
}

TEST(capacity, ALuckyBoundaryTrialIsOutvoted) {
  // True capacity 35, but the first trial at 36 passes by luck. 1..32 P, 64/48/40 F, 36 P (lucky),
  // 38 F, 37 x3 F; [36, 37] is within tolerance, so 36 gets 2 more trials: both fail, 36 is now
  // 1 pass / 2 fails. The bracket falls back to [32, 36]: 34 P, then 35 x3 P; [35, 36] stops.
  CapacityOptions o;
  o.start = 1;
  o.max_load = 1000;
  CapacitySearch search(o);
  const CapacityResult r = drive(search, [](double load, std::size_t trial) {
    const bool pass = load <= 35 || (load == 36 && trial == 0);
    return outcome(pass ? Verdict::kPass : Verdict::kFail, load, load, false);
  });
  EXPECT_EQ(probed_loads(r), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37, 36, 34, 35}));
  EXPECT_EQ(r.history[12].probe.why, "confirm highest pass");
  EXPECT_EQ(r.history[12].point_verdict, Verdict::kFail);
  EXPECT_EQ(*r.highest_pass, 35);
  EXPECT_EQ(*r.lowest_fail, 36);
  EXPECT_EQ(r.stop, CapacityStop::kToleranceReached);
}

TEST(capacity, DriverContract) {
  CapacityOptions o;
  o.start = 2;
  o.max_load = 100;
  CapacitySearch search(o);
  const auto first = search.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->load, 2);
  EXPECT_EQ(first->why, "ramp");
  EXPECT_EQ(search.next()->load, 2);  // asking again does not advance
  EXPECT_THROW(search.report(3, PointOutcome{{outcome(Verdict::kPass, 1, 1, false)}}), std::logic_error);
  EXPECT_THROW(search.report(2, PointOutcome{}), std::invalid_argument);
  EXPECT_THROW(search.report(2, PointOutcome{{outcome(Verdict::kNone, 1, 1, false)}}), std::invalid_argument);
  search.report(2, PointOutcome{{outcome(Verdict::kPass, 1.5, 2, false), outcome(Verdict::kPass, 2.5, 2, false)}});
  EXPECT_EQ(search.next()->load, 4);
  const CapacityResult mid = search.result();
  EXPECT_EQ(mid.stop, CapacityStop::kRunning);
  EXPECT_DOUBLE_EQ(mid.goodput_at_capacity, 2);  // median of 1.5 and 2.5
  search.report(4, PointOutcome{{outcome(Verdict::kFail, 1, 1, false)}});
  // [2, 4] is 100% wide: bisect at 3.
  EXPECT_EQ(search.next()->load, 3);
  EXPECT_EQ(search.next()->why, "bisect");

  const nlohmann::json j = to_json(search.result());
  EXPECT_EQ(j.at("stop"), "running");
  EXPECT_EQ(j.at("highest_pass"), 2.0);
  EXPECT_EQ(j.at("lowest_fail"), 4.0);
  EXPECT_EQ(j.at("history").size(), 2u);
  EXPECT_EQ(j.at("points").at(0).at("trials").size(), 2u);

  CapacityOptions bad = o;
  bad.growth = 1;
  EXPECT_THROW(CapacitySearch{bad}, std::invalid_argument);
  bad = o;
  bad.max_load = 1;
  EXPECT_THROW(CapacitySearch{bad}, std::invalid_argument);
  bad = o;
  bad.integer_loads = true;
  bad.start = 1.5;
  EXPECT_THROW(CapacitySearch{bad}, std::invalid_argument);
  bad = o;
  bad.tolerance = 0;
  EXPECT_THROW(CapacitySearch{bad}, std::invalid_argument);

  // Finished: nothing more to report.
  CapacityOptions tiny = o;
  tiny.max_points = 1;
  CapacitySearch one(tiny);
  one.report(2, PointOutcome{{outcome(Verdict::kPass, 1, 1, false)}});
  EXPECT_TRUE(one.done());
  EXPECT_THROW(one.report(2, PointOutcome{{outcome(Verdict::kPass, 1, 1, false)}}), std::logic_error);
}

// An INCONCLUSIVE first probe (too small) that a bigger probe resolves: the bigger probe's
// verdict replaces it, and the search finds the same bracket as a deterministic system.
TEST(capacity, InconclusiveIsExtendedNotFailed) {
  CapacityOptions o;
  o.start = 1;
  o.max_load = 1000;
  o.max_points = 40;  // every load above 16 takes two probes
  CapacitySearch search(o);
  std::vector<std::size_t> extensions;
  std::map<double, std::size_t> trials_run;
  for (int guard = 0; guard < 200 && search.next(); ++guard) {
    const Probe p = *search.next();
    extensions.push_back(p.extension);
    PointOutcome out;
    for (std::size_t k = 0; k < p.trials; ++k) {
      ++trials_run[p.load];
      // Loads above 16 need one extension to be conclusive.
      const Verdict v = p.load > 16 && p.extension == 0 ? Verdict::kInconclusive
                        : p.load <= 37.3                 ? Verdict::kPass
                                                         : Verdict::kFail;
      out.trials.push_back(outcome(v, p.load, p.load, false));
    }
    search.report(p.load, out);
  }
  const CapacityResult r = search.result();
  EXPECT_EQ(r.stop, CapacityStop::kToleranceReached);
  EXPECT_EQ(*r.highest_pass, 37);
  EXPECT_EQ(*r.lowest_fail, 38);
  EXPECT_TRUE(r.valid);
  EXPECT_EQ(r.confidence, "high");
  EXPECT_GT(std::count(extensions.begin(), extensions.end(), 1u), 0);
  // 32 was INCONCLUSIVE first, then PASS: its superseded trial is kept but not counted.
  const CapacityPoint& p32 = point_at(r, 32);
  EXPECT_EQ(p32.verdict, Verdict::kPass);
  EXPECT_EQ(p32.inconclusive, 0u);
  EXPECT_TRUE(p32.trials.front().superseded);
  const auto j = to_json(r);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["confidence"], "high");
  EXPECT_NE(j["bounded_by"].get<std::string>().find("[37, 38]"), std::string::npos);
}

// A start above the capacity ramps down (start / growth, ...) until a load passes.
TEST(capacity, RampsDownWhenTheStartFails) {
  CapacityOptions o;
  o.start = 100;
  o.max_load = 1000;
  CapacitySearch search(o);
  const CapacityResult r = drive(search, threshold(20));
  const auto loads = probed_loads(r);
  ASSERT_GE(loads.size(), 4u);
  EXPECT_EQ(std::vector<double>(loads.begin(), loads.begin() + 4), (std::vector<double>{100, 50, 25, 12.5}));
  EXPECT_EQ(r.history[1].probe.why, "ramp down");
  EXPECT_EQ(r.stop, CapacityStop::kToleranceReached);
  EXPECT_LE(*r.highest_pass, 20);
  EXPECT_GT(*r.lowest_fail, 20);
  EXPECT_TRUE(r.valid);
  // Integer loads ramp down to 1 at most.
  CapacityOptions c = o;
  c.integer_loads = true;
  c.start = 8;
  CapacitySearch conc(c);
  const CapacityResult rc = drive(conc, threshold(0.5));
  EXPECT_EQ(rc.stop, CapacityStop::kMinLoadFails);
  EXPECT_EQ(probed_loads(rc), (std::vector<double>{8, 4, 2, 1}));
}

// An INVALID trial is never a PASS (it counts as inconclusive); a PASS whose window was too
// short for its latency is INCONCLUSIVE; over-load and server errors are FAILs.
TEST(capacity, JudgeTrial) {
  ProbeSizing z;
  TrialEvidence pass;
  pass.verdict = Verdict::kPass;
  pass.window_s = 60;
  pass.e2e_p99_s = 1;
  EXPECT_EQ(judge_trial(pass, z).verdict, Verdict::kPass);

  TrialEvidence lag = pass;
  lag.valid = false;
  lag.invalid_codes = {"schedule_lag"};
  EXPECT_EQ(judge_trial(lag, z).verdict, Verdict::kInconclusive);
  TrialEvidence few = pass;
  few.valid = false;
  few.invalid_codes = {"too_few_samples"};
  EXPECT_EQ(judge_trial(few, z).verdict, Verdict::kInconclusive);
  few.verdict = Verdict::kFail;  // a FAIL with few samples is still a FAIL
  EXPECT_EQ(judge_trial(few, z).verdict, Verdict::kFail);
  TrialEvidence errors = pass;
  errors.valid = false;
  errors.invalid_codes = {"server_errors"};
  EXPECT_EQ(judge_trial(errors, z).verdict, Verdict::kFail);

  TrialEvidence over = pass;
  over.overloaded = true;
  over.overload_reason = "over-loaded: in flight grew";
  const TrialOutcome o = judge_trial(over, z);
  EXPECT_EQ(o.verdict, Verdict::kFail);
  EXPECT_TRUE(o.saturated);
  EXPECT_NE(o.note.find("in flight grew"), std::string::npos);
  TrialEvidence stopped = pass;
  stopped.stopped_early = true;
  EXPECT_TRUE(judge_trial(stopped, z).saturated);

  TrialEvidence short_window = pass;
  short_window.e2e_p99_s = 7;  // 60 s < 10 x 7 s
  EXPECT_EQ(judge_trial(short_window, z).verdict, Verdict::kInconclusive);
  short_window.verdict = Verdict::kFail;
  EXPECT_EQ(judge_trial(short_window, z).verdict, Verdict::kFail);

  // INCONCLUSIVE at the bound: over half the 1% a p99 allows is over it.
  TrialEvidence close = pass;
  close.verdict = Verdict::kInconclusive;
  close.exceedance_fraction = 6.0 / 838;
  const TrialOutcome at_bound = judge_trial(close, z);
  EXPECT_EQ(at_bound.verdict, Verdict::kInconclusive);
  EXPECT_TRUE(at_bound.near_bound);
  EXPECT_NE(at_bound.note.find("at the bound"), std::string::npos) << at_bound.note;
  close.exceedance_fraction = 0.004;  // too few requests, not close: a bigger probe can decide it
  EXPECT_FALSE(judge_trial(close, z).near_bound);
  close.exceedance_fraction = std::nan("");
  EXPECT_FALSE(judge_trial(close, z).near_bound);
  close.exceedance_fraction = 0.009;
  close.valid = false;  // INVALID: a re-run can decide it
  close.invalid_codes = {"schedule_lag"};
  EXPECT_FALSE(judge_trial(close, z).near_bound);

  // An invalid trial that reported PASS does not make its point pass.
  CapacityOptions opt;
  opt.start = 10;
  opt.max_extensions = 0;
  CapacitySearch search(opt);
  search.report(10, PointOutcome{{judge_trial(lag, z)}});
  EXPECT_EQ(search.result().points.front().verdict, Verdict::kInconclusive);
  // Not a PASS: the search goes below it.
  const auto next = search.next();
  ASSERT_TRUE(next.has_value());
  EXPECT_LT(next->load, 10);
}

// Probes are sized for the verdict: early stopping's requests with the margin, a window that
// grows with the E2E measured at the load, twice as big per extension.
TEST(capacity, ProbeSizing) {
  ProbeSizing z;
  z.margin_exceedances = 0;
  EXPECT_EQ(size_probe(z, 0.5, 0).min_requests, 459);
  z.margin_exceedances = 2;
  const ProbeSize s = size_probe(z, 0.5, 0);
  EXPECT_GT(s.min_requests, 459);
  EXPECT_EQ(s.min_requests, llmload::analysis::early_stopping_min_requests(2, 0.99, 0.99));
  EXPECT_DOUBLE_EQ(s.min_window_s, 20);  // the floor: 10 x 0.5 s = 5 s is less
  EXPECT_DOUBLE_EQ(s.warmup_s, 2);
  const ProbeSize slow = size_probe(z, 3, 0);
  EXPECT_DOUBLE_EQ(slow.min_window_s, 30);
  EXPECT_DOUBLE_EQ(slow.warmup_s, 9);
  const ProbeSize ext = size_probe(z, 3, 2);
  EXPECT_EQ(ext.min_requests, 4 * s.min_requests);
  EXPECT_DOUBLE_EQ(ext.min_window_s, 120);
  EXPECT_DOUBLE_EQ(size_probe(z, std::nan(""), 0).min_window_s, 20);
  z.percentile = 95;
  z.margin_exceedances = 0;
  EXPECT_EQ(size_probe(z, 1, 0).min_requests, 100);  // early stopping needs 90; a valid run's p99 needs 100
  z.percentile = 100;
  EXPECT_THROW(size_probe(z, 1, 0), std::invalid_argument);
}

// One pass, one fail and one inconclusive trial: the inconclusive one could still make the
// point pass, so it is resolved (re-probed), not counted as the deciding FAIL.
TEST(capacity, AnInconclusiveTrialNeverDecidesAFail) {
  CapacityOptions o;
  o.start = 10;
  o.max_extensions = 1;
  CapacitySearch search(o);
  search.report(10, PointOutcome{{outcome(Verdict::kPass, 1, 1, false), outcome(Verdict::kFail, 1, 1, false),
                                  outcome(Verdict::kInconclusive, 1, 1, false)}});
  EXPECT_EQ(search.result().points.front().verdict, Verdict::kInconclusive);
  const auto p = search.next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->load, 10);
  EXPECT_EQ(p->extension, 1u);
  EXPECT_EQ(p->trials, 1u);
  search.report(10, PointOutcome{{outcome(Verdict::kPass, 1, 1, false)}});
  EXPECT_EQ(search.result().points.front().verdict, Verdict::kPass);  // 2 of 3 counted trials pass
  // Two fails and an inconclusive: it cannot pass any more, a FAIL.
  CapacitySearch two(o);
  two.report(10, PointOutcome{{outcome(Verdict::kFail, 1, 1, false), outcome(Verdict::kFail, 1, 1, false),
                               outcome(Verdict::kInconclusive, 1, 1, false)}});
  EXPECT_EQ(two.result().points.front().verdict, Verdict::kFail);
}

}  // namespace

namespace {

TrialOutcome at_the_bound(double load) {
  TrialOutcome t = outcome(Verdict::kInconclusive, load, load, false);
  t.near_bound = true;
  return t;
}

}  // namespace

// The fixed model with 8 slots (docs/statistics.md): its p99 TTFT climbs slowly through the
// bound, so loads near the capacity are INCONCLUSIVE at the bound however big the probe. Such a
// point is not extended: the next probe goes just under it, and a PASS there ends the search.
TEST(capacity, AnInconclusiveLoadAtTheBoundIsSteppedUnderNotExtended) {
  CapacityOptions o;
  o.start = 3.18;
  o.max_load = 100;
  CapacitySearch search(o);
  const CapacityResult r = drive(search, [](double load, std::size_t) {
    if (load <= 2.95) return outcome(Verdict::kPass, load, load, false);
    if (load <= 3.3) return at_the_bound(load);
    return outcome(Verdict::kFail, load / 2, 3.3, false);
  });
  const auto loads = probed_loads(r);
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_DOUBLE_EQ(loads[0], 3.18);
  EXPECT_DOUBLE_EQ(loads[1], 3.18 / 1.05);
  EXPECT_DOUBLE_EQ(loads[2], 3.18 / 1.05 / 1.05);
  EXPECT_EQ(r.history[1].probe.why, "just under a near-bound load");
  EXPECT_EQ(r.history[1].probe.trials, 3u);
  for (const auto& h : r.history) EXPECT_EQ(h.probe.extension, 0u);
  EXPECT_EQ(r.stop, CapacityStop::kToleranceReached);
  ASSERT_TRUE(r.highest_pass && r.lowest_fail);
  EXPECT_DOUBLE_EQ(*r.highest_pass, 3.18 / 1.05 / 1.05);
  EXPECT_DOUBLE_EQ(*r.lowest_fail, 3.18 / 1.05);
  EXPECT_TRUE(point_at(r, *r.lowest_fail).near_bound);
  EXPECT_TRUE(r.valid);
  EXPECT_EQ(r.confidence, "medium");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("sits at the bound"), std::string::npos) << r.notes[0];
  EXPECT_EQ(r.notes[0].find("bigger probes"), std::string::npos) << r.notes[0];
  EXPECT_TRUE(to_json(r)["points"][1]["near_bound"].get<bool>());

  // Reached by the ramp from a PASS far below: the step under it comes before any bisection,
  // and a FAIL there falls back to bisecting [pass, fail].
  CapacityOptions up = o;
  up.start = 1;
  CapacitySearch ramp(up);
  const CapacityResult u = drive(ramp, [](double load, std::size_t) {
    if (load <= 2.5) return outcome(Verdict::kPass, load, load, false);
    if (load <= 4.5) return outcome(Verdict::kFail, load, load, false);
    return at_the_bound(load);  // not monotone: the step under 4 fails
  });
  const auto ul = probed_loads(u);
  ASSERT_GE(ul.size(), 4u);
  EXPECT_EQ(std::vector<double>(ul.begin(), ul.begin() + 3), (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(u.history[3].probe.why, "bisect");  // 4 FAILed outright: nothing to step under
  EXPECT_EQ(u.stop, CapacityStop::kToleranceReached);
  EXPECT_LE(*u.highest_pass, 2.5);
  EXPECT_GT(*u.lowest_fail, 2.5);

  // At the lowest load there is nothing below to probe instead: it is extended after all.
  CapacityOptions low = o;
  low.start = 4;
  low.min_load = 4;
  CapacitySearch floor(low);
  floor.report(4, PointOutcome{{at_the_bound(4)}});
  const auto p = floor.next();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->why, "extend inconclusive");
  EXPECT_EQ(p->extension, 1u);
}
