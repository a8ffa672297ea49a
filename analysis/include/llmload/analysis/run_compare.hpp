#pragma once
// `llmload compare A B`: metric deltas between two run artifacts with their confidence intervals
// and whether each difference is significant, and every condition that differs (a comparison
// across different conditions is labelled as such, never silently made). Method in
// docs/statistics.md ("Comparing two runs").

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/hdr_log.hpp"

namespace llmload::analysis {

/// One run's artifact as compare reads it: result.json and, when present, latency.hlog.
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

struct RunComparison {
  std::vector<ConditionDiff> conditions;
  bool same_conditions = true;  // no material difference
  std::vector<MetricComparison> metrics;
};

/// Compares B against A. Percentiles of TTFT, TPOT, ITL and E2E come with order-statistic 95%
/// intervals from each run's histograms (latency.hlog); throughputs with the Poisson interval of
/// their completion count; with per-trial values ("trials" in both results) Welch's test.
RunComparison compare_runs(const CompareArtifact& a, const CompareArtifact& b);

nlohmann::json to_json(const RunComparison& c);
/// The console table.
std::string format_comparison(const RunComparison& c, const std::string& a_name, const std::string& b_name);

}  // namespace llmload::analysis
