#pragma once
// The SLO capacity search (METRICS.md "Goodput under a p99 SLO"): the highest offered load
// (rate or concurrency) whose run meets the SLO, with the bracketing evidence. A state machine
// the caller drives: next() says which load to run and how many trials, report() hands back the
// outcome. No I/O, no clock. Algorithm and limits in docs/statistics.md.

#include <cstddef>
#include <cstdint>
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
  double min_load = 0;       // never probe below (0: start / growth^6; with integer loads at least 1)
  double growth = 2.0;       // ramp factor until the first non-passing point (> 1)
  double tolerance = 0.05;   // stop when (lowest_fail - highest_pass) <= tolerance x highest_pass
  std::size_t max_points = 20;  // most probes (runs of next()/report(); a re-probe of a load counts)
  bool integer_loads = false;   // loads are integers (concurrency): also stop when lowest_fail - highest_pass <= 1
  std::size_t trials = 1;       // trials per probe far from the boundary
  std::size_t trials_near_boundary = 3;  // trials a point needs once the bracket is within 2 x tolerance
  std::size_t max_extensions = 2;  // an INCONCLUSIVE point is probed again bigger at most this often
};

/// One trial of a run at some load.
struct TrialOutcome {
  Verdict verdict = Verdict::kInconclusive;  // the run's SLO verdict (kPass, kFail, kInconclusive)
  double goodput = 0;                        // e.g. good requests/s (the caller's unit, kept as is)
  double throughput = 0;
  bool saturated = false;                    // over-loaded (stopped early, queue growing): counts as a FAIL
  bool valid = true;                         // the run's validity: an invalid trial never counts as a PASS
  bool superseded = false;                   // INCONCLUSIVE, replaced by a bigger probe: not counted
  /// INCONCLUSIVE because the SLO's percentile sits at its bound: over half the exceedances the
  /// percentile allows (p99: more than 0.5% of the requests over the bound). The load is at the
  /// capacity within what a probe can resolve; a bigger probe would hardly decide it.
  bool near_bound = false;
  std::string note;                          // how the trial was judged (judge_trial), for the record
};

struct PointOutcome {
  std::vector<TrialOutcome> trials;  // at least one
};

struct Probe {
  double load = 0;
  std::size_t trials = 1;
  bool near_boundary = false;  // the trials are the boundary count (more than the ramp's)
  std::size_t extension = 0;   // 0: the normal size; k: re-probing an INCONCLUSIVE load, 2^k times bigger
  std::string why;             // "ramp", "ramp down", "bisect", "confirm highest pass", "confirm lowest fail",
                               // "extend inconclusive", "just under a near-bound load"
};

/// Everything known about one load (all its trials, over every probe of it).
struct CapacityPoint {
  double load = 0;
  std::vector<TrialOutcome> trials;
  std::size_t passes = 0;        // PASS and not saturated
  std::size_t fails = 0;         // FAIL, or saturated
  std::size_t inconclusive = 0;  // INCONCLUSIVE or invalid (not saturated, not FAIL)
  std::size_t extensions = 0;    // the largest extension probed at this load
  bool near_bound = false;       // INCONCLUSIVE, and every counted inconclusive trial is near_bound
  /// Over the trials not superseded: kPass iff passes > trials / 2 (strict majority); otherwise
  /// kInconclusive when the inconclusive trials could still make it pass (passes + inconclusive >
  /// trials / 2), else kFail. A tie is not a pass; an inconclusive trial never decides a FAIL.
  Verdict verdict = Verdict::kNone;
  double goodput = 0;     // median over the trials
  double throughput = 0;  // median over the trials
};

enum class CapacityStop {
  kRunning,            // not finished: call next()
  kToleranceReached,   // the bracket is within tolerance
  kMaxPoints,          // max_points probes were run
  kMaxLoadPasses,      // max_load itself passes: the capacity is at least max_load
  kMinLoadFails,       // even min_load fails: the capacity is below it
  kInconclusive        // reserved: an INCONCLUSIVE load bounds the bracket from above and the search goes on
};
/// "running", "tolerance_reached", "max_points", "max_load_passes", "min_load_fails", "inconclusive"
std::string_view to_string(CapacityStop s);

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
  /// The answer's own validity: valid when a bracket [highest_pass, lowest_fail] was found
  /// (tolerance reached, or the probe budget spent with a bracket); otherwise the reasons.
  bool valid = false;
  std::vector<std::string> invalid_reasons;
  /// "high": tolerance reached, both ends confirmed unanimously; "medium": tolerance reached by
  /// majority; "low": the bracket is wider than the tolerance; "none": no capacity found.
  std::string confidence = "none";
  std::string bounded_by;              // the bracket, its width against the tolerance, the ends' trials
  std::vector<std::string> notes;      // what qualifies a valid answer (e.g. an INCONCLUSIVE upper end)
  std::vector<CapacityPoint> points;   // by load, ascending
  std::vector<ProbeRecord> history;    // every probe, in order
};

/// Exponential ramp (start, start x growth, ..., capped at max_load) until the first point that
/// does not pass (or, when start itself fails, down: start / growth, ... until one passes or
/// min_load fails), then bisection between the highest passing and the lowest non-passing load.
/// An INCONCLUSIVE point is never taken as a FAIL. When its percentile sits at the bound
/// (near_bound) the capacity is there within a probe's resolution: the next probe goes just under
/// it (load / (1 + tolerance), boundary trials), so a PASS there ends the search. Otherwise (an
/// INVALID run, a window too short) it is probed again bigger (extension 1, 2, ..., its
/// inconclusive trials superseded) up to max_extensions, then it bounds the bracket from above.
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
  std::optional<double> just_under(const Bracket& b) const;  // the probe under a near_bound upper end, if any
  std::optional<Probe> decide();  // sets stop_ when finished
  double round_load(double v) const;
  void describe_answer(CapacityResult& r, const Bracket& b) const;  // validity, confidence, bounded_by

  CapacityOptions opt_;
  std::vector<CapacityPoint> points_;  // sorted by load
  std::vector<ProbeRecord> history_;
  std::optional<Probe> pending_;
  CapacityStop stop_ = CapacityStop::kRunning;
  std::string explanation_;
};

nlohmann::json to_json(const CapacityResult& r);

/// How big a capacity probe must be to give the verdict it is asked for (docs/statistics.md
/// "Capacity search", probe sizing).
struct ProbeSizing {
  double percentile = 99;               // the SLO's percentile
  std::int64_t margin_exceedances = 2;  // enough requests to PASS with this many over the bound
  double min_window_s = 20;             // the measured window: at least this long ...
  double window_e2e = 10;               // ... and this many times the p99 E2E measured at the load
  double warmup_e2e = 3;                // warmup before the window: this many p99 E2Es ...
  double min_warmup_s = 2;              // ... and at least this
};

struct ProbeSize {
  std::int64_t min_requests = 0;  // measured requests (early stopping with the margin, and at least the
                                  // 100 a valid run's p99 needs), x 2^extension
  double min_window_s = 0;        // x 2^extension
  double warmup_s = 0;
};

/// The size of a probe at a load whose p99 E2E is about `e2e_s` (measured there or at the
/// nearest load below; NaN or <= 0: unknown, the floors apply), re-probed `extension` times.
ProbeSize size_probe(const ProbeSizing& sizing, double e2e_s, std::size_t extension);

/// What one finished trial showed (from its result.json).
struct TrialEvidence {
  Verdict verdict = Verdict::kInconclusive;  // the run's SLO verdict
  bool valid = true;
  std::vector<std::string> invalid_codes;    // validity reason codes (run_metrics: schedule_lag, error_rate, ...)
  bool stopped_early = false;                // the over-saturation watch stopped it
  bool overloaded = false;                   // detect_overload over the window
  std::string overload_reason;
  double window_s = 0;                       // the measurement window's length
  double e2e_p99_s = 0;                      // NaN when unknown
  double exceedance_fraction = 0;            // the largest share of requests over an SLO bound (NaN: unknown)
  double goodput = 0;
  double throughput = 0;
};

/// The trial as the search counts it: stopped early or over-loaded is a FAIL whatever the
/// percentiles say; invalid for server errors or the error rate is a FAIL; invalid for another
/// reason (the client's schedule lag, too few samples, minimums) is never a PASS (INCONCLUSIVE,
/// a FAIL stays a FAIL except under schedule lag); a PASS whose window is shorter than
/// sizing.window_e2e x its own p99 E2E is INCONCLUSIVE (too short for a backlog to show); an
/// INCONCLUSIVE verdict with over half the allowed exceedances is near_bound.
TrialOutcome judge_trial(const TrialEvidence& evidence, const ProbeSizing& sizing);

/// A plain sweep's capacity bracket from its points' SLO verdicts ("PASS", "FAIL", "INCONCLUSIVE",
/// or "" for none), one per load: the lowest load that did not pass (FAIL, or INCONCLUSIVE: not
/// shown to meet it), and the highest PASS below it (`pass_index` its point). Both empty unless
/// some point is conclusive (PASS or FAIL): then the capacity is unknown, not "below every load".
/// The one rule for `llmload report` and `llmload compare`.
struct VerdictBracket {
  std::optional<double> highest_pass;
  std::optional<double> lowest_fail;
  std::optional<std::size_t> pass_index;
};
VerdictBracket bracket_from_verdicts(const std::vector<double>& loads, const std::vector<std::string>& verdicts);

}  // namespace llmload::analysis
