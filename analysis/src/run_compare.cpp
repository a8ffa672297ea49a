#include "llmload/analysis/run_compare.hpp"

#include "llmload/analysis/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {

using nlohmann::json;

namespace {

void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Conditions that differ between any two runs, even of the same setup.
bool informational(const std::string& key) {
  return key == "start_time" || key == "start_epoch_s" || key == "command_line" ||
         key.rfind("environment_settings", 0) == 0 || key.rfind("seeds.", 0) == 0 || key.rfind("shard.", 0) == 0 ||
         key.rfind("server_metrics", 0) == 0 || key.rfind("trials.seeds", 0) == 0 ||
         key == "workload.seed" ||  // derived from --seed, as seeds.* are: another --seed is another sample
         key == "workload.first_item";  // a sweep point's, a function of its load (compared on its own)
}

// Not a difference of conditions of its own: a setting a run records as null where it did not use it (a trace's prompts and timestamps
// instead of --input-tokens/--output-tokens/--request-rate), against the number an artifact from
// before that rule recorded, or a run that used it: not itself a difference of conditions; what
// the run used instead (its workload, its arrivals) is compared as a condition of its own.
bool unused_by_one(const std::string& key, const std::string& va, const std::string& vb) {
  const bool settable = key == "scenario.input_tokens" || key == "scenario.output_tokens" ||
                        key == "scenario.request_rate";
  if (settable && (va == "null") != (vb == "null")) return true;
  // One trial (a sweep's point) against a plain run, which records no trials: the same one run.
  return key.rfind("trials.", 0) == 0 && key != "trials.n" ? (va == "(absent)") != (vb == "(absent)")
                                                            : key == "trials.n" && ((va == "1" && vb == "(absent)") ||
                                                                                    (va == "(absent)" && vb == "1"));
}

const HdrHistogram* histogram(const CompareArtifact& r, const std::string& tag) {
  if (!r.hlog) return nullptr;
  for (const auto& i : r.hlog->intervals) {
    if (i.tag && *i.tag == tag) return &i.histogram;
  }
  return nullptr;
}

std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return std::nullopt;
    p = &(*p)[k];
  }
  if (!p->is_number()) return std::nullopt;
  return p->get<double>();
}

// Per-trial values of a metric when the result has them: trials[i].<key> (a number).
std::vector<double> trial_values(const json& result, const std::string& key) {
  std::vector<double> v;
  if (!result.contains("trials") || !result["trials"].is_array()) return v;
  for (const auto& t : result["trials"]) {
    if (t.is_object() && t.contains(key) && t[key].is_number()) v.push_back(t[key].get<double>());
  }
  return v;
}

}  // namespace

namespace {

// The layout of the histograms llmload records (1 us to 1 h, 3 significant digits).
const HdrHistogram& recording_layout() {
  static const HdrHistogram h(1, 3'600'000'000, 3);
  return h;
}

// Width (ms) of the histogram bucket holding value_ms: the resolution of a percentile read from it.
double bucket_ms(const HdrHistogram& h, double value_ms) {
  if (!std::isfinite(value_ms)) return 0;
  const double us = std::clamp(std::fabs(value_ms) * 1000.0, 0.0, static_cast<double>(h.highest_trackable()));
  return static_cast<double>(h.range_size_at_index(h.index_of(static_cast<std::int64_t>(us)))) / 1000.0;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (const double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

std::string string_at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return {};
    p = &(*p)[k];
  }
  return p->is_string() ? p->get<std::string>() : std::string();
}

std::string percent(double fraction) { return fmt::format("{:g}%", 100 * fraction); }

std::string significance_rule(double min_effect) {
  return fmt::format(
      "a difference is significant when the 95% test shows it (Welch p < 0.05 over trials, else the two 95% "
      "intervals do not overlap) AND |B - A| is at least the threshold: max({} of A (--min-effect), the "
      "measurement's resolution: the histogram bucket of the value, or one request's share of a throughput)",
      percent(min_effect));
}

// The rule for the console, wrapped.
std::string significance_lines(double min_effect) {
  return fmt::format(
      "Significant = the 95% test shows a difference (Welch p < 0.05 over trials, else the 95% CIs do not\n"
      "  overlap) AND |B - A| >= threshold = max({} of A (--min-effect), the measurement's resolution:\n"
      "  the histogram bucket of a percentile, one request's share of a throughput).\n",
      percent(min_effect));
}

std::string significance_cell(const MetricDelta& d) {
  if (d.method == CompareMethod::kNone) return "unknown";
  if (d.significant) return "YES";
  return d.below_threshold ? "no (< thr)" : "no";
}

const char* method_text(CompareMethod m) {
  return m == CompareMethod::kWelchT              ? "Welch t-test over trials"
         : m == CompareMethod::kQuantileCiOverlap ? "95% CIs compared"
                                                   : "no CI: not decided";
}

std::string metric_table(const std::vector<MetricComparison>& metrics, const std::string& indent) {
  std::string o = fmt::format("{}{:<20}{:>11}{:>11}{:>11}{:>10}{:>11}  {:<12}{}\n", indent, "metric", "A", "B", "B - A",
                              "change", "threshold", "significant", "method");
  for (const auto& m : metrics) {
    const MetricDelta& d = m.delta;
    const std::string rel = std::isfinite(d.relative_delta) ? fmt::format("{:+.1f}%", 100 * d.relative_delta) : "-";
    o += fmt::format("{}{:<20}{:>11.3f}{:>11.3f}{:>+11.3f}{:>10}{:>11.3f}  {:<12}{}\n", indent, m.metric, d.a, d.b,
                     d.delta, rel, d.threshold, significance_cell(d), method_text(d.method));
  }
  return o;
}

bool any_below_threshold(const std::vector<MetricComparison>& metrics) {
  return std::any_of(metrics.begin(), metrics.end(), [](const MetricComparison& m) { return m.delta.below_threshold; });
}

std::string cut(const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; }

std::string conditions_text(const std::vector<ConditionDiff>& conditions, bool same, const std::string& what) {
  std::string o = same ? fmt::format("{}: the same", what)
                       : fmt::format("{}: DIFFERENT: this is a comparison across different conditions", what);
  o += conditions.empty() ? "\n" : " (differing below)\n";
  for (const auto& d : conditions) {
    o += fmt::format("  {} {}: A {}  B {}\n", d.material ? "*" : " ", d.key, cut(d.a), cut(d.b));
  }
  if (!conditions.empty()) o += "  (* = a condition that matters; the others differ between any two runs)\n";
  return o;
}

json conditions_json(const std::vector<ConditionDiff>& conditions) {
  json conds = json::array();
  for (const auto& d : conditions) conds.push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}, {"material", d.material}});
  return conds;
}

json metrics_json(const std::vector<MetricComparison>& metrics) {
  json ms = json::object();
  for (const auto& m : metrics) {
    json x = to_json(m.delta);
    x["unit"] = m.unit;
    ms[m.metric] = std::move(x);
  }
  return ms;
}

json opt_number(const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }

// One side of a metric: a single value with its within-run interval, or per-trial values.
struct Side {
  std::vector<double> values;
  std::optional<Interval> ci;
  double resolution = 0;
};

}  // namespace

SideVerdicts side_verdicts(const json& result) {
  SideVerdicts v;
  if (result.contains("validity") && result["validity"].is_object()) {
    const json& val = result["validity"];
    v.validity = string_at(val, {"verdict"});
    if (v.validity.empty() && val.contains("valid") && val["valid"].is_boolean()) {
      v.validity = val["valid"].get<bool>() ? "VALID" : "INVALID";
    }
    if (val.contains("reasons") && val["reasons"].is_array()) {
      // A trials artifact repeats a reason per trial: each text once, with the trials it holds for.
      std::vector<std::pair<std::string, std::vector<int>>> texts;
      for (const auto& r : val["reasons"]) {
        std::string text = string_at(r, {"code"});
        if (!text.empty() && std::find(v.codes.begin(), v.codes.end(), text) == v.codes.end()) v.codes.push_back(text);
        const std::string msg = string_at(r, {"message"});
        if (!msg.empty()) text += text.empty() ? msg : ": " + msg;
        if (text.empty()) continue;
        auto it = std::find_if(texts.begin(), texts.end(), [&](const auto& t) { return t.first == text; });
        if (it == texts.end()) it = texts.insert(texts.end(), {text, {}});
        if (r.contains("trial") && r["trial"].is_number_integer()) it->second.push_back(r["trial"].get<int>());
      }
      for (auto& [text, trials] : texts) {
        if (trials.empty()) {
          v.reasons.push_back(text);
          continue;
        }
        std::string list;
        for (const int t : trials) list += (list.empty() ? "" : ", ") + std::to_string(t);
        v.reasons.push_back(fmt::format("{} {}: {}", trials.size() == 1 ? "trial" : "trials", list, text));
      }
    }
    if (v.reasons.empty() && v.validity == "INVALID") {
      if (auto r = string_at(val, {"reason"}); !r.empty()) v.reasons.push_back(r);
    }
  }
  if (result.contains("slo") && result["slo"].is_object()) {
    v.slo_verdict = string_at(result["slo"], {"verdict"});
    v.slo_spec = string_at(result["slo"], {"spec"});
  }
  return v;
}

std::string format_verdicts(const SideVerdicts& v, bool brief) {
  std::string o = v.validity.empty() ? std::string("validity unknown (the artifact has none)") : v.validity;
  const std::vector<std::string>& why = brief && !v.codes.empty() ? v.codes : v.reasons;
  if (!why.empty()) {
    o += " (";
    for (std::size_t i = 0; i < why.size(); ++i) o += (i ? "; " : "") + why[i];
    o += ")";
  }
  if (!v.slo_verdict.empty()) {
    o += v.slo_spec.empty() ? fmt::format(", SLO {}", v.slo_verdict) : fmt::format(", SLO {}: {}", v.slo_spec, v.slo_verdict);
  } else {
    o += ", no SLO";
  }
  return o;
}

json to_json(const SideVerdicts& v) {
  return {{"validity", v.validity.empty() ? json(nullptr) : json(v.validity)},
          {"validity_reasons", v.reasons},
          {"slo_verdict", v.slo_verdict.empty() ? json(nullptr) : json(v.slo_verdict)},
          {"slo_spec", v.slo_spec.empty() ? json(nullptr) : json(v.slo_spec)}};
}

RunComparison compare_runs(const CompareArtifact& a, const CompareArtifact& b, const CompareSettings& settings) {
  RunComparison c;
  c.min_effect = settings.min_effect;
  c.a = side_verdicts(a.result);
  c.b = side_verdicts(b.result);
  std::map<std::string, std::string> fa;
  std::map<std::string, std::string> fb;
  if (a.result.contains("conditions")) flatten(a.result["conditions"], "", fa);
  if (b.result.contains("conditions")) flatten(b.result["conditions"], "", fb);
  std::set<std::string> keys;
  for (const auto& [k, v] : fa) keys.insert(k);
  for (const auto& [k, v] : fb) keys.insert(k);
  for (const auto& k : keys) {
    const auto ia = fa.find(k);
    const auto ib = fb.find(k);
    const std::string va = ia == fa.end() ? "(absent)" : ia->second;
    const std::string vb = ib == fb.end() ? "(absent)" : ib->second;
    if (va == vb) continue;
    ConditionDiff d{k, va, vb, !informational(k) && !unused_by_one(k, va, vb)};
    c.same_conditions = c.same_conditions && !d.material;
    c.conditions.push_back(std::move(d));
  }
  CompareOptions base;
  base.alpha = settings.alpha;
  base.min_effect = settings.min_effect;

  // Latency percentiles: per-trial values (Welch), or the histograms' order-statistic CIs.
  std::vector<std::string> not_compared;
  // TTFO is its own number only where requests reasoned before answering (else it is TTFT's):
  // compared when both runs did.
  const auto reasoned = [](const CompareArtifact& r) {
    const json& req = r.result.value("requests", json());
    return (req.is_object() && req.value("reasoning_first", 0) > 0) || !trial_values(r.result, "p99_ttfo_ms").empty();
  };
  const bool ttfo = reasoned(a) && reasoned(b);
  for (const char* m : {"ttft", "ttfo", "tpot", "itl", "e2e"}) {
    if (std::string(m) == "ttfo" && !ttfo) continue;
    for (double p : {50.0, 90.0, 99.0}) {
      const std::string key = fmt::format("{}_p{}_ms", m, static_cast<int>(p));
      // Trials artifacts name them as vLLM does (p99_ttft_ms, median_e2el_ms); older ones as `key`.
      const std::string vllm = fmt::format("{}_{}_ms", p == 50.0 ? std::string("median") : fmt::format("p{}", static_cast<int>(p)),
                                           std::string(m) == "e2e" ? "e2el" : m);
      auto side = [&](const CompareArtifact& r) -> std::optional<Side> {
        auto t = trial_values(r.result, vllm);
        if (t.empty()) t = trial_values(r.result, key);
        if (t.size() >= 2) {
          const double res = bucket_ms(recording_layout(), mean_of(t));
          return Side{std::move(t), std::nullopt, res};
        }
        const HdrHistogram* h = histogram(r, m);
        if (h == nullptr || h->total_count() == 0) return std::nullopt;
        const QuantileEstimate e = estimate_quantile(*h, p);
        Side s{{e.value / 1000.0}, std::nullopt, bucket_ms(*h, e.value / 1000.0)};
        if (e.ci_valid) s.ci = Interval{e.ci_low / 1000.0, e.ci_high / 1000.0};
        return s;
      };
      const auto sa = side(a);
      const auto sb = side(b);
      if (!sa || !sb) {
        not_compared.push_back(key);
        continue;
      }
      CompareOptions o = base;
      o.a_ci = sa->ci;
      o.b_ci = sb->ci;
      o.resolution = std::max(sa->resolution, sb->resolution);
      c.metrics.push_back({key, "ms", compare_metric(sa->values, sb->values, o)});
    }
  }
  if (!not_compared.empty()) {
    std::vector<std::string> missing;
    for (const CompareArtifact* r : {&a, &b}) {
      if (!r->hlog && trial_values(r->result, "p99_ttft_ms").size() < 2 && trial_values(r->result, "ttft_p99_ms").size() < 2) {
        missing.push_back(r == &a ? "A" : "B");
      }
    }
    std::string list;
    for (const auto& k : not_compared) list += (list.empty() ? "" : ", ") + k;
    c.notes.push_back(fmt::format(
        "not compared: {}{}", list,
        missing.empty() ? std::string(" (no samples of these on a side)")
                        : fmt::format(" ({} no latency.hlog and no per-trial values)",
                                      missing.size() == 2 ? "A and B have" : missing.front() + " has")));
  }

  // Throughputs: the completion count N in the window is Poisson-like: N +- 1.96 sqrt(N). The
  // resolution is one request's share: X / N.
  for (const char* key : {"request_throughput", "output_throughput", "request_goodput"}) {
    const std::string k = key;
    const std::string per_request_of = k == "output_throughput" ? "output_throughput" : "request_throughput";
    auto side = [&](const CompareArtifact& r) -> std::optional<Side> {
      const auto x = number_at(r.result, {key});
      const auto n = number_at(r.result, {"completed"});
      const auto t = trial_values(r.result, key);
      const auto per = number_at(r.result, {per_request_of.c_str()});
      double res = 0;
      if (n && *n >= 1 && per) {
        const double per_trial_n = *n / static_cast<double>(std::max<std::size_t>(1, t.size()));
        res = *per / per_trial_n;
      }
      if (t.size() >= 2) return Side{t, std::nullopt, res};
      if (!x) return std::nullopt;
      Side s{{*x}, std::nullopt, res};
      if (n && *n >= 1) {
        const double half = 1.96 * std::sqrt(*n) / *n;  // relative
        s.ci = Interval{*x * (1 - half), *x * (1 + half)};
      }
      return s;
    };
    const auto sa = side(a);
    const auto sb = side(b);
    if (!sa || !sb) continue;
    CompareOptions o = base;
    o.a_ci = sa->ci;
    o.b_ci = sb->ci;
    o.resolution = std::max(sa->resolution, sb->resolution);
    c.metrics.push_back({k, k == "output_throughput" ? "tok/s" : "req/s", compare_metric(sa->values, sb->values, o)});
  }
  return c;
}

json to_json(const RunComparison& c) {
  json j;
  j["kind"] = "runs";
  j["same_conditions"] = c.same_conditions;
  j["label"] = c.same_conditions ? "same conditions" : "comparison across different conditions";
  j["a"] = to_json(c.a);
  j["b"] = to_json(c.b);
  j["min_effect"] = c.min_effect;
  j["significance_rule"] = significance_rule(c.min_effect);
  j["conditions_differing"] = conditions_json(c.conditions);
  j["metrics"] = metrics_json(c.metrics);
  j["notes"] = c.notes;
  return j;
}

std::string format_comparison(const RunComparison& c, const std::string& a_name, const std::string& b_name) {
  std::string o;
  o += fmt::format("llmload compare: A = {}, B = {}\n", a_name, b_name);
  o += fmt::format("A: {}\nB: {}\n", format_verdicts(c.a), format_verdicts(c.b));
  for (const auto& [side, v] : {std::pair{"A", &c.a}, std::pair{"B", &c.b}}) {
    if (v->validity == "INVALID") {
      o += fmt::format("note: {} is INVALID: its numbers do not stand for the configuration, nor does a difference "
                       "from them\n", side);
    }
  }
  o += conditions_text(c.conditions, c.same_conditions, "Conditions");
  o += significance_lines(c.min_effect) + "\n";
  o += metric_table(c.metrics, "");
  if (any_below_threshold(c.metrics)) {
    o += "no (< thr): the test separates A and B, but the difference is below the threshold: not significant\n";
  }
  for (const auto& n : c.notes) o += fmt::format("note: {}\n", n);
  return o;
}

// --- sweeps ------------------------------------------------------------------------------------

namespace {

std::string point_verdict(const SweepArtifact::Point& p) {
  std::string v = string_at(p.run.result, {"slo", "verdict"});
  if (v.empty()) v = string_at(p.entry, {"verdict"});
  return v;
}

SideVerdicts point_verdicts(const SweepArtifact::Point& p) {
  SideVerdicts v = side_verdicts(p.run.result);
  if (v.validity.empty() && p.entry.contains("valid") && p.entry["valid"].is_boolean()) {
    v.validity = p.entry["valid"].get<bool>() ? "VALID" : "INVALID";
  }
  if (v.slo_verdict.empty()) v.slo_verdict = string_at(p.entry, {"verdict"});
  return v;
}

std::string sweep_slo(const json& sweep) {
  if (!sweep.contains("slo")) return {};
  const json& s = sweep["slo"];
  if (s.is_string()) return s.get<std::string>();
  if (s.is_object()) return string_at(s, {"spec"});
  return {};
}

std::string load_unit(const std::string& kind) {
  if (kind == "rate") return " req/s";
  if (kind == "concurrency") return " concurrent";
  return "";
}

std::string bracket_text(const SweepCapacity& c, const std::string& unit) {
  if (c.source.empty()) return "unknown (no point has a conclusive SLO verdict, PASS or FAIL, and sweep.json has none)";
  std::string o;
  if (c.highest_pass) {
    o = fmt::format("{:g}{}", *c.highest_pass, unit);
  } else {
    o = "below every load tried";
  }
  o += fmt::format("  bracket [{}, {})", c.highest_pass ? fmt::format("{:g}", *c.highest_pass) : "0",
                   c.lowest_fail ? fmt::format("{:g}", *c.lowest_fail) : "no load tried failed");
  if (c.goodput_at_capacity) o += fmt::format("  goodput {:.3f} req/s", *c.goodput_at_capacity);
  o += fmt::format("  (from {})", c.source);
  return o;
}

json capacity_json(const SweepCapacity& c) {
  return {{"highest_pass", opt_number(c.highest_pass)},
          {"lowest_fail", opt_number(c.lowest_fail)},
          {"goodput_at_capacity", opt_number(c.goodput_at_capacity)},
          {"source", c.source.empty() ? json(nullptr) : json(c.source)}};
}

bool same_load(double x, double y) { return std::fabs(x - y) <= 1e-9 * std::max(1.0, std::max(std::fabs(x), std::fabs(y))); }

}  // namespace

SweepCapacity sweep_capacity(const SweepArtifact& s) {
  SweepCapacity c;
  if (s.sweep.contains("capacity") && s.sweep["capacity"].is_object()) {
    const json& cap = s.sweep["capacity"];
    c.highest_pass = number_at(cap, {"highest_pass"});
    c.lowest_fail = number_at(cap, {"lowest_fail"});
    c.goodput_at_capacity = number_at(cap, {"goodput_at_capacity"});
    if (c.highest_pass || c.lowest_fail) {
      c.source = "sweep.json";
      return c;
    }
  }
  // From the points' verdicts (the report's rule): unknown unless some point is conclusive.
  std::vector<double> loads;
  std::vector<std::string> verdicts;
  for (const auto& p : s.points) {
    loads.push_back(p.offered);
    verdicts.push_back(point_verdict(p));
  }
  const VerdictBracket b = bracket_from_verdicts(loads, verdicts);
  if (!b.highest_pass && !b.lowest_fail) return c;
  c.highest_pass = b.highest_pass;
  c.lowest_fail = b.lowest_fail;
  if (b.pass_index) c.goodput_at_capacity = number_at(s.points[*b.pass_index].run.result, {"request_goodput"});
  c.source = "the points' SLO verdicts";
  return c;
}

SweepComparison compare_sweeps(const SweepArtifact& a, const SweepArtifact& b, const CompareSettings& settings) {
  SweepComparison c;
  c.min_effect = settings.min_effect;
  c.load_kind = !a.load_kind.empty() ? a.load_kind : b.load_kind;
  c.points_a = a.points.size();
  c.points_b = b.points.size();
  c.slo_a = sweep_slo(a.sweep);
  c.slo_b = sweep_slo(b.sweep);
  if (!a.load_kind.empty() && !b.load_kind.empty() && a.load_kind != b.load_kind) {
    c.notes.push_back(fmt::format("A sweeps {} and B sweeps {}: no offered load matches across them", a.load_kind, b.load_kind));
  }
  for (const auto& n : a.notes) c.notes.push_back("A: " + n);
  for (const auto& n : b.notes) c.notes.push_back("B: " + n);
  const bool comparable = a.load_kind.empty() || b.load_kind.empty() || a.load_kind == b.load_kind;
  static const std::set<std::string> kCurve = {"request_throughput", "request_goodput", "ttft_p50_ms", "ttft_p99_ms",
                                               "tpot_p50_ms",        "tpot_p99_ms",     "e2e_p50_ms",  "e2e_p99_ms"};
  std::set<std::string> seen_conditions;
  std::vector<bool> used_b(b.points.size(), false);
  for (const auto& pa : a.points) {
    SweepPointComparison pc;
    pc.offered = pa.offered;
    pc.in_a = true;
    pc.a = point_verdicts(pa);
    for (std::size_t i = 0; comparable && i < b.points.size(); ++i) {
      if (used_b[i] || !same_load(pa.offered, b.points[i].offered)) continue;
      used_b[i] = true;
      pc.in_b = true;
      pc.b = point_verdicts(b.points[i]);
      pc.run = compare_runs(pa.run, b.points[i].run, settings);
      pc.run.a = pc.a;
      pc.run.b = pc.b;
      std::erase_if(pc.run.metrics, [](const MetricComparison& m) { return kCurve.count(m.metric) == 0; });
      for (const auto& d : pc.run.conditions) {
        if (!d.material || !seen_conditions.insert(d.key).second) continue;
        c.conditions.push_back(d);
        c.same_conditions = false;
      }
      break;
    }
    c.points.push_back(std::move(pc));
  }
  for (std::size_t i = 0; i < b.points.size(); ++i) {
    if (used_b[i]) continue;
    SweepPointComparison pc;
    pc.offered = b.points[i].offered;
    pc.in_b = true;
    pc.b = point_verdicts(b.points[i]);
    c.points.push_back(std::move(pc));
  }
  std::stable_sort(c.points.begin(), c.points.end(),
                   [](const SweepPointComparison& x, const SweepPointComparison& y) { return x.offered < y.offered; });
  if (std::none_of(c.points.begin(), c.points.end(), [](const auto& p) { return p.in_a && p.in_b; })) {
    c.notes.push_back("no offered load is in both sweeps: the curves are not compared point by point");
  }

  c.capacity_a = sweep_capacity(a);
  c.capacity_b = sweep_capacity(b);
  const SweepCapacity& ca = c.capacity_a;
  const SweepCapacity& cb = c.capacity_b;
  const std::string unit = load_unit(c.load_kind);
  if (ca.source.empty() || cb.source.empty()) {
    c.capacity_explanation = fmt::format("capacity not compared: {} (no conclusive SLO verdict, no capacity in "
                                         "sweep.json)",
                                         ca.source.empty() && cb.source.empty() ? "neither sweep has a capacity"
                                         : ca.source.empty()                    ? "A has no capacity"
                                                                                : "B has no capacity");
  } else if (!comparable) {
    c.capacity_explanation = "capacity not compared: the sweeps vary different loads";
  } else {
    if (ca.highest_pass && cb.highest_pass && *ca.highest_pass > 0) c.capacity_ratio = *cb.highest_pass / *ca.highest_pass;
    if (cb.highest_pass && ca.lowest_fail && *cb.highest_pass >= *ca.lowest_fail) {
      c.capacity_direction = 1;
    } else if (ca.highest_pass && cb.lowest_fail && *ca.highest_pass >= *cb.lowest_fail) {
      c.capacity_direction = -1;
    }
    const std::string ratio = c.capacity_ratio ? fmt::format("B / A = {:.3f}", *c.capacity_ratio) : std::string("B / A undefined");
    if (c.capacity_direction > 0) {
      c.capacity_explanation = fmt::format("{}: B is higher: B passed at {:g}{}, at or above A's lowest failing load, {:g}",
                                           ratio, *cb.highest_pass, unit, *ca.lowest_fail);
    } else if (c.capacity_direction < 0) {
      c.capacity_explanation = fmt::format("{}: B is lower: A passed at {:g}{}, at or above B's lowest failing load, {:g}",
                                           ratio, *ca.highest_pass, unit, *cb.lowest_fail);
    } else if (ca.highest_pass == cb.highest_pass && ca.lowest_fail == cb.lowest_fail) {
      c.capacity_explanation = fmt::format("{}: the same capacity and bracket", ratio);
    } else {
      c.capacity_explanation = fmt::format(
          "{}: the brackets overlap: the searches do not resolve a difference (a finer search, or more points, "
          "would)",
          ratio);
    }
  }
  return c;
}

json to_json(const SweepComparison& c) {
  json j;
  j["kind"] = "sweeps";
  j["load_kind"] = c.load_kind.empty() ? json(nullptr) : json(c.load_kind);
  j["a"] = {{"points", c.points_a}, {"slo_spec", c.slo_a.empty() ? json(nullptr) : json(c.slo_a)}};
  j["b"] = {{"points", c.points_b}, {"slo_spec", c.slo_b.empty() ? json(nullptr) : json(c.slo_b)}};
  j["same_conditions"] = c.same_conditions;
  j["label"] = c.same_conditions ? "same conditions" : "comparison across different conditions";
  j["min_effect"] = c.min_effect;
  j["significance_rule"] = significance_rule(c.min_effect);
  j["conditions_differing"] = conditions_json(c.conditions);
  j["capacity"] = {{"a", capacity_json(c.capacity_a)},
                   {"b", capacity_json(c.capacity_b)},
                   {"ratio", opt_number(c.capacity_ratio)},
                   {"direction", c.capacity_direction},
                   {"explanation", c.capacity_explanation}};
  json pts = json::array();
  for (const auto& p : c.points) {
    json x = {{"offered", p.offered},
              {"in_a", p.in_a},
              {"in_b", p.in_b},
              {"a", p.in_a ? to_json(p.a) : json(nullptr)},
              {"b", p.in_b ? to_json(p.b) : json(nullptr)}};
    x["metrics"] = p.in_a && p.in_b ? metrics_json(p.run.metrics) : json::object();
    x["notes"] = p.run.notes;
    pts.push_back(std::move(x));
  }
  j["points"] = std::move(pts);
  j["notes"] = c.notes;
  return j;
}

std::string format_sweep_comparison(const SweepComparison& c, const std::string& a_name, const std::string& b_name) {
  const std::string unit = load_unit(c.load_kind);
  std::string o;
  o += fmt::format("llmload compare (two sweeps): A = {}, B = {}\n", a_name, b_name);
  for (const auto& [side, n, slo] : {std::tuple{"A", c.points_a, &c.slo_a}, std::tuple{"B", c.points_b, &c.slo_b}}) {
    o += fmt::format("{}: {} point{}{}, {}\n", side, n, n == 1 ? "" : "s",
                     c.load_kind.empty() ? "" : fmt::format(" over {}", c.load_kind),
                     slo->empty() ? std::string("no SLO") : "SLO " + *slo);
  }
  o += conditions_text(c.conditions, c.same_conditions, "Conditions at matching loads");
  o += significance_lines(c.min_effect);
  o += "\nCapacity (the highest load meeting the SLO; the true capacity lies in [highest pass, lowest fail)):\n";
  o += fmt::format("  A: {}\n  B: {}\n  {}\n", bracket_text(c.capacity_a, unit), bracket_text(c.capacity_b, unit),
                   c.capacity_explanation);
  o += fmt::format("\nCurves, per offered load{}:\n", c.load_kind.empty() ? "" : fmt::format(" ({})", c.load_kind));
  bool below = false;
  for (const auto& p : c.points) {
    o += fmt::format("\noffered {:g}{}:", p.offered, unit);
    if (!p.in_b) {
      o += fmt::format(" only in A ({})\n", format_verdicts(p.a, true));
      continue;
    }
    if (!p.in_a) {
      o += fmt::format(" only in B ({})\n", format_verdicts(p.b, true));
      continue;
    }
    o += fmt::format("\n  A: {}\n  B: {}\n", format_verdicts(p.a, true), format_verdicts(p.b, true));
    o += metric_table(p.run.metrics, "  ");
    below = below || any_below_threshold(p.run.metrics);
    for (const auto& n : p.run.notes) o += fmt::format("  note: {}\n", n);
  }
  if (below) o += "\nno (< thr): the test separates A and B, but the difference is below the threshold: not significant\n";
  if (std::any_of(c.points.begin(), c.points.end(), [](const auto& p) { return !p.a.codes.empty() || !p.b.codes.empty(); })) {
    o += "INVALID points show their reasons' codes; the messages are in --json (points[].a/b.validity_reasons) and in "
         "each point's result.json\n";
  }
  for (const auto& n : c.notes) o += fmt::format("note: {}\n", n);
  return o;
}

// --- reading artifacts -------------------------------------------------------------------------

namespace {

namespace fs = std::filesystem;

json read_json_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw CompareInputError(fmt::format("cannot read '{}'", p.string()));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw CompareInputError(fmt::format("'{}' is not valid JSON ({})", p.string(), e.what()));
  }
}

std::optional<HlogFile> read_hlog_if_exists(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  std::ifstream h(p, std::ios::binary);
  try {
    return read_hlog(h);
  } catch (const std::exception& e) {
    throw CompareInputError(fmt::format("'{}' cannot be read: {}", p.string(), e.what()));
  }
}

}  // namespace

CompareArtifactKind detect_compare_artifact(const std::string& given) {
  const fs::path p = given;
  std::error_code ec;
  if (!fs::exists(p, ec)) throw CompareInputError(fmt::format("'{}' does not exist", given));
  if (fs::is_regular_file(p, ec)) return p.filename() == "sweep.json" ? CompareArtifactKind::kSweep : CompareArtifactKind::kRun;
  if (fs::is_regular_file(p / "sweep.json", ec)) return CompareArtifactKind::kSweep;
  if (fs::is_regular_file(p / "result.json", ec)) return CompareArtifactKind::kRun;
  throw CompareInputError(fmt::format(
      "'{}' holds neither result.json (a run, written by llmload run --output) nor sweep.json (a sweep, written by "
      "llmload sweep --output)",
      given));
}

CompareArtifact load_compare_run(const std::string& given) {
  CompareArtifact r;
  r.name = given;
  fs::path dir = given;
  fs::path result = dir / "result.json";
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) {
    result = dir;
    dir = dir.parent_path();
  } else if (!fs::is_directory(dir, ec)) {
    throw CompareInputError(fmt::format("'{}' is neither a run directory nor a result.json file", given));
  }
  if (!fs::exists(result, ec)) {
    throw CompareInputError(
        fmt::format("'{}' does not exist: give a directory written by llmload run --output (it holds result.json)",
                    result.string()));
  }
  r.result = read_json_file(result);
  if (!r.result.is_object()) {
    throw CompareInputError(fmt::format("'{}' is not a JSON object: is it an llmload result.json?", result.string()));
  }
  if (!r.result.contains("conditions")) {
    throw CompareInputError(fmt::format("'{}' has no \"conditions\": it is not an llmload run artifact", result.string()));
  }
  r.hlog = read_hlog_if_exists(dir / "latency.hlog");
  // A trials artifact of one trial (each sweep point by default): that trial's histograms.
  if (!r.hlog && r.result.contains("trials") && r.result["trials"].is_array() && r.result["trials"].size() == 1) {
    const std::string sub = string_at(r.result["trials"][0], {"dir"});
    fs::path t = sub.empty() ? fs::path("trial-1") : fs::path(sub);
    if (t.is_relative()) t = dir / t;
    r.hlog = read_hlog_if_exists(t / "latency.hlog");
  }
  return r;
}

SweepArtifact load_compare_sweep(const std::string& given) {
  fs::path root = given;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) root = root.parent_path();
  const fs::path sp = root / "sweep.json";
  if (!fs::is_regular_file(sp, ec)) throw CompareInputError(fmt::format("'{}' does not exist", sp.string()));
  SweepArtifact s;
  s.name = given;
  s.sweep = read_json_file(sp);
  if (!s.sweep.is_object()) throw CompareInputError(fmt::format("'{}': expected an object {{\"points\": [...]}}", sp.string()));
  if (!s.sweep.contains("points") || !s.sweep["points"].is_array()) {
    throw CompareInputError(fmt::format("'{}' has no \"points\" array: is it an llmload sweep.json?", sp.string()));
  }
  s.load_kind = string_at(s.sweep, {"load_kind"});
  const json& pts = s.sweep["points"];
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const json& e = pts[i];
    const std::string d = string_at(e, {"dir"});
    if (d.empty()) throw CompareInputError(fmt::format("'{}': points[{}] has no \"dir\"", sp.string(), i));
    fs::path pd = d;
    if (pd.is_relative()) pd = root / pd;
    if (!fs::is_regular_file(pd / "result.json", ec)) {
      s.notes.push_back(fmt::format("sweep.json points[{}] ('{}'): no result.json there (not run yet, or an interrupted "
                                    "sweep); left out",
                                    i, d));
      continue;
    }
    SweepArtifact::Point p;
    p.dir = d;
    p.entry = e;
    p.run = load_compare_run(pd.string());
    std::optional<double> offered = number_at(e, {"offered"});
    for (auto path : {std::initializer_list<const char*>{"load", "offered_rate"},
                      std::initializer_list<const char*>{"load", "offered_concurrency"},
                      std::initializer_list<const char*>{"conditions", "scenario", "request_rate"},
                      std::initializer_list<const char*>{"conditions", "scenario", "concurrency"}}) {
      if (!offered) offered = number_at(p.run.result, path);
    }
    if (!offered) {
      throw CompareInputError(fmt::format("'{}': points[{}] ('{}') has no offered load (\"offered\") and its result.json "
                                          "does not say it",
                                          sp.string(), i, d));
    }
    p.offered = *offered;
    s.points.push_back(std::move(p));
  }
  std::stable_sort(s.points.begin(), s.points.end(),
                   [](const SweepArtifact::Point& x, const SweepArtifact::Point& y) { return x.offered < y.offered; });
  return s;
}

}  // namespace llmload::analysis
