#pragma once
// The probe stream (--probe-rate; docs/metrics.md "Probe stream"): single small requests at their
// own seeded Poisson schedule beside the load, built and measured apart from it. Pure logic: the
// RunController starts them on its transport and hands their records back here.

#include <cstdint>
#include <optional>
#include <span>

#include "llmload/analysis/probe_metrics.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/probe_config.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/schedule.hpp"
#include "llmload/loadgen/transport.hpp"
#include "llmload/loadgen/workload.hpp"

namespace llmload {

/// Poisson arrivals at `rate` per second from a start time, seeded: the same seed and rate give
/// the same offsets. Poisson, not evenly spaced: arrivals at random moments see the system's
/// time-average state (PASTA), where a fixed period can lock onto a periodic load (batches of a
/// closed loop, a scheduler's cycle) and see only one phase of it.
class ProbeSchedule {
 public:
  ProbeSchedule(double rate, std::uint64_t seed);
  /// The first probe is one gap after `start`.
  void begin(TimePoint start);
  bool begun() const { return begun_; }
  /// The intended time of the next probe (valid once begun).
  TimePoint next() const { return next_; }
  /// Moves past the next probe.
  void advance();

 private:
  double mean_gap_s_;
  ArrivalRng rng_;
  bool begun_ = false;
  TimePoint next_{};
};

/// One probe to start: its request and its record as released.
struct ProbeRelease {
  HttpRequest http;
  analysis::RequestRecord record;
};

/// Owns the probes' settings, schedule, request builder and results. Threading: the driver's.
class ProbeStream {
 public:
  /// `run` is the run's configuration (its probe settings, endpoint, model...); `base_path` and
  /// `host_header` as for the run's RequestBuilder; `tokens` makes the probes' prompts (the run's
  /// calibrated model), each probe's own so a prefix cache does not serve them.
  ProbeStream(const ScenarioConfig& run, const std::string& base_path, const std::string& host_header,
              TokenModel tokens);
  ProbeStream(const ProbeStream&) = delete;
  ProbeStream& operator=(const ProbeStream&) = delete;

  /// Probes fall due from `start` on (the measurement window's start).
  void begin(TimePoint start) { schedule_.begin(start); }
  bool begun() const { return schedule_.begun(); }
  /// No more probes are released.
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }
  /// When the next probe falls due; nullopt before begin() and after stop().
  std::optional<TimePoint> due() const;
  /// The next probe (call when due() <= now), with t_intended as an offset from `run_start`.
  ProbeRelease release(TimePoint run_start);
  /// Probe `index`'s content: its own prompt (a new user's, from the probe seed: no two probes
  /// share a cached prefix) of the probe's lengths. The unloaded reference uses indices from
  /// kBaselineIndex on.
  WorkItem item(std::uint64_t index) const;
  static constexpr std::uint64_t kBaselineIndex = std::uint64_t{1} << 40;
  /// The probe request `index`, with t_intended `intended` (an offset from the run's start).
  ProbeRelease make(std::uint64_t index, Nanos intended) const;
  /// A probe finished: its record and output events.
  void complete(const analysis::RequestRecord& r, std::span<const analysis::ChunkArrival> chunks) {
    results_.add(r, chunks);
  }
  const analysis::ProbeAccumulator& results() const { return results_; }
  const ScenarioConfig& config() const { return cfg_; }
  const RequestBuilder& builder() const { return builder_; }

 private:
  ScenarioConfig cfg_;  // probe_scenario(run): the builder reads it
  RequestBuilder builder_;
  TokenModel tokens_;
  std::uint64_t seed_;
  ProbeSchedule schedule_;
  bool stopped_ = false;
  std::uint64_t released_ = 0;
  analysis::ProbeAccumulator results_;
};

}  // namespace llmload
