#pragma once
// The schedule: a pure value computed from (seed, scenario). For open-loop scenarios it holds the
// intended send time of every request as an offset from the run's start; the same seed gives the
// same schedule, bit for bit.

#include <cstdint>
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
};

/// Builds the schedule for `cfg` (validated). Server: exponential gaps with mean 1/rate from the
/// arrival seed, never rescaled; requests continue until num_requests measured requests exist or
/// the arrival offset passes the end of the measurement window. Offline: every offset is 0.
Schedule build_schedule(const ScenarioConfig& cfg);

/// Exponential gap with the given mean, from a uniform u in [0, 1): -mean * ln(1 - u).
Nanos exponential_gap(double u, double mean_seconds);

}  // namespace llmload
