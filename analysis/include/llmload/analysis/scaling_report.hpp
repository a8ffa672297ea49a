#pragma once
// `llmload scaling DIR...`: speedup S(K) = X(K)/X(K0) and efficiency E(K) = S(K)/(K/K0) at the
// same SLO from artifacts measured at K = 1, 2, 4, ... replicas or devices (METRICS.md
// "Scaling"), with cost per 1M output tokens and energy per output token. Pure: the caller reads
// the artifacts (run, trials or sweep) and hands their JSON here. docs/scaling.md.

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/compare.hpp"      // ScalingKind, scaling, cost_per_million_tokens
#include "llmload/analysis/run_compare.hpp"  // ConditionDiff

namespace llmload::analysis {

/// An input that cannot give a scaling table: a bad or missing K, an artifact without the
/// quantity asked for, X(K0) = 0. what() names the artifact and how to fix it.
class ScalingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ArtifactType { kRun, kTrials, kSweep };
std::string_view to_string(ArtifactType t);  // "run", "trials", "sweep"

/// One artifact as the caller read it.
struct ScalingInput {
  std::string name;  // as given on the command line, for messages
  ArtifactType type = ArtifactType::kRun;
  /// result.json of the run or trials artifact; for a sweep, result.json of its capacity point
  /// (the point whose offered load is capacity.highest_pass).
  nlohmann::json result;
  /// sweep.json (sweeps only; null otherwise).
  nlohmann::json sweep;
  /// Trials artifact: each trial's result.json that could be read (used for energy per token,
  /// which lives in each trial's server_metrics). May be empty.
  std::vector<nlohmann::json> trial_results;
  /// K from --k; nullopt: conditions.devices.
  std::optional<double> k;
};

/// Which throughput X is.
enum class ScalingMetric {
  kAuto,               // capacity goodput when every artifact is a sweep; else goodput when every
                       // artifact has an SLO; else request throughput
  kGoodput,            // request_goodput (sweeps: capacity.goodput_at_capacity)
  kCapacityGoodput,    // (resolved only) sweep.json capacity.goodput_at_capacity
  kRequestThroughput,  // request_throughput
  kOutputThroughput    // output_throughput
};
std::string_view to_string(ScalingMetric m);  // "auto", "request_goodput", "capacity_goodput", ...
/// "auto", "goodput", "request_throughput", "output_throughput" (and "request_goodput"); nullopt
/// for anything else.
std::optional<ScalingMetric> parse_scaling_metric(std::string_view s);

struct ScalingReportOptions {
  ScalingKind kind = ScalingKind::kStrong;
  ScalingMetric metric = ScalingMetric::kAuto;
  std::optional<double> price_per_hour;  // per device; else each artifact's conditions.price_per_hour
  bool allow_different_conditions = false;
};

/// The conditions of one artifact against the base artifact (the smallest K).
struct ConditionCheck {
  std::string base;   // name of the base artifact
  std::string other;  // name of the other artifact
  double base_k = 1;
  double other_k = 1;
  /// Every condition that differs. `material` is compare_runs' classification, then adjusted for
  /// scaling: what naturally differs between deployments of different size (endpoint URL, host
  /// name, devices, price, server start stamps in /v1/models, trial seeds) is not material; in
  /// weak scaling a load that scales with K is not material, one that does not scale is.
  std::vector<ConditionDiff> differences;
  /// Why a difference was reclassified (same order as `differences`; empty when not).
  std::vector<std::string> notes;
  bool same = true;  // no material difference
};

struct ScalingRow {
  std::string name;
  ArtifactType type = ArtifactType::kRun;
  double k = 1;
  std::string k_source;  // "--k" or "conditions.devices"
  double x = 0;          // X(K)
  std::optional<double> x_min;  // trials: the spread of X over the trials
  std::optional<double> x_max;
  std::size_t trials = 1;       // trials behind X (its median for more than one)
  std::string x_source;         // where X was read, e.g. "request_goodput", "sweep.json capacity.goodput_at_capacity"
  std::optional<double> capacity_load;  // sweeps: capacity.highest_pass (rate or concurrency)
  double speedup = 1;     // X(K) / X(K0)
  double efficiency = 1;  // speedup / (K / K0)
  bool valid = true;      // validity.valid of the artifact (a sweep: of its capacity point)
  std::string validity_reason;
  bool noisy = false;     // trials: cross-trial variability flagged
  double devices = 1;     // conditions.devices, else K
  std::string devices_source;
  std::optional<double> output_throughput;  // tok/s, for the cost
  std::optional<double> price_per_hour;
  std::optional<double> cost_per_million_output_tokens;  // +inf when no tokens were produced
  std::optional<double> energy_j_per_output_token;
  std::string energy_source;  // how it was computed, or why not ("not reported by the server ...")
};

struct ScalingReport {
  ScalingKind kind = ScalingKind::kStrong;
  ScalingMetric metric = ScalingMetric::kAuto;  // resolved (never kAuto)
  std::string metric_label;  // e.g. "request goodput under the SLO ttft:500ms,p99 (good requests/s)"
  std::string unit;          // "req/s" or "tok/s"
  std::optional<std::string> slo;  // the SLO spec, when the artifacts have one (the base's)
  double base_k = 1;               // K0, the smallest K
  std::string base_name;
  std::vector<ConditionCheck> conditions;  // one per non-base artifact
  bool same_conditions = true;     // no material difference anywhere
  bool allow_different_conditions = false;
  /// Conditions differ and --allow-different-conditions was not given: nothing was computed
  /// (rows is empty); `conditions` says what differs.
  bool refused = false;
  std::vector<ScalingRow> rows;    // by K, ascending
  std::vector<std::string> notes;  // e.g. invalid runs, a base K other than 1, noisy trials
};

/// The K of every input, checked: from ScalingInput::k when given, else the result's
/// conditions.devices. Throws ScalingError for fewer than 2 inputs, a K missing (the message says
/// to pass --k), not an integer >= 1, or the same K twice.
std::vector<double> resolve_k(const std::vector<ScalingInput>& inputs);

/// Compares each input's conditions with the base's (compare_runs), reclassified for scaling
/// (see ConditionCheck). `base` indexes `inputs`. For sweeps, the load of the capacity point is
/// the search's result, not a condition; the sweep's load kind and SLO are compared as
/// "sweep.load_kind" and "sweep.slo".
ConditionCheck check_conditions(const ScalingInput& base, double base_k, const ScalingInput& other, double other_k,
                                ScalingKind kind);

/// Energy per output token (J/token) from a run's "server_metrics", when the server reported
/// energy or power: delta.energy_joules / delta.generation_tokens, else the time-averaged
/// series.power_watts / output_tokens_per_s. nullopt otherwise, with the reason in *how (which
/// also says how it was computed when there is a value).
std::optional<double> energy_per_output_token(const nlohmann::json& server_metrics, std::optional<double> output_tokens_per_s,
                                              std::string* how);

/// The whole table. Throws ScalingError for bad K (resolve_k), an artifact without the quantity
/// X, or X(K0) = 0. When conditions differ materially and !options.allow_different_conditions,
/// returns a report with refused = true and no rows.
ScalingReport build_scaling_report(const std::vector<ScalingInput>& inputs, const ScalingReportOptions& options);

/// What strong and weak scaling mean, one sentence each (for the output and the JSON).
std::string_view scaling_kind_meaning(ScalingKind k);

nlohmann::json to_json(const ScalingReport& r);
/// The console table (or, for a refused report, the differing conditions).
std::string format_scaling_report(const ScalingReport& r);

}  // namespace llmload::analysis
