// ScenarioConfig::validate() for arrivals, ramps, stages, sessions and the in-flight cap: each
// error names the flag and the fix.

#include <gtest/gtest.h>

#include <limits>

#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::config_error;

ScenarioConfig server() {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = 10;
  return c;
}

// validate() on a copy; the error message ("" when it passes).
std::string check(ScenarioConfig c) {
  return config_error([&] { c.validate(); });
}

void expect_error_naming(const ScenarioConfig& c, const std::string& flag) {
  const std::string msg = check(c);
  ASSERT_FALSE(msg.empty()) << "expected a ConfigError naming " << flag;
  EXPECT_NE(msg.find(flag), std::string::npos) << msg;
}

TEST(Validate, ArrivalProcessAndBurstiness) {
  auto c = server();
  c.arrivals.process = "weibull";
  expect_error_naming(c, "--arrival-process");
  for (double b : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    c = server();
    c.arrivals.process = "gamma";
    c.arrivals.burstiness = b;
    expect_error_naming(c, "--burstiness");
  }
  c = server();
  c.arrivals.burstiness = 0.5;  // with poisson
  expect_error_naming(c, "--arrival-process gamma");
  c = server();
  c.arrivals.process = "gamma";
  c.arrivals.burstiness = 0.5;
  EXPECT_EQ(check(c), "");
  c.arrivals.process = "constant";
  c.arrivals.burstiness = 1;
  EXPECT_EQ(check(c), "");

  ScenarioConfig conc;
  conc.arrivals.process = "gamma";
  expect_error_naming(conc, "--arrival-process");
}

TEST(Validate, Ramp) {
  auto c = server();
  c.arrivals.ramp = "sideways";
  expect_error_naming(c, "--ramp");
  c = server();
  c.arrivals.ramp = "linear";  // without a duration
  expect_error_naming(c, "--ramp-duration");
  c = server();
  c.arrivals.ramp_duration = 10s;  // with ramp none
  expect_error_naming(c, "--ramp linear");
  c = server();
  c.arrivals.ramp_start_rate = 2;  // with ramp none
  expect_error_naming(c, "--ramp-start-rate");
  c = server();
  c.arrivals.ramp = "exponential";
  c.arrivals.ramp_duration = 10s;
  c.arrivals.ramp_start_rate = -1;
  expect_error_naming(c, "--ramp-start-rate");
  c.arrivals.ramp_start_rate = 0;
  EXPECT_EQ(check(c), "");

  ScenarioConfig conc;
  conc.arrivals.ramp = "linear";
  conc.arrivals.ramp_duration = 10s;
  expect_error_naming(conc, "--ramp");
}

TEST(Validate, Stages) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kStages;
  expect_error_naming(c, "--stages");  // none given
  c.arrivals.stages = parse_stages("rate:5@10s,concurrency:4@10s");
  EXPECT_EQ(check(c), "");
  ScenarioConfig v = c;
  v.validate();
  EXPECT_FALSE(v.num_requests) << "stages set the run's length: no default request count";

  auto other = server();
  other.arrivals.stages = c.arrivals.stages;
  expect_error_naming(other, "--stages");

  for (double value : {0.0, -2.0}) {
    auto bad = c;
    bad.arrivals.stages[0].value = value;
    expect_error_naming(bad, "--stages");
  }
  auto frac = c;
  frac.arrivals.stages[1].value = 2.5;
  expect_error_naming(frac, "--stages");
  auto zero = c;
  zero.arrivals.stages[1].duration = Nanos(0);
  expect_error_naming(zero, "--stages");

  auto n = c;
  n.num_requests = 10;
  expect_error_naming(n, "--num-requests");
  auto w = c;
  w.warmup = parse_warmup("20s");
  expect_error_naming(w, "--warmup");
  auto turns = c;
  turns.turns = 2;
  expect_error_naming(turns, "--turns");
  auto cap = c;
  cap.max_inflight = 8;
  EXPECT_EQ(check(cap), "");
  auto gamma = c;
  gamma.arrivals.process = "gamma";
  gamma.arrivals.burstiness = 0.5;
  EXPECT_EQ(check(gamma), "");
  // Every request is kept in memory: the plan's size is bounded up front.
  auto huge = c;
  huge.arrivals.stages = parse_stages("rate:100000@1h");
  expect_error_naming(huge, "--stages");
  huge.arrivals.stages = parse_stages("concurrency:5000000@1s");
  expect_error_naming(huge, "--stages");
}

TEST(Validate, Sessions) {
  ScenarioConfig c;
  c.turns = 0;
  expect_error_naming(c, "--turns");
  c.turns = 3;
  c.think_time = -1s;
  expect_error_naming(c, "--think-time");
  c.think_time = 2s;
  EXPECT_EQ(check(c), "");
  ScenarioConfig one;
  one.think_time = 1s;  // think time without sessions
  expect_error_naming(one, "--turns");
  // Open-loop sessions bounded only by a duration: their count is bounded up front.
  auto srv = server();
  srv.request_rate = 10'000;
  srv.turns = 10;
  srv.duration = std::chrono::hours(1);
  expect_error_naming(srv, "--duration");
  srv.duration = 10s;
  EXPECT_EQ(check(srv), "");
}

TEST(Validate, MaxInflight) {
  auto c = server();
  c.max_inflight = 0;
  expect_error_naming(c, "--max-inflight");
  c.max_inflight = 4;
  EXPECT_EQ(check(c), "");  // server honours the cap now
  ScenarioConfig off;
  off.kind = ScenarioKind::kOffline;
  off.max_inflight = 0;
  expect_error_naming(off, "--max-inflight");
  ScenarioConfig conc;
  conc.max_inflight = 4;
  expect_error_naming(conc, "--max-inflight");
}

TEST(Validate, TimedArrivals) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.timed_arrivals = true;
  EXPECT_EQ(check(c), "");  // no --request-rate needed
  ScenarioConfig no_rate;
  no_rate.kind = ScenarioKind::kServer;
  expect_error_naming(no_rate, "--request-rate");
  ScenarioConfig conc;
  conc.timed_arrivals = true;
  expect_error_naming(conc, "--scenario server");
  auto ramp = c;
  ramp.arrivals.ramp = "linear";
  ramp.arrivals.ramp_duration = 5s;
  expect_error_naming(ramp, "--ramp");
  auto gamma = c;
  gamma.arrivals.process = "gamma";
  expect_error_naming(gamma, "--arrival-process");
}

}  // namespace
}  // namespace llmload
