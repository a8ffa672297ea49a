#pragma once
// The schedule: a pure value computed from (seed, scenario). For open-loop scenarios it holds the
// intended send time of every request as an offset from the run's start; the same seed gives the
// same schedule, bit for bit.
//
// Arrival processes (scenario server, and the rate stages of scenario stages). Every process is
// generated the same way: unit-mean gaps g_1, g_2, ... are summed into "operational time"
// tau_k = g_1 + ... + g_k, and request k arrives at t_k = Lambda^-1(tau_k), where Lambda(t) is the
// expected number of arrivals by t (the integral of the rate curve). For a constant rate R that
// is simply t_k = tau_k / R; with a ramp it is the time-rescaling construction of a
// non-homogeneous process (exact for Poisson; for gamma and constant the same rescaling of their
// unit-mean gaps).
//   poisson:  g ~ Exp(1)                       (coefficient of variation 1)
//   gamma:    g ~ Gamma(shape k, scale 1/k)    k = --burstiness; mean 1, CV 1/sqrt(k). In real
//             time at rate R that is vLLM's gamma(shape = k, scale = 1/(R k)): mean gap 1/R.
//   constant: g = 1                            (gaps exactly 1/R)
// The timeline is never rescaled to end at N/rate: newer vLLM (benchmarks/serve.py get_request)
// multiplies all cumulative delays so that the last one lands exactly on N/rate when no ramp is
// set; we do not, so the realized gaps are genuine samples of the requested distribution (see
// METRICS.md, "Realized arrivals"). vLLM's ramp also steps the rate per request index; ours is a
// rate curve in time.
//
// Ramps (--ramp linear|exponential, --ramp-duration D, --ramp-start-rate R0): the rate goes from R0
// to --request-rate R over D, then holds R. linear: r(t) = R0 + (R - R0) t/D; exponential:
// r(t) = R0 (R/R0)^(t/D). R0 = 0 (the default) means a tenth of R. R0 > R ramps down.
// The ramp is NOT warmup by itself: requests during the ramp are measured unless --warmup says
// otherwise. To measure only at the target rate give --warmup equal to --ramp-duration (e.g.
// --ramp linear --ramp-duration 60s --warmup 60s): the window then starts at the ramp's end.
//
// Random numbers come from mt19937_64 through this file's own transforms (53-bit uniform,
// Marsaglia polar normal, Marsaglia-Tsang gamma): std::*_distribution are not specified
// bit-for-bit and differ between standard libraries.

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/scenario.hpp"

namespace llmload {

struct Schedule {
  /// Open loop: intended offsets from run start, non-decreasing; warmup requests first.
  /// Closed loop: empty (requests are released when slots free up).
  std::vector<Nanos> arrivals;
  /// Number of leading requests that are warmup (open loop, warmup by count or time).
  std::int64_t warmup_requests = 0;
  /// Where the measurement window starts (offset from run start) when fixed in advance: a shard's
  /// part of a global schedule starts its window where the global schedule's starts
  /// (partition_schedule). nullopt: at the first measured request (or the end of a time warmup).
  std::optional<Nanos> window_start;
};

/// Builds the schedule for `cfg` (validated).
/// - Server: arrivals of cfg.arrivals' process at cfg.request_rate (with its ramp) from the arrival
///   seed; requests continue until num_requests measured requests exist or the arrival offset
///   passes the end of the measurement window (window start + duration).
/// - Server with `timed_arrivals` (trace replay; cfg.timed_arrivals): those offsets verbatim, see
///   schedule_from_arrivals, then cut to warmup + num_requests when num_requests is set and to the
///   window's end when duration is set. ConfigError if they are not sorted or negative.
/// - Offline: every offset is 0.
/// Closed-loop scenarios and stages: an empty schedule.
Schedule build_schedule(const ScenarioConfig& cfg, const std::vector<Nanos>* timed_arrivals = nullptr);

/// A schedule from given arrival offsets (already time-scaled), used as they are: warmup is the
/// first `warmup.requests` of them, or those before `warmup.duration`. Throws ConfigError when an
/// offset is negative or smaller than the one before it.
Schedule schedule_from_arrivals(std::vector<Nanos> arrivals, const WarmupSpec& warmup);

/// Exponential gap with the given mean, from a uniform u in [0, 1): -mean * ln(1 - u).
Nanos exponential_gap(double u, double mean_seconds);

enum class ArrivalProcess { kPoisson, kGamma, kConstant };
/// "poisson", "gamma", "constant". Throws ConfigError naming --arrival-process.
ArrivalProcess parse_arrival_process(std::string_view s);

enum class RampKind { kNone, kLinear, kExponential };
/// "none" (or empty), "linear", "exponential". Throws ConfigError naming --ramp.
RampKind parse_ramp(std::string_view s);

/// Parses a stage plan: comma-separated KIND:VALUE@DURATION with KIND `rate` (VALUE requests/s,
/// > 0) or `concurrency` (VALUE an integer >= 1), DURATION > 0 as in parse_duration (bare number:
/// seconds), e.g. "rate:5@30s,rate:10@30s,concurrency:16@60s". Throws ConfigError naming the bad
/// part, with an example.
std::vector<ArrivalConfig::Stage> parse_stages(std::string_view s);

/// The ramp's effective start rate: ramp_start_rate, or a tenth of `target` when it is 0.
double ramp_start_rate(const ArrivalConfig& a, double target);

/// Portable random numbers for arrivals. Not thread-safe.
class ArrivalRng {
 public:
  explicit ArrivalRng(std::uint64_t seed) : rng_(seed) {}
  /// Uniform in [0, 1), 53 bits.
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  /// Unit-mean exponential: -ln(1 - u).
  double exponential();
  /// Standard normal (Marsaglia polar method; the second value of each pair is discarded).
  double normal();
  /// Gamma with the given shape (> 0) and scale 1 (Marsaglia-Tsang; shape < 1 by boosting:
  /// Gamma(k) = Gamma(k + 1) * U^(1/k)).
  double gamma(double shape);

 private:
  std::mt19937_64 rng_;
};

/// The offered rate over time: a constant, or a ramp then the constant. Times in seconds from the
/// start of the process.
class RateCurve {
 public:
  /// Constant `rate` (> 0).
  explicit RateCurve(double rate);
  /// `target` with the ramp of `a` (none: constant).
  RateCurve(const ArrivalConfig& a, double target);
  double rate_at(double t) const;
  /// Lambda(t): expected arrivals in [0, t].
  double cumulative(double t) const;
  /// Lambda^-1(tau): the t with cumulative(t) = tau (tau >= 0).
  double inverse(double tau) const;

 private:
  RampKind kind_ = RampKind::kNone;
  double r0_ = 0;  // rate at t = 0
  double r1_ = 0;  // rate from the ramp's end on
  double d_ = 0;   // ramp length in seconds
};

/// Successive arrival offsets (from the process's own t = 0) of one arrival process: unit-mean
/// gaps of `a.process` mapped through the rate curve. The first arrival is one gap after 0.
class ArrivalStream {
 public:
  /// `a` gives the process, burstiness and ramp; `rate` the (target) rate.
  ArrivalStream(const ArrivalConfig& a, double rate, std::uint64_t seed);
  Nanos next();

 private:
  double unit_gap();
  ArrivalProcess process_;
  double shape_;
  RateCurve curve_;
  ArrivalRng rng_;
  double tau_ = 0;
};

}  // namespace llmload
