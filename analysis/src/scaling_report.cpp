#include "llmload/analysis/scaling_report.hpp"
#include "llmload/analysis/stats.hpp"
#include "numeric.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

namespace llmload::analysis {

using nlohmann::json;

namespace {


json opt_json(const std::optional<double>& v) { return v ? number_or_null(*v) : json(nullptr); }

const json& at(const json& j, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object()) return kNull;
    const auto it = p->find(k);
    if (it == p->end()) return kNull;
    p = &*it;
  }
  return *p;
}

std::optional<double> number(const json& j) {
  if (!j.is_number()) return std::nullopt;
  const double v = j.get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}


std::string format_k(double k) { return fmt::format("{:g}", k); }

bool is_trials_result(const json& result) { return at(result, {"artifact"}) == "trials" || at(result, {"trials"}).is_array(); }

// The conditions compared for scaling: the result's, and for a sweep without the load of its
// capacity point (the search's answer, not a condition) but with the sweep's own settings.
json conditions_of(const ScalingInput& in) {
  json c = at(in.result, {"conditions"});
  if (!c.is_object()) c = json::object();
  if (in.type == ArtifactType::kSweep) {
    if (c.contains("scenario") && c["scenario"].is_object()) {
      c["scenario"].erase("request_rate");
      c["scenario"].erase("concurrency");
    }
    c["sweep"] = {{"load_kind", at(in.sweep, {"load_kind"})}, {"slo", at(in.sweep, {"slo"})}};
  }
  return c;
}

// /v1/models without what changes each time a server starts (created stamps, permission ids).
json stable_models(json j) {
  if (j.is_object()) {
    j.erase("created");
    j.erase("permission");
    for (auto& [k, v] : j.items()) v = stable_models(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = stable_models(v);
  }
  return j;
}

json parse_or_string(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

// The offered-load conditions: in weak scaling they scale with K.
constexpr const char* kLoadKeys[] = {"scenario.request_rate", "scenario.concurrency", "scenario.max_inflight",
                                     "scenario.arrivals.ramp_start_rate"};
bool is_load_key(const std::string& key) {
  return std::any_of(std::begin(kLoadKeys), std::end(kLoadKeys), [&](const char* k) { return key == k; });
}

bool proportional(double a, double b, double ratio) {
  return a > 0 && std::fabs(b / a - ratio) <= 1e-6 * ratio;
}

std::string slo_of(const ScalingInput& in) {
  const json& s = in.type == ArtifactType::kSweep ? at(in.sweep, {"slo"}) : at(in.result, {"slo"});
  if (s.is_string()) return s.get<std::string>();
  if (s.is_object() && at(s, {"spec"}).is_string()) return at(s, {"spec"}).get<std::string>();
  const json& c = at(in.result, {"conditions", "scenario", "slo"});
  if (c.is_string()) return c.get<std::string>();
  return {};
}

bool has_goodput(const ScalingInput& in) {
  if (in.type == ArtifactType::kSweep) return number(at(in.sweep, {"capacity", "goodput_at_capacity"})).has_value();
  return number(at(in.result, {"request_goodput"})).has_value();
}

}  // namespace

std::string_view to_string(ArtifactType t) {
  switch (t) {
    case ArtifactType::kRun: return "run";
    case ArtifactType::kTrials: return "trials";
    case ArtifactType::kSweep: return "sweep";
  }
  return "run";
}

std::string_view to_string(ScalingMetric m) {
  switch (m) {
    case ScalingMetric::kAuto: return "auto";
    case ScalingMetric::kGoodput: return "request_goodput";
    case ScalingMetric::kCapacityGoodput: return "capacity_goodput";
    case ScalingMetric::kRequestThroughput: return "request_throughput";
    case ScalingMetric::kOutputThroughput: return "output_throughput";
  }
  return "auto";
}

std::optional<ScalingMetric> parse_scaling_metric(std::string_view s) {
  if (s == "auto") return ScalingMetric::kAuto;
  if (s == "goodput" || s == "request_goodput") return ScalingMetric::kGoodput;
  if (s == "request_throughput") return ScalingMetric::kRequestThroughput;
  if (s == "output_throughput") return ScalingMetric::kOutputThroughput;
  return std::nullopt;
}

std::string_view scaling_kind_meaning(ScalingKind k) {
  return k == ScalingKind::kStrong
             ? "strong scaling: the same total offered load at every K (split over K replicas or devices), "
               "everything else equal; X can grow only where the load saturates the smaller deployment"
             : "weak scaling: the offered load per replica or device is fixed, so the total offered load "
               "(rate, concurrency) grows with K; everything else equal";
}

std::vector<double> resolve_k(const std::vector<ScalingInput>& inputs) {
  if (inputs.size() < 2) {
    throw ScalingError(fmt::format("scaling needs artifacts at two or more K (got {}): give one directory per K, "
                                   "e.g. llmload scaling results/k1 results/k2 --k 1,2",
                                   inputs.size()));
  }
  std::vector<double> ks;
  for (const auto& in : inputs) {
    double k = 0;
    if (in.k) {
      k = *in.k;
    } else {
      const json& d = at(in.result, {"conditions", "devices"});
      if (!number(d)) {
        throw ScalingError(fmt::format("'{}' records no conditions.devices (it was not run with `llmload run --devices N`): "
                                       "pass --k with one K per directory, in the same order, e.g. --k 1,2,4",
                                       in.name));
      }
      k = d.get<double>();
    }
    if (!(std::isfinite(k) && k >= 1 && k <= 1e9 && std::floor(k) == k)) {
      throw ScalingError(fmt::format("'{}': K = {} is not a whole number >= 1 (K counts replicas or devices)", in.name,
                                     format_k(k)));
    }
    for (std::size_t i = 0; i < ks.size(); ++i) {
      if (ks[i] == k) {
        throw ScalingError(fmt::format("K = {} is given twice ('{}' and '{}'): give one artifact per K (repetitions "
                                       "belong in one artifact: llmload run --trials N)",
                                       format_k(k), inputs[i].name, in.name));
      }
    }
    ks.push_back(k);
  }
  return ks;
}

ConditionCheck check_conditions(const ScalingInput& base, double base_k, const ScalingInput& other, double other_k,
                                ScalingKind kind) {
  ConditionCheck c;
  c.base = base.name;
  c.other = other.name;
  c.base_k = base_k;
  c.other_k = other_k;
  const json cb = conditions_of(base);
  const json co = conditions_of(other);
  const RunComparison cmp = compare_runs(CompareArtifact{base.name, json{{"conditions", cb}}, std::nullopt},
                                         CompareArtifact{other.name, json{{"conditions", co}}, std::nullopt});
  const double ratio = other_k / base_k;
  const bool sweeps = base.type == ArtifactType::kSweep || other.type == ArtifactType::kSweep;
  std::set<std::string> seen;
  for (ConditionDiff d : cmp.conditions) {
    seen.insert(d.key);
    std::string note;
    const json va = parse_or_string(d.a);
    const json vb = parse_or_string(d.b);
    const bool same_number = va.is_number() && vb.is_number() && va.get<double>() == vb.get<double>();
    if (same_number && !(is_load_key(d.key) && kind == ScalingKind::kWeak && ratio != 1 && !sweeps)) {
      d.material = false;
      note = "the same number";
    } else if (d.key == "endpoint.base_url" || d.key == "machine.hostname" || d.key == "devices" || d.key == "price_per_hour" ||
        d.key == "trials.seeds" || d.key == "trials.pause_s") {
      d.material = false;
      note = "differs between deployments or runs of any size";
    } else if (sweeps && d.key == "trials.n") {
      // A capacity search gives its points the trials the search needed there (near the
      // boundary, extensions of an INCONCLUSIVE probe): how it measured, not a condition.
      d.material = false;
      note = "the trials a capacity search ran at its capacity point";
    } else if (d.key.rfind("server.models", 0) == 0) {
      if (stable_models(parse_or_string(d.a)) == stable_models(parse_or_string(d.b))) {
        d.material = false;
        note = "only the server's start stamps (created, permission ids) differ";
      }
    } else if (is_load_key(d.key) && !sweeps) {
      if (kind == ScalingKind::kWeak) {
        if (va.is_number() && vb.is_number() && proportional(va.get<double>(), vb.get<double>(), ratio)) {
          d.material = false;
          note = fmt::format("scales with K (x{}), as weak scaling expects", format_k(ratio));
        } else if (same_number) {
          d.material = true;
          note = fmt::format("the same offered load at K = {} and K = {}: weak scaling expects it to grow x{} (for a "
                             "fixed total load: --kind strong)",
                             format_k(base_k), format_k(other_k), format_k(ratio));
        } else {
          d.material = true;
          note = fmt::format("weak scaling expects the offered load to scale with K: x{} from K = {} to K = {}",
                             format_k(ratio), format_k(base_k), format_k(other_k));
        }
      } else {
        d.material = true;
        note = "strong scaling keeps the total offered load the same at every K (for a load that grows with K: "
               "--kind weak)";
      }
    } else if (d.key == "scenario.num_requests" && kind == ScalingKind::kWeak) {
      if (va.is_number() && vb.is_number() && proportional(va.get<double>(), vb.get<double>(), ratio)) {
        d.material = false;
        note = "scales with K, as the load does";
      }
    }
    c.same = c.same && !d.material;
    c.differences.push_back(std::move(d));
    c.notes.push_back(std::move(note));
  }
  // Weak scaling with the same offered load at different K is not weak scaling.
  if (kind == ScalingKind::kWeak && !sweeps && ratio != 1) {
    for (const char* key : {"scenario.request_rate", "scenario.concurrency"}) {
      if (seen.count(key) != 0) continue;
      const std::string k(key);
      const json& v = at(cb, {"scenario", k.substr(k.find('.') + 1).c_str()});
      if (!number(v) || v.get<double>() <= 0) continue;
      const std::string text = v.dump();
      c.differences.push_back(ConditionDiff{k, text, text, true});
      c.notes.push_back(fmt::format("the same offered load at K = {} and K = {}: weak scaling expects it to grow x{} "
                                    "(for a fixed total load: --kind strong)",
                                    format_k(base_k), format_k(other_k), format_k(ratio)));
      c.same = false;
    }
  }
  return c;
}

std::optional<double> energy_per_output_token(const json& server_metrics, std::optional<double> output_tokens_per_s,
                                              std::string* how) {
  auto say = [&](std::string s) {
    if (how != nullptr) *how = std::move(s);
  };
  const std::string names =
      "llmload:gpu_energy_joules_total, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION; llmload:gpu_power_watts, "
      "DCGM_FI_DEV_POWER_USAGE";
  if (!server_metrics.is_object() || !server_metrics.value("available", false)) {
    say("not reported by the server (no server metrics in the artifact)");
    return std::nullopt;
  }
  const auto energy = number(at(server_metrics, {"delta", "energy_joules"}));
  const auto tokens = number(at(server_metrics, {"delta", "generation_tokens"}));
  if (energy && tokens && *tokens > 0 && *energy >= 0) {
    say("server energy counter / server generation tokens, between the snapshots before and after the run");
    return *energy / *tokens;
  }
  const json& power = at(server_metrics, {"series", "power_watts"});
  const json& t = at(server_metrics, {"series", "t_s"});
  if (power.is_array() && t.is_array() && power.size() == t.size()) {
    // Time-weighted mean power: the trapezoid rule over consecutive finite points.
    double area = 0;
    double span = 0;
    std::size_t points = 0;
    for (std::size_t i = 0; i < power.size(); ++i) {
      if (number(power[i]) && number(t[i])) ++points;
      if (i == 0) continue;
      const auto p0 = number(power[i - 1]);
      const auto p1 = number(power[i]);
      const auto t0 = number(t[i - 1]);
      const auto t1 = number(t[i]);
      if (!p0 || !p1 || !t0 || !t1 || *t1 <= *t0) continue;
      area += 0.5 * (*p0 + *p1) * (*t1 - *t0);
      span += *t1 - *t0;
    }
    if (span > 0 && points >= 2) {
      if (!output_tokens_per_s || *output_tokens_per_s <= 0) {
        say("the server reported power, but the run produced no output tokens");
        return std::nullopt;
      }
      say(fmt::format("time-averaged server power ({} scrapes) / output token throughput", points));
      return area / span / *output_tokens_per_s;
    }
  }
  say(fmt::format("not reported by the server (its metrics have no power or energy series; read when present: {})",
                  names));
  return std::nullopt;
}

ScalingReport build_scaling_report(const std::vector<ScalingInput>& inputs, const ScalingReportOptions& options) {
  const std::vector<double> ks = resolve_k(inputs);
  ScalingReport r;
  r.kind = options.kind;
  r.allow_different_conditions = options.allow_different_conditions;
  std::size_t base = 0;
  for (std::size_t i = 1; i < ks.size(); ++i) {
    if (ks[i] < ks[base]) base = i;
  }
  r.base_k = ks[base];
  r.base_name = inputs[base].name;

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i == base) continue;
    ConditionCheck c = check_conditions(inputs[base], ks[base], inputs[i], ks[i], options.kind);
    r.same_conditions = r.same_conditions && c.same;
    r.conditions.push_back(std::move(c));
  }
  std::sort(r.conditions.begin(), r.conditions.end(),
            [](const ConditionCheck& a, const ConditionCheck& b) { return a.other_k < b.other_k; });
  const std::string slo = slo_of(inputs[base]);
  if (!slo.empty()) r.slo = slo;
  if (!r.same_conditions && !options.allow_different_conditions) {
    r.refused = true;
    r.metric = options.metric == ScalingMetric::kAuto ? ScalingMetric::kRequestThroughput : options.metric;
    return r;
  }

  // Which X.
  const bool all_sweeps = std::all_of(inputs.begin(), inputs.end(),
                                      [](const ScalingInput& in) { return in.type == ArtifactType::kSweep; });
  const bool any_sweep = std::any_of(inputs.begin(), inputs.end(),
                                     [](const ScalingInput& in) { return in.type == ArtifactType::kSweep; });
  const bool all_goodput = std::all_of(inputs.begin(), inputs.end(), has_goodput);
  ScalingMetric metric = options.metric;
  if (metric == ScalingMetric::kAuto) {
    if (all_sweeps) {
      metric = ScalingMetric::kCapacityGoodput;
    } else if (all_goodput) {
      metric = ScalingMetric::kGoodput;
    } else {
      metric = ScalingMetric::kRequestThroughput;
      if (any_sweep) {
        throw ScalingError("a sweep's throughput at the same SLO is its capacity point's goodput, but not every other "
                           "artifact has an SLO: give every run the sweep's --slo, or pass the sweep's point "
                           "directories instead of the sweep");
      }
      if (std::any_of(inputs.begin(), inputs.end(), has_goodput)) {
        r.notes.push_back("not every artifact has an SLO: X is the request throughput, not goodput");
      }
    }
  }
  if (metric == ScalingMetric::kCapacityGoodput && !all_sweeps) metric = ScalingMetric::kGoodput;
  r.metric = metric;
  const std::string slo_text = r.slo ? *r.slo : std::string("(none)");
  switch (metric) {
    case ScalingMetric::kCapacityGoodput:
      r.metric_label = fmt::format("goodput at the SLO capacity point (the highest offered load meeting {}), from "
                                   "sweep.json capacity.goodput_at_capacity",
                                   slo_text);
      r.unit = "req/s";
      break;
    case ScalingMetric::kGoodput:
      r.metric_label = fmt::format("request goodput under the SLO {}: requests per second of the window that met it "
                                   "(request_goodput{})",
                                   slo_text, any_sweep ? "; sweeps: the capacity point's" : "");
      r.unit = "req/s";
      break;
    case ScalingMetric::kOutputThroughput:
      r.metric_label = "output token throughput: output tokens per second of the window (output_throughput)";
      r.unit = "tok/s";
      break;
    default:
      r.metric_label = "request throughput: requests completed per second of the window (request_throughput), "
                       "no SLO applied";
      r.unit = "req/s";
      break;
  }
  const std::string key = metric == ScalingMetric::kOutputThroughput    ? "output_throughput"
                          : metric == ScalingMetric::kRequestThroughput ? "request_throughput"
                                                                        : "request_goodput";

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ScalingInput& in = inputs[i];
    ScalingRow row;
    row.name = in.name;
    row.type = in.type;
    row.k = ks[i];
    row.k_source = in.k ? "--k" : "conditions.devices";
    if (in.type == ArtifactType::kSweep) row.capacity_load = number(at(in.sweep, {"capacity", "highest_pass"}));
    if (in.type == ArtifactType::kSweep && (metric == ScalingMetric::kCapacityGoodput || metric == ScalingMetric::kGoodput)) {
      const auto g = number(at(in.sweep, {"capacity", "goodput_at_capacity"}));
      if (!g || !row.capacity_load) {
        throw ScalingError(fmt::format("'{}': the sweep has no capacity point (capacity.highest_pass or "
                                       "goodput_at_capacity is null{}): run `llmload sweep --find-capacity --slo ...` "
                                       "until a load passes, or pass a run directory",
                                       in.name,
                                       at(in.sweep, {"capacity", "stop"}).is_string()
                                           ? ", stop: " + at(in.sweep, {"capacity", "stop"}).get<std::string>()
                                           : std::string()));
      }
      row.x = *g;
      row.x_source = fmt::format("sweep.json capacity.goodput_at_capacity (at load {:g})", *row.capacity_load);
      if (const json& pts = at(in.sweep, {"capacity", "points"}); pts.is_array()) {
        for (const auto& p : pts) {
          if (!number(at(p, {"load"})) || at(p, {"load"}).get<double>() != *row.capacity_load) continue;
          std::vector<double> v;
          for (const auto& t : at(p, {"trials"})) {
            if (auto x = number(at(t, {"goodput"}))) v.push_back(*x);
          }
          row.trials = std::max<std::size_t>(v.size(), 1);
          if (v.size() >= 2) {
            row.x_min = *std::min_element(v.begin(), v.end());
            row.x_max = *std::max_element(v.begin(), v.end());
          }
        }
      }
    } else {
      const auto x = number(at(in.result, {key.c_str()}));
      if (!x) {
        if (key == "request_goodput") {
          throw ScalingError(fmt::format("'{}' has no request_goodput: it was run without an SLO (--slo); give every "
                                         "run the same --slo, or use --metric request_throughput",
                                         in.name));
        }
        throw ScalingError(fmt::format("'{}' has no {} in its result.json: is it a complete llmload artifact?", in.name, key));
      }
      if (*x < 0) throw ScalingError(fmt::format("'{}': {} = {} is negative", in.name, key, *x));
      row.x = *x;
      row.x_source = in.type == ArtifactType::kSweep
                         ? fmt::format("{} of the capacity point (load {:g})", key, row.capacity_load.value_or(0))
                         : key;
      if (is_trials_result(in.result)) {
        std::vector<double> v;
        for (const auto& t : at(in.result, {"trials"})) {
          if (auto y = number(at(t, {key.c_str()}))) v.push_back(*y);
        }
        const json& s = at(in.result, {"trial_summary", key.c_str()});
        row.trials = std::max<std::size_t>(v.size(), 1);
        if (number(at(s, {"min"})) && number(at(s, {"max"}))) {
          row.x_min = at(s, {"min"}).get<double>();
          row.x_max = at(s, {"max"}).get<double>();
        } else if (v.size() >= 2) {
          row.x_min = *std::min_element(v.begin(), v.end());
          row.x_max = *std::max_element(v.begin(), v.end());
        }
        if (row.trials > 1) row.x_source += fmt::format(" (median of {} trials)", row.trials);
      }
    }
    // Validity.
    const json& valid = at(in.result, {"validity", "valid"});
    row.valid = !valid.is_boolean() || valid.get<bool>();
    if (!row.valid) {
      if (at(in.result, {"validity", "reason"}).is_string()) {
        row.validity_reason = at(in.result, {"validity", "reason"}).get<std::string>();
      } else if (const json& rs = at(in.result, {"validity", "reasons"}); rs.is_array() && !rs.empty()) {
        row.validity_reason = at(rs[0], {"message"}).is_string() ? at(rs[0], {"message"}).get<std::string>() : rs[0].dump();
      }
    }
    row.noisy = at(in.result, {"noisy"}).is_boolean() && at(in.result, {"noisy"}).get<bool>();
    // Devices, cost, energy.
    if (const auto d = number(at(in.result, {"conditions", "devices"})); d && *d > 0) {
      row.devices = *d;
      row.devices_source = "conditions.devices";
    } else {
      row.devices = row.k;
      row.devices_source = "K";
    }
    row.output_throughput = number(at(in.result, {"output_throughput"}));
    if (options.price_per_hour) {
      row.price_per_hour = options.price_per_hour;
    } else if (const auto p = number(at(in.result, {"conditions", "price_per_hour"}))) {
      row.price_per_hour = p;
    } else if (const auto q = number(at(in.result, {"cost", "price_per_hour"}))) {
      row.price_per_hour = q;
    }
    if (row.price_per_hour && row.output_throughput && *row.price_per_hour >= 0 && *row.output_throughput >= 0) {
      row.cost_per_million_output_tokens = cost_per_million_tokens(*row.price_per_hour, row.devices, *row.output_throughput);
    }
    if (at(in.result, {"server_metrics"}).is_object() || in.trial_results.empty()) {
      row.energy_j_per_output_token =
          energy_per_output_token(at(in.result, {"server_metrics"}), row.output_throughput, &row.energy_source);
    } else {
      std::vector<double> v;
      std::string first;
      for (const auto& t : in.trial_results) {
        std::string how;
        if (auto e = energy_per_output_token(at(t, {"server_metrics"}), number(at(t, {"output_throughput"})), &how)) {
          v.push_back(*e);
          if (first.empty()) first = how;
        } else if (row.energy_source.empty()) {
          row.energy_source = how;
        }
      }
      if (!v.empty()) {
        row.energy_j_per_output_token = *median(v);
        row.energy_source = fmt::format("median over {} of {} trials: {}", v.size(), in.trial_results.size(), first);
      }
    }
    r.rows.push_back(std::move(row));
  }
  std::sort(r.rows.begin(), r.rows.end(), [](const ScalingRow& a, const ScalingRow& b) { return a.k < b.k; });
  const ScalingRow& b0 = r.rows.front();
  if (!(b0.x > 0)) {
    throw ScalingError(fmt::format("X(K = {}) of '{}' is 0 ({}): the speedup relative to it is undefined{}",
                                   format_k(b0.k), b0.name, r.metric_label,
                                   metric == ScalingMetric::kGoodput ? " (no request met the SLO)" : ""));
  }
  for (auto& row : r.rows) {
    const ScalingPoint p = scaling(b0.x, row.x, row.k / b0.k, options.kind);
    row.speedup = p.speedup;
    row.efficiency = p.efficiency;
  }

  if (r.base_k != 1) {
    r.notes.push_back(fmt::format("no artifact at K = 1: S and E are relative to K0 = {} (S = X(K)/X({}), E = S/(K/{}))",
                                  format_k(r.base_k), format_k(r.base_k), format_k(r.base_k)));
  }
  for (const auto& row : r.rows) {
    if (!row.valid) {
      r.notes.push_back(fmt::format("'{}' (K = {}) is INVALID{}: its X is not a trustworthy measurement", row.name,
                                    format_k(row.k), row.validity_reason.empty() ? "" : " (" + row.validity_reason + ")"));
    }
    if (row.noisy) {
      r.notes.push_back(fmt::format("'{}' (K = {}): its trials disagree (noisy): S and E carry that spread", row.name,
                                    format_k(row.k)));
    }
    if (row.cost_per_million_output_tokens && !std::isfinite(*row.cost_per_million_output_tokens)) {
      r.notes.push_back(fmt::format("'{}' (K = {}) produced no output tokens: its cost per token is unbounded", row.name,
                                    format_k(row.k)));
    }
  }
  if (!r.same_conditions) {
    r.notes.push_back("computed across different conditions (--allow-different-conditions): S and E mix the effect of "
                      "K with the conditions listed above");
  }
  return r;
}

json to_json(const ScalingReport& r) {
  json j;
  j["schema_version"] = 1;
  j["artifact"] = "scaling";
  j["kind"] = to_string(r.kind);
  j["kind_meaning"] = scaling_kind_meaning(r.kind);
  j["refused"] = r.refused;
  j["same_conditions"] = r.same_conditions;
  j["allow_different_conditions"] = r.allow_different_conditions;
  j["label"] = r.same_conditions ? std::string(to_string(r.kind)) + " scaling, same conditions"
                                 : std::string(to_string(r.kind)) + " scaling across different conditions";
  j["quantity"] = {{"metric", to_string(r.metric)},
                   {"label", r.metric_label},
                   {"unit", r.unit},
                   {"slo", r.slo ? json(*r.slo) : json(nullptr)}};
  j["base"] = {{"k", r.base_k}, {"artifact", r.base_name}};
  json conds = json::array();
  for (const auto& c : r.conditions) {
    json diffs = json::array();
    for (std::size_t i = 0; i < c.differences.size(); ++i) {
      const auto& d = c.differences[i];
      json x = {{"key", d.key}, {"a", d.a}, {"b", d.b}, {"material", d.material}};
      if (!c.notes[i].empty()) x["note"] = c.notes[i];
      diffs.push_back(std::move(x));
    }
    conds.push_back({{"a", c.base},
                     {"b", c.other},
                     {"a_k", c.base_k},
                     {"b_k", c.other_k},
                     {"same", c.same},
                     {"differences", std::move(diffs)}});
  }
  j["conditions"] = std::move(conds);
  json rows = json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"artifact", row.name},
                    {"type", to_string(row.type)},
                    {"k", row.k},
                    {"k_source", row.k_source},
                    {"x", number_or_null(row.x)},
                    {"x_min", opt_json(row.x_min)},
                    {"x_max", opt_json(row.x_max)},
                    {"trials", row.trials},
                    {"x_source", row.x_source},
                    {"capacity_load", opt_json(row.capacity_load)},
                    {"speedup", number_or_null(row.speedup)},
                    {"efficiency", number_or_null(row.efficiency)},
                    {"valid", row.valid},
                    {"validity_reason", row.validity_reason.empty() ? json(nullptr) : json(row.validity_reason)},
                    {"noisy", row.noisy},
                    {"devices", row.devices},
                    {"devices_source", row.devices_source},
                    {"output_throughput", opt_json(row.output_throughput)},
                    {"price_per_hour", opt_json(row.price_per_hour)},
                    {"cost_per_million_output_tokens", opt_json(row.cost_per_million_output_tokens)},
                    {"energy_j_per_output_token", opt_json(row.energy_j_per_output_token)},
                    {"energy_source", row.energy_source}});
  }
  j["rows"] = std::move(rows);
  j["notes"] = r.notes;
  return j;
}

std::string format_scaling_report(const ScalingReport& r) {
  auto cut = [](const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; };
  std::string o;
  // only_material: the refusal lists what is material. Otherwise every material difference and
  // every one reclassified for scaling (it has a note) is listed; what differs between any two
  // runs (start time, command line, seeds) is only counted.
  auto conditions_block = [&](bool only_material) {
    for (const auto& c : r.conditions) {
      auto shown = [&](std::size_t i) { return c.differences[i].material || (!only_material && !c.notes[i].empty()); };
      std::size_t listed = 0;
      for (std::size_t i = 0; i < c.differences.size(); ++i) listed += shown(i) ? 1 : 0;
      const std::size_t others = c.differences.size() - listed;
      if (listed == 0 && (only_material || others == 0)) continue;
      o += fmt::format("  '{}' (K = {}) vs '{}' (K = {}):\n", c.base, format_k(c.base_k), c.other, format_k(c.other_k));
      for (std::size_t i = 0; i < c.differences.size(); ++i) {
        if (!shown(i)) continue;
        const auto& d = c.differences[i];
        o += fmt::format("    {} {}: {}  vs  {}{}\n", d.material ? "*" : " ", d.key, cut(d.a), cut(d.b),
                         c.notes[i].empty() ? "" : "  (" + c.notes[i] + ")");
      }
      if (!only_material && others > 0) {
        o += fmt::format("      and {} that differ between any two runs (start time, command line, seeds, ...)\n", others);
      }
    }
  };
  if (r.refused) {
    o += fmt::format("llmload scaling: refused: the artifacts' conditions differ materially, so their throughputs do "
                     "not measure {} scaling over K alone:\n",
                     to_string(r.kind));
    conditions_block(true);
    o += "Measure every K with the same conditions (only the deployment size, and for weak scaling the offered load "
         "with it, may change), or pass --allow-different-conditions to compute it anyway (the output is then "
         "labelled as such).\n";
    return o;
  }
  o += fmt::format("llmload scaling: {} scaling{}\n", to_string(r.kind),
                   r.same_conditions ? "" : " ACROSS DIFFERENT CONDITIONS (--allow-different-conditions)");
  o += fmt::format("  {}\n", scaling_kind_meaning(r.kind));
  o += fmt::format("X(K) = {}\n", r.metric_label);
  o += fmt::format("S(K) = X(K) / X({0}), E(K) = S(K) / (K / {0}); base K0 = {0}: {1}\n", format_k(r.base_k), r.base_name);
  if (r.conditions.empty() || std::all_of(r.conditions.begin(), r.conditions.end(),
                                          [](const ConditionCheck& c) { return c.differences.empty(); })) {
    o += "Conditions: the same\n";
  } else if (r.same_conditions) {
    o += "Conditions: the same, apart from what differs between deployments or runs of any size:\n";
    conditions_block(false);
  } else {
    o += "Conditions: DIFFERENT (* = material): this is scaling across different conditions\n";
    conditions_block(false);
  }
  const bool cost = std::any_of(r.rows.begin(), r.rows.end(),
                                [](const ScalingRow& x) { return x.cost_per_million_output_tokens.has_value(); });
  const bool energy = std::any_of(r.rows.begin(), r.rows.end(),
                                  [](const ScalingRow& x) { return x.energy_j_per_output_token.has_value(); });
  const bool spread = std::any_of(r.rows.begin(), r.rows.end(), [](const ScalingRow& x) { return x.x_min.has_value(); });
  o += fmt::format("\n{:>6}{:>14}", "K", "X(K) " + r.unit);
  if (spread) o += fmt::format("{:>22}", "trials min-max");
  o += fmt::format("{:>9}{:>9}{:>9}", "S(K)", "E(K)", "devices");
  if (cost) o += fmt::format("{:>15}", "$/1M out tok");
  if (energy) o += fmt::format("{:>12}", "J/out tok");
  o += fmt::format("  {:<8}{}\n", "valid", "artifact");
  for (const auto& row : r.rows) {
    o += fmt::format("{:>6}{:>14.3f}", format_k(row.k), row.x);
    if (spread) {
      o += fmt::format("{:>22}", row.x_min ? fmt::format("{:.3f}-{:.3f} (n={})", *row.x_min, *row.x_max, row.trials) : "-");
    }
    o += fmt::format("{:>9.3f}{:>8.1f}%{:>9}", row.speedup, 100 * row.efficiency, format_k(row.devices));
    if (cost) {
      const auto& c = row.cost_per_million_output_tokens;
      o += fmt::format("{:>15}", !c ? std::string("-") : std::isfinite(*c) ? fmt::format("{:.4f}", *c) : std::string("inf"));
    }
    if (energy) {
      o += fmt::format("{:>12}", row.energy_j_per_output_token ? fmt::format("{:.4g}", *row.energy_j_per_output_token) : "-");
    }
    o += fmt::format("  {:<8}{}", row.valid ? "yes" : "INVALID", row.name);
    if (row.type == ArtifactType::kSweep && row.capacity_load) o += fmt::format(" (capacity point: load {:g})", *row.capacity_load);
    o += "\n";
  }
  if (cost) {
    const ScalingRow& b0 = r.rows.front();
    o += fmt::format("Cost: $ per 1M output tokens = price_per_hour x devices / (3600 x output tokens/s) x 1e6, at ${}/h "
                     "per device{}\n",
                     b0.price_per_hour ? fmt::format("{:g}", *b0.price_per_hour) : std::string("?"),
                     std::any_of(r.rows.begin(), r.rows.end(),
                                 [&](const ScalingRow& x) { return x.price_per_hour != b0.price_per_hour; })
                         ? " (prices differ between the artifacts)"
                         : "");
  } else {
    o += "Cost: not computed (give --price-per-hour P, the price of one device per hour)\n";
  }
  // Energy: one line when every artifact says the same, else one per K.
  const bool one_energy = std::all_of(r.rows.begin(), r.rows.end(),
                                      [&](const ScalingRow& x) { return x.energy_source == r.rows.front().energy_source; });
  for (const auto& row : r.rows) {
    if (one_energy) {
      o += fmt::format("Energy per output token: {}\n", row.energy_source);
      break;
    }
    o += fmt::format("Energy per output token (K = {}): {}\n", format_k(row.k), row.energy_source);
  }
  for (const auto& n : r.notes) o += fmt::format("Note: {}\n", n);
  return o;
}

}  // namespace llmload::analysis
