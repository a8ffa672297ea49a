#pragma once
// `llmload compare A B`: metric deltas between two run artifacts (or two sweeps, point by point
// and capacity against capacity) with their confidence intervals and whether each difference is
// significant (statistically AND larger than a practical threshold), every condition that
// differs (a comparison across different conditions is labelled as such, never silently made),
// and each side's validity and SLO verdict. Method in docs/statistics.md ("Comparing two runs").

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/hdr_log.hpp"

namespace llmload::analysis {

/// An artifact that cannot be read or compared; the message names the file and what is wrong.
class CompareInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One run's artifact as compare reads it: result.json and, when present, latency.hlog (for a
/// trials artifact with a single trial: that trial's latency.hlog).
struct CompareArtifact {
  std::string name;  // for messages: the directory or file given
  nlohmann::json result;
  std::optional<HlogFile> hlog;
};

struct ConditionDiff {
  std::string key;  // dotted path in "conditions", e.g. "scenario.request_rate"
  std::string a;    // the value as JSON text ("(absent)" when missing)
  std::string b;
  bool material = true;  // false for what differs between any two runs (start time, command line, seeds)
};

struct MetricComparison {
  std::string metric;  // e.g. "ttft_p99_ms", "request_throughput"
  std::string unit;
  MetricDelta delta;
};

/// What one side's result.json says of itself: validity and SLO verdict.
struct SideVerdicts {
  std::string validity;              // "VALID", "INVALID", or "" when the artifact has none
  std::vector<std::string> reasons;  // INVALID: "code: message" per reason ("trial N: code: message" for trials)
  std::vector<std::string> codes;    // the reasons' codes alone (for the short form)
  std::string slo_verdict;           // "PASS", "FAIL", "INCONCLUSIVE", or "" without an SLO
  std::string slo_spec;              // the SLO as given (e.g. "ttft:500ms"), "" when none
};
SideVerdicts side_verdicts(const nlohmann::json& result);
/// "VALID", "INVALID (code: message; ...)", "validity unknown"; then "SLO <spec>: PASS" or "no SLO".
/// brief: the reasons' codes only ("INVALID (too_few_samples)").
std::string format_verdicts(const SideVerdicts& v, bool brief = false);
nlohmann::json to_json(const SideVerdicts& v);

struct CompareSettings {
  double min_effect = 0.05;  // the smallest relative change that counts as significant (5% of A)
  double alpha = 0.05;
};

struct RunComparison {
  std::vector<ConditionDiff> conditions;
  bool same_conditions = true;  // no material difference
  std::vector<MetricComparison> metrics;
  SideVerdicts a;
  SideVerdicts b;
  double min_effect = 0.05;
  std::vector<std::string> notes;  // e.g. which metrics could not be compared, and why
};

/// Compares B against A. Percentiles of TTFT, TPOT, ITL and E2E come with order-statistic 95%
/// intervals from each run's histograms (latency.hlog); throughputs with the Poisson interval of
/// their completion count; with per-trial values ("trials" in both results) Welch's test. A
/// difference is significant only when the test shows it and it is at least
/// max(settings.min_effect x |A|, the resolution: the histogram bucket of the value, or one
/// completion's share of a throughput).
RunComparison compare_runs(const CompareArtifact& a, const CompareArtifact& b, const CompareSettings& settings = {});

nlohmann::json to_json(const RunComparison& c);
/// The console text: both sides' verdicts, the threshold, the conditions and the table.
std::string format_comparison(const RunComparison& c, const std::string& a_name, const std::string& b_name);

// --- sweeps ------------------------------------------------------------------------------------

/// A sweep's directory as compare reads it: sweep.json and each listed point's artifact.
struct SweepArtifact {
  std::string name;
  nlohmann::json sweep;
  std::string load_kind;  // "rate", "concurrency" or ""
  struct Point {
    double offered = 0;
    std::string dir;       // as listed in sweep.json
    nlohmann::json entry;  // the sweep.json entry
    CompareArtifact run;
  };
  std::vector<Point> points;       // ascending offered load
  std::vector<std::string> notes;  // points left out (no artifact yet)
};

/// A sweep's capacity: the highest load meeting the SLO and the lowest failing one (the true
/// capacity lies in [highest_pass, lowest_fail)).
struct SweepCapacity {
  std::optional<double> highest_pass;
  std::optional<double> lowest_fail;
  std::optional<double> goodput_at_capacity;
  std::string source;  // "sweep.json", "the points' SLO verdicts", or "" (none: no SLO verdicts)
};
SweepCapacity sweep_capacity(const SweepArtifact& s);

struct SweepPointComparison {
  double offered = 0;
  bool in_a = false;
  bool in_b = false;
  RunComparison run;  // the two points compared (only when in_a && in_b); its a/b carry the points' verdicts
  SideVerdicts a;     // each side's verdicts (also for a point only one side has)
  SideVerdicts b;
};

struct SweepComparison {
  std::string load_kind;
  std::size_t points_a = 0;  // points with an artifact on each side
  std::size_t points_b = 0;
  std::string slo_a;  // sweep.json's SLO spec, "" when none
  std::string slo_b;
  std::vector<SweepPointComparison> points;  // ascending offered load, the union of both sweeps
  SweepCapacity capacity_a;
  SweepCapacity capacity_b;
  std::optional<double> capacity_ratio;  // B's highest_pass / A's
  int capacity_direction = 0;  // +1: B's bracket entirely above A's, -1: below, 0: they overlap (or unknown)
  std::string capacity_explanation;
  std::vector<ConditionDiff> conditions;  // material differences at matching points (each key once)
  bool same_conditions = true;
  double min_effect = 0.05;
  std::vector<std::string> notes;
};

/// The metrics of a sweep point comparison: throughput, goodput, p50/p99 of TTFT, TPOT and E2E.
SweepComparison compare_sweeps(const SweepArtifact& a, const SweepArtifact& b, const CompareSettings& settings = {});
nlohmann::json to_json(const SweepComparison& c);
std::string format_sweep_comparison(const SweepComparison& c, const std::string& a_name, const std::string& b_name);

// --- reading artifacts -------------------------------------------------------------------------

enum class CompareArtifactKind { kRun, kSweep };
/// kSweep for a directory holding sweep.json (or a sweep.json file), kRun for a directory holding
/// result.json (or a result.json file). CompareInputError for anything else, naming the path.
CompareArtifactKind detect_compare_artifact(const std::string& path);
/// Throws CompareInputError naming the file (missing, not JSON, not an llmload artifact).
CompareArtifact load_compare_run(const std::string& path);
SweepArtifact load_compare_sweep(const std::string& path);

}  // namespace llmload::analysis
