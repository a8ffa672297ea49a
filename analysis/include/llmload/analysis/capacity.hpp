#pragma once
// The SLO capacity search (METRICS.md "Goodput under a p99 SLO"): the highest offered load
// (rate or concurrency) whose run meets the SLO, with the bracketing evidence. A state machine
// the caller drives: next() says which load to run and how many trials, report() hands back the
// outcome. No I/O, no clock. Algorithm and limits in docs/statistics.md.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/analysis/run_metrics.hpp"  // Verdict

namespace llmload::analysis {

struct CapacityOptions {
  double start = 1;          // first load probed (> 0)
  double max_load = 1e6;     // never probe above (>= start)
  double growth = 2.0;       // ramp factor until the first non-passing point (> 1)
  double tolerance = 0.05;   // stop when (lowest_fail - highest_pass) <= tolerance x highest_pass
  std::size_t max_points = 20;  // most probes (runs of next()/report(); a re-probe of a load counts)
  bool integer_loads = false;   // loads are integers (concurrency): also stop when lowest_fail - highest_pass <= 1
  std::size_t trials = 1;       // trials per probe far from the boundary
  std::size_t trials_near_boundary = 3;  // trials a point needs once the bracket is within 2 x tolerance
};

/// One trial of a run at some load.
struct TrialOutcome {
  Verdict verdict = Verdict::kInconclusive;  // the run's SLO verdict (kPass, kFail, kInconclusive)
  double goodput = 0;                        // e.g. good requests/s (the caller's unit, kept as is)
  double throughput = 0;
  bool saturated = false;                    // detect_saturation fired: counts as a FAIL
};

struct PointOutcome {
  std::vector<TrialOutcome> trials;  // at least one
};

struct Probe {
  double load = 0;
  std::size_t trials = 1;
  bool near_boundary = false;  // the trials are the boundary count (more than the ramp's)
  std::string why;             // "ramp", "bisect", "confirm highest pass", "confirm lowest fail"
};

/// Everything known about one load (all its trials, over every probe of it).
struct CapacityPoint {
  double load = 0;
  std::vector<TrialOutcome> trials;
  std::size_t passes = 0;        // PASS and not saturated
  std::size_t fails = 0;         // FAIL, or saturated
  std::size_t inconclusive = 0;  // INCONCLUSIVE (not saturated)
  /// kPass iff passes > trials / 2 (strict majority); otherwise kFail when fails >= inconclusive,
  /// else kInconclusive. A tie is not a pass.
  Verdict verdict = Verdict::kNone;
  double goodput = 0;     // median over the trials
  double throughput = 0;  // median over the trials
};

enum class CapacityStop {
  kRunning,            // not finished: call next()
  kToleranceReached,   // the bracket is within tolerance
  kMaxPoints,          // max_points probes were run
  kMaxLoadPasses,      // max_load itself passes: the capacity is at least max_load
  kStartFails          // even the start load does not pass: the capacity is below start
};
std::string_view to_string(CapacityStop s);  // "running", "tolerance_reached", "max_points", "max_load_passes", "start_fails"

struct ProbeRecord {
  std::size_t index = 0;  // 0-based order of the probe
  Probe probe;
  std::size_t trials_reported = 0;
  Verdict point_verdict = Verdict::kNone;  // the load's verdict after merging this probe's trials
};

struct CapacityResult {
  CapacityStop stop = CapacityStop::kRunning;
  std::string explanation;
  std::optional<double> highest_pass;  // the capacity: the highest passing load below lowest_fail
  std::optional<double> lowest_fail;   // the lowest load that does not pass
  double goodput_at_capacity = 0;      // at highest_pass (median of its trials); NaN without one
  double throughput_at_capacity = 0;
  double relative_width = 0;           // (lowest_fail - highest_pass) / highest_pass; NaN unless both exist
  std::vector<CapacityPoint> points;   // by load, ascending
  std::vector<ProbeRecord> history;    // every probe, in order
};

/// Exponential ramp (start, start x growth, ..., capped at max_load) until the first point that
/// does not pass, then bisection between the highest passing and the lowest non-passing load.
/// Once the bracket is within 2 x tolerance every new point gets trials_near_boundary trials, and
/// before stopping on tolerance both bracket ends are topped up to trials_near_boundary trials;
/// if the majority flips, the bracket moves and the search goes on.
class CapacitySearch {
 public:
  /// Throws std::invalid_argument for inconsistent options (see CapacityOptions).
  explicit CapacitySearch(CapacityOptions options);

  /// The next load to run, or nullopt when the search is over. Calling it again without a
  /// report() returns the same probe.
  std::optional<Probe> next();

  /// The outcome of running the probe next() returned. `load` must be that probe's load
  /// (std::logic_error otherwise, or when no probe is pending); the outcome needs >= 1 trial and
  /// verdicts among kPass, kFail, kInconclusive (std::invalid_argument). Fewer trials than asked
  /// are accepted (the point is re-probed for the rest only if it becomes a bracket end).
  void report(double load, const PointOutcome& outcome);

  bool done() const { return stop_ != CapacityStop::kRunning; }
  /// The state so far (final once done()).
  CapacityResult result() const;

 private:
  struct Bracket {
    const CapacityPoint* pass = nullptr;  // highest passing load below `fail`
    const CapacityPoint* fail = nullptr;  // lowest non-passing load
  };
  Bracket bracket() const;
  bool within(const Bracket& b, double factor) const;  // width <= factor x tolerance (or integer rule)
  std::optional<Probe> decide();  // sets stop_ when finished
  double round_load(double v) const;

  CapacityOptions opt_;
  std::vector<CapacityPoint> points_;  // sorted by load
  std::vector<ProbeRecord> history_;
  std::optional<Probe> pending_;
  CapacityStop stop_ = CapacityStop::kRunning;
  std::string explanation_;
};

nlohmann::json to_json(const CapacityResult& r);

}  // namespace llmload::analysis
