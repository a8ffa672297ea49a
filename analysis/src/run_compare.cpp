#include "llmload/analysis/run_compare.hpp"

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

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
         key.rfind("server_metrics", 0) == 0 || key.rfind("trials.seeds", 0) == 0;
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

RunComparison compare_runs(const CompareArtifact& a, const CompareArtifact& b) {
  RunComparison c;
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
    ConditionDiff d{k, va, vb, !informational(k)};
    c.same_conditions = c.same_conditions && !d.material;
    c.conditions.push_back(std::move(d));
  }

  // Latency percentiles: histograms (order-statistic CIs), or per-trial values.
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    for (double p : {50.0, 90.0, 99.0}) {
      const std::string key = fmt::format("{}_p{}_ms", m, static_cast<int>(p));
      // Trials artifacts name them as vLLM does (p99_ttft_ms, median_e2el_ms); older ones as `key`.
      const std::string vllm = fmt::format("{}_{}_ms", p == 50.0 ? std::string("median") : fmt::format("p{}", static_cast<int>(p)),
                                           std::string(m) == "e2e" ? "e2el" : m);
      auto ta = trial_values(a.result, vllm);
      auto tb = trial_values(b.result, vllm);
      if (ta.empty()) ta = trial_values(a.result, key);
      if (tb.empty()) tb = trial_values(b.result, key);
      MetricComparison mc{key, "ms", {}};
      if (ta.size() >= 2 && tb.size() >= 2) {
        mc.delta = compare_metric(ta, tb);
        c.metrics.push_back(std::move(mc));
        continue;
      }
      const HdrHistogram* ha = histogram(a, m);
      const HdrHistogram* hb = histogram(b, m);
      if (ha == nullptr || hb == nullptr || ha->total_count() == 0 || hb->total_count() == 0) continue;
      const QuantileEstimate ea = estimate_quantile(*ha, p);
      const QuantileEstimate eb = estimate_quantile(*hb, p);
      CompareOptions o;
      if (ea.ci_valid) o.a_ci = Interval{ea.ci_low / 1000.0, ea.ci_high / 1000.0};
      if (eb.ci_valid) o.b_ci = Interval{eb.ci_low / 1000.0, eb.ci_high / 1000.0};
      const double va = ea.value / 1000.0;
      const double vb = eb.value / 1000.0;
      mc.delta = compare_metric(std::span<const double>(&va, 1), std::span<const double>(&vb, 1), o);
      c.metrics.push_back(std::move(mc));
    }
  }
  // Throughputs: the completion count N in the window is Poisson-like: N +- 1.96 sqrt(N).
  for (const char* key : {"request_throughput", "output_throughput", "request_goodput"}) {
    const auto ta = trial_values(a.result, key);
    const auto tb = trial_values(b.result, key);
    MetricComparison mc{key, std::string(key) == "output_throughput" ? "tok/s" : "req/s", {}};
    if (ta.size() >= 2 && tb.size() >= 2) {
      mc.delta = compare_metric(ta, tb);
      c.metrics.push_back(std::move(mc));
      continue;
    }
    const auto xa = number_at(a.result, {key});
    const auto xb = number_at(b.result, {key});
    const auto na = number_at(a.result, {"completed"});
    const auto nb = number_at(b.result, {"completed"});
    if (!xa || !xb) continue;
    CompareOptions o;
    auto interval = [](double x, std::optional<double> n) -> std::optional<Interval> {
      if (!n || *n < 1) return std::nullopt;
      const double half = 1.96 * std::sqrt(*n) / *n;  // relative
      return Interval{x * (1 - half), x * (1 + half)};
    };
    o.a_ci = interval(*xa, na);
    o.b_ci = interval(*xb, nb);
    mc.delta = compare_metric(std::span<const double>(&*xa, 1), std::span<const double>(&*xb, 1), o);
    c.metrics.push_back(std::move(mc));
  }
  return c;
}

json to_json(const RunComparison& c) {
  json j;
  j["same_conditions"] = c.same_conditions;
  j["label"] = c.same_conditions ? "same conditions" : "comparison across different conditions";
  json conds = json::array();
  for (const auto& d : c.conditions) {
    conds.push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}, {"material", d.material}});
  }
  j["conditions_differing"] = std::move(conds);
  json ms = json::object();
  for (const auto& m : c.metrics) {
    json x = to_json(m.delta);
    x["unit"] = m.unit;
    ms[m.metric] = std::move(x);
  }
  j["metrics"] = std::move(ms);
  return j;
}

std::string format_comparison(const RunComparison& c, const std::string& a_name, const std::string& b_name) {
  std::string o;
  o += fmt::format("llmload compare: A = {}, B = {}\n", a_name, b_name);
  if (c.same_conditions) {
    o += "Conditions: the same";
  } else {
    o += "Conditions: DIFFERENT: this is a comparison across different conditions";
  }
  o += c.conditions.empty() ? "\n" : " (differing below)\n";
  for (const auto& d : c.conditions) {
    auto cut = [](const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; };
    o += fmt::format("  {} {}: A {}  B {}\n", d.material ? "*" : " ", d.key, cut(d.a), cut(d.b));
  }
  if (!c.conditions.empty()) o += "  (* = a condition that matters; the others differ between any two runs)\n";
  o += fmt::format("\n{:<22}{:>12}{:>12}{:>12}{:>9}  {:<12}{}\n", "metric", "A", "B", "B - A", "change", "significant",
                   "method");
  for (const auto& m : c.metrics) {
    const MetricDelta& d = m.delta;
    const std::string rel = std::isfinite(d.relative_delta) ? fmt::format("{:+.1f}%", 100 * d.relative_delta) : "-";
    const char* method = d.method == CompareMethod::kWelchT            ? "Welch t-test over trials"
                         : d.method == CompareMethod::kQuantileCiOverlap ? "95% interval overlap"
                                                                          : "no interval: not decided";
    o += fmt::format("{:<22}{:>12.3f}{:>12.3f}{:>+12.3f}{:>9}  {:<12}{}\n", m.metric, d.a, d.b, d.delta, rel,
                     d.method == CompareMethod::kNone ? "unknown" : (d.significant ? "YES" : "no"), method);
  }
  return o;
}

}  // namespace llmload::analysis
