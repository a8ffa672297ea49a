// The page's model: a run's headline numbers, verdicts and latency rows (RunSummary, summarize),
// validity reasons and early stops, the spread across trials, offered load.
#include "html_report/internal.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/stats.hpp"
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis::report_html {

// ---------------------------------------------------------------------------------------------
// Spread across trials: median with [min–max] and the 95% CI

/// Median (the mean of the two middle values for an even count), min and max of the finite values.
Spread spread_of_values(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  s.median = *median(v);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

/// result.json "trial_summary"[key] (analysis::to_json(TrialSummary)), when there.
std::optional<Spread> summary_spread(const json& result, const std::string& key) {
  const json* t = find_path(result, {"trial_summary"});
  if (t == nullptr || !t->is_object()) return std::nullopt;
  auto it = t->find(key);
  if (it == t->end() || !it->is_object()) return std::nullopt;
  const json& j = *it;
  Spread s;
  if (auto n = num_at(j, {"n"}); n && *n > 0) s.n = static_cast<std::size_t>(*n);
  s.median = nan_at(j, {"median"});
  s.min = nan_at(j, {"min"});
  s.max = nan_at(j, {"max"});
  s.mean = nan_at(j, {"mean"});
  s.cv = nan_at(j, {"cv"});
  s.ci_low = nan_at(j, {"ci", "low"});
  s.ci_high = nan_at(j, {"ci", "high"});
  s.ci_method = str_at(j, {"ci", "method"});
  s.ci_note = str_at(j, {"ci", "note"});
  if (const json* nz = find_path(j, {"noisy"}); nz != nullptr && nz->is_boolean()) s.noisy = nz->get<bool>();
  s.noisy_reason = str_at(j, {"noisy_reason"});
  if (s.n == 0) {
    if (const json* v = find_path(j, {"values"}); v != nullptr && v->is_array()) s.n = v->size();
  }
  return s;
}

/// "70.5 [69–72]" (the median and the min–max across trials), or the value alone.
std::string spread_text(const Spread& s) {
  if (!s.has_range() || !(s.max > s.min)) return format_number(s.median);
  return fmt::format("{} [{}–{}]", format_number(s.median), format_number(s.min), format_number(s.max));
}

/// spread_text for a table cell: the median, and the [min–max] small on a second line.
std::string spread_cell(const Spread& s) {
  if (!s.has_range() || !(s.max > s.min)) return format_number(s.median);
  return fmt::format("{}<br><span class=\"rng\">[{}–{}]</span>", format_number(s.median), format_number(s.min), format_number(s.max));
}

/// The CI as "[a, b]" ("–" without one).
std::string ci_text(const Spread& s) {
  if (!std::isfinite(s.ci_low) || !std::isfinite(s.ci_high)) return "–";
  return fmt::format("[{}, {}]", format_number(s.ci_low), format_number(s.ci_high));
}

// ---------------------------------------------------------------------------------------------
// Validity, early stop, cost

/// validity.reasons (the current shape), else validity.reason (older artifacts) when invalid.
std::vector<Reason> validity_reasons(const json& result) {
  std::vector<Reason> out;
  const json* v = find_path(result, {"validity"});
  if (v == nullptr || !v->is_object()) return out;
  if (const json* rs = find_path(*v, {"reasons"}); rs != nullptr && rs->is_array()) {
    for (const auto& r : *rs) {
      Reason x;
      if (r.is_string()) {
        x.message = r.get<std::string>();
      } else if (r.is_object()) {
        x.code = str_at(r, {"code"});
        x.message = str_at(r, {"message"});
        if (auto t = num_at(r, {"trial"})) x.trial = static_cast<int>(*t);
      }
      if (!x.code.empty() || !x.message.empty()) out.push_back(std::move(x));
    }
    return out;
  }
  const json* valid = find_path(*v, {"valid"});
  if (valid != nullptr && valid->is_boolean() && !valid->get<bool>()) {
    if (auto r = str_at(*v, {"reason"}); !r.empty()) out.push_back({"", r, std::nullopt});
  }
  return out;
}

/// A stopped_early value (null, false, a reason string, true, or {"reason": ...}) as its reason;
/// nullopt when not stopped early.
std::optional<std::string> stopped_reason(const json* v) {
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>() ? std::optional<std::string>("stopped early") : std::nullopt;
  if (v->is_string()) return v->get<std::string>().empty() ? std::string("stopped early") : v->get<std::string>();
  if (v->is_object()) {
    const std::string r = str_at(*v, {"reason"});
    return r.empty() ? std::string("stopped early") : r;
  }
  return std::nullopt;
}

static Load offered_of(const json& result) {
  if (auto v = num_at(result, {"load", "offered_rate"})) return {*v, "rate"};
  if (auto v = num_at(result, {"load", "offered_concurrency"})) return {*v, "concurrency"};
  if (auto v = num_at(result, {"conditions", "scenario", "request_rate"})) return {*v, "rate"};
  if (auto v = num_at(result, {"conditions", "scenario", "concurrency"})) return {*v, "concurrency"};
  return {};
}

/// A point's SLO verdict: its result.json's, else its sweep.json entry's ("" when none).
std::string point_verdict(const json& result, const json& entry) {
  std::string v = str_at(result, {"slo", "verdict"});
  if (v.empty()) v = str_at(entry, {"verdict"});
  if (v == "PASS" || v == "FAIL" || v == "INCONCLUSIVE") return v;
  return {};
}

/// A trials artifact's offered load: its own result.json, else its first trial's.
Load offered_of_artifact(const RunArtifact& a) {
  Load l = offered_of(a.result);
  if (!std::isfinite(l.value) && !a.trials.empty()) l = offered_of(a.trials.front().result);
  return l;
}

std::string load_unit(const std::string& kind) {
  if (kind == "rate") return "req/s";
  if (kind == "concurrency") return "concurrent";
  return "";
}

std::string load_text(double v, const std::string& kind) {
  if (!std::isfinite(v)) return "–";
  std::string u = load_unit(kind);
  return u.empty() ? format_number(v) : format_number(v) + " " + u;
}

// ---------------------------------------------------------------------------------------------
// Summaries of one run

static LatRow lat_from_json(const json& s, const MetricDef& d) {
  LatRow r;
  r.key = d.key;
  r.label = d.label;
  r.count = nan_at(s, {"count"});
  r.mean = nan_at(s, {"mean_ms"});
  r.p50 = nan_at(s, {"p50_ms"});
  r.p90 = nan_at(s, {"p90_ms"});
  r.p95 = nan_at(s, {"p95_ms"});
  r.p99 = nan_at(s, {"p99_ms"});
  r.p999 = nan_at(s, {"p99.9_ms"});
  r.max = nan_at(s, {"max_ms"});
  r.low99 = flag(s, "p99_low_confidence", false);
  r.low999 = flag(s, "p99.9_low_confidence", false);
  if (const json* ci = find_path(s, {"p99_ci95_ms"}); ci != nullptr && ci->is_array() && ci->size() == 2 &&
                                                      (*ci)[0].is_number() && (*ci)[1].is_number()) {
    r.ci99 = std::make_pair((*ci)[0].get<double>(), (*ci)[1].get<double>());
  }
  return r;
}

static LatRow lat_from_hist(const HdrHistogram& h, const MetricDef& d) {
  LatRow r;
  r.key = d.key;
  r.label = d.label;
  r.count = static_cast<double>(h.total_count());
  auto at = [&](double p) { return static_cast<double>(h.value_at_percentile(p)) / 1e3; };
  r.mean = h.mean() / 1e3;
  r.p50 = at(50);
  r.p90 = at(90);
  r.p95 = at(95);
  r.p99 = at(99);
  r.p999 = at(99.9);
  r.max = static_cast<double>(h.max()) / 1e3;
  r.low99 = h.total_count() < 1000;
  r.low999 = h.total_count() < 10000;
  return r;
}

/// The vLLM-style headline keys of a trials artifact (medians across trials): "<stat>_<name>_ms".
constexpr std::pair<const char*, const char*> kVllmNames[] = {
    {"ttft", "ttft"}, {"ttfo", "ttfo"}, {"tpot", "tpot"}, {"itl", "itl"}, {"e2e", "e2el"}};

const char* vllm_name(std::string_view metric) {
  for (const auto& [k, v] : kVllmNames) {
    if (metric == k) return v;
  }
  return nullptr;
}

/// A latency row from the vLLM-style keys (a trials artifact: each the median across trials).
static std::optional<LatRow> lat_from_vllm_keys(const json& r, const MetricDef& d) {
  const char* v = vllm_name(d.key);
  if (v == nullptr || std::string_view(d.section) != "latency") return std::nullopt;
  LatRow row;
  row.key = d.key;
  row.label = d.label;
  row.mean = nan_at(r, {fmt::format("mean_{}_ms", v)});
  row.p50 = nan_at(r, {fmt::format("median_{}_ms", v)});
  row.p90 = nan_at(r, {fmt::format("p90_{}_ms", v)});
  row.p95 = nan_at(r, {fmt::format("p95_{}_ms", v)});
  row.p99 = nan_at(r, {fmt::format("p99_{}_ms", v)});
  if (!std::isfinite(row.mean) && !std::isfinite(row.p50) && !std::isfinite(row.p99)) return std::nullopt;
  return row;
}

/// The spread of one headline number across a trials artifact's trials: result.json
/// "trial_summary"[key], else the values in result.json "trials"[][key], else `from_trial` of each
/// trial read from its directory. n = 0 when none of these has it.
Spread trial_spread(const RunArtifact& a, const std::string& key, double (*from_trial)(const json& trial_result)) {
  if (auto s = summary_spread(a.result, key); s && std::isfinite(s->median)) return *s;
  std::vector<double> v;
  if (const json* tr = find_path(a.result, {"trials"}); tr != nullptr && tr->is_array()) {
    for (const auto& t : *tr) {
      if (auto x = num_at(t, {key})) v.push_back(*x);
    }
  }
  if (v.empty() && from_trial != nullptr) {
    for (const auto& t : a.trials) v.push_back(from_trial(t.result));
  }
  return spread_of_values(std::move(v));
}

double trial_token_goodput(const json& r) { return nan_at(r, {"slo", "token_goodput"}); }
double trial_attainment(const json& r) { return nan_at(r, {"slo", "attainment"}); }
double trial_request_goodput(const json& r) {
  if (auto v = num_at(r, {"slo", "request_goodput"})) return *v;
  return nan_at(r, {"request_goodput"});
}

static void errors_from(const json& r, std::map<std::string, std::int64_t>& by_class) {
  if (const json* by = find_path(r, {"errors", "by_class"}); by != nullptr && by->is_object()) {
    for (const auto& [cls, e] : by->items()) {
      std::int64_t n = 0;
      if (e.is_number()) n = static_cast<std::int64_t>(e.get<double>());
      if (auto c = num_at(e, {"count"})) n = static_cast<std::int64_t>(*c);
      by_class[cls] += n;
    }
  }
}

// The validity verdict and its reasons, as result.json's `validity` gives them.
static void summarize_validity(RunSummary& s, const json& r) {
  if (const json* v = find_path(r, {"validity"}); v != nullptr && v->is_object()) {
    const json* valid = find_path(*v, {"valid"});
    const bool invalid = valid != nullptr && valid->is_boolean() && !valid->get<bool>();
    const bool checked =
        !(find_path(*v, {"checked"}) != nullptr && (*v)["checked"].is_boolean() && !(*v)["checked"].get<bool>());
    const bool current_shape = v->contains("verdict") || v->contains("reasons");
    if (invalid) {
      s.validity = "INVALID";
    } else if (!checked && !current_shape) {
      s.validity = "not checked";
    } else {
      s.validity = "valid";
      s.lag_not_checked = !checked;
    }
    s.reasons = validity_reasons(r);
    if (invalid) {
      s.validity_reason = str_at(*v, {"reason"});
      if (s.validity_reason.empty() && !s.reasons.empty()) s.validity_reason = s.reasons.front().message;
    }
  }
}

// Cost per 1M output tokens: result.json "cost", else from the conditions' price and devices.
static void summarize_cost(RunSummary& s, const json& r) {
  if (const json* c = find_path(r, {"cost"}); c != nullptr && c->is_object()) {
    s.cost = nan_at(*c, {"per_million_output_tokens"});
    s.price_per_hour = nan_at(*c, {"price_per_hour"});
    s.devices = nan_at(*c, {"devices"});
  } else if (auto price = num_at(r, {"conditions", "price_per_hour"})) {
    const double devices = num_at(r, {"conditions", "devices"}).value_or(1.0);
    if (*price >= 0 && devices >= 0 && std::isfinite(s.output_throughput) && s.output_throughput > 0) {
      s.cost = cost_per_million_tokens(*price, devices, s.output_throughput);
      s.price_per_hour = *price;
      s.devices = devices;
      s.cost_computed = true;
    }
  }
}

// Counts from requests.jsonl alone (no result.json: an interrupted or unfinished run).
static void summarize_records(RunSummary& s, const RunArtifact& a) {
  std::int64_t ok = 0, bad = 0, warm = 0;
  std::map<std::string, std::int64_t> by_class;
  for (const auto& rec : a.records()) {
    if (rec.warmup) {
      ++warm;
    } else if (rec.ok()) {
      ++ok;
    } else {
      ++bad;
      ++by_class[std::string(to_string(rec.error))];
    }
  }
  s.completed = static_cast<double>(ok);
  s.failed = static_cast<double>(bad);
  s.warmup = static_cast<double>(warm);
  s.issued = static_cast<double>(a.records().size());
  for (const auto& [cls, n] : by_class) s.errors.emplace_back(cls, n);
}

// ---------------------------------------------------------------------------------------------
// Correctness: result.json "accuracy", "consistency", "scorecard"

/// A rate and its interval: obj[rate_key] and obj[ci_key] ([lo, hi]).
static RateCI rate_ci_at(const json& obj, const char* rate_key, const char* ci_key, double n) {
  RateCI r;
  r.rate = nan_at(obj, {rate_key});
  if (const json* ci = find_path(obj, {ci_key}); ci != nullptr && ci->is_array() && ci->size() == 2 && (*ci)[0].is_number() &&
                                                (*ci)[1].is_number()) {
    r.lo = (*ci)[0].get<double>();
    r.hi = (*ci)[1].get<double>();
  }
  r.n = n;
  return r;
}

static GradedCounts graded_counts(const json& j, std::string name) {
  GradedCounts g;
  g.name = std::move(name);
  g.graded = nan_at(j, {"graded"});
  g.correct = nan_at(j, {"correct"});
  g.incorrect = nan_at(j, {"incorrect"});
  g.unparsed = nan_at(j, {"unparsed"});
  g.unparsed_rate = nan_at(j, {"unparsed_rate"});
  g.accuracy = rate_ci_at(j, "accuracy", "accuracy_ci95", g.graded);
  return g;
}

static std::vector<GradedCounts> graded_groups(const json& acc, const char* key) {
  std::vector<GradedCounts> out;
  if (const json* by = find_path(acc, {key}); by != nullptr && by->is_object()) {
    for (const auto& [name, g] : by->items()) {
      if (g.is_object()) out.push_back(graded_counts(g, name));
    }
  }
  return out;
}

static void summarize_accuracy(AccuracySummary& a, const json& r) {
  const json* acc = find_path(r, {"accuracy"});
  if (acc != nullptr && acc->is_object()) {
    a.present = true;
    a.all = graded_counts(*acc, "");
    a.confidence = nan_at(*acc, {"confidence"});
    a.failed_requests = nan_at(*acc, {"failed_requests"});
    a.by_grader = graded_groups(*acc, "by_grader");
    a.by_subset = graded_groups(*acc, "by_subset");
    a.correct_goodput_requests = nan_at(*acc, {"correct_goodput", "requests"});
    a.correct_goodput_rate = nan_at(*acc, {"correct_goodput", "rate_per_s"});
    a.correct_goodput_meaning = str_at(*acc, {"correct_goodput", "meaning"});
    a.from = str_at(*acc, {"from"});
  }
  // The accuracy SLO: accuracy.slo, else slo.accuracy (there also when nothing was graded).
  const json* slo = acc != nullptr && acc->is_object() ? find_path(*acc, {"slo"}) : nullptr;
  if (slo == nullptr || !slo->is_object()) slo = find_path(r, {"slo", "accuracy"});
  if (slo != nullptr && slo->is_object()) {
    a.min_accuracy = nan_at(*slo, {"min_accuracy"});
    a.slo_verdict = str_at(*slo, {"verdict"});
    a.slo_method = str_at(*slo, {"method"});
    a.slo_reason = str_at(*slo, {"reason"});
  }
}

static void summarize_consistency(ConsistencySummary& c, const json& r) {
  const json* con = find_path(r, {"consistency"});
  if (con == nullptr || !con->is_object()) return;
  c.present = true;
  c.method = str_at(*con, {"method"});
  c.identical = nan_at(*con, {"identical"});
  c.exact_match = rate_ci_at(*con, "exact_match_rate", "exact_match_ci95", nan_at(*con, {"compared"}));
  c.confidence = nan_at(*con, {"confidence"});
  c.tested_requests = nan_at(*con, {"tested_requests"});
  c.from = str_at(*con, {"from"});
  c.reference_kind = str_at(*con, {"reference", "kind"});
  c.reference_dir = str_at(*con, {"reference", "dir"});
  c.reference_load = str_at(*con, {"reference", "load"});
  if (const json* fd = find_path(*con, {"first_divergence"}); fd != nullptr && fd->is_object()) {
    c.has_divergence = true;
    c.div_count = nan_at(*fd, {"count"});
    c.div_min = nan_at(*fd, {"min"});
    c.div_p50 = nan_at(*fd, {"p50"});
    c.div_p90 = nan_at(*fd, {"p90"});
    c.div_max = nan_at(*fd, {"max"});
    c.div_mean = nan_at(*fd, {"mean"});
    if (const json* h = find_path(*fd, {"histogram"}); h != nullptr && h->is_array()) {
      for (const auto& b : *h) {
        if (b.is_object()) c.histogram.push_back({nan_at(b, {"from"}), nan_at(b, {"to"}), nan_at(b, {"count"})});
      }
    }
  }
  if (const json* dv = find_path(*con, {"diverged"}); dv != nullptr && dv->is_array()) {
    for (const auto& d : *dv) {
      if (!d.is_object()) continue;
      c.diverged.push_back({nan_at(d, {"item"}), nan_at(d, {"position"}), str_at(d, {"reference_excerpt"}),
                            str_at(d, {"output_excerpt"})});
    }
  }
}

static void summarize_scorecard(Scorecard& sc, const json& r) {
  const json* j = find_path(r, {"scorecard"});
  if (j == nullptr || !j->is_object()) return;
  sc.present = true;
  if (const json* c = find_path(*j, {"correctness"}); c != nullptr && c->is_object()) {
    sc.accuracy = rate_ci_at(*c, "accuracy", "accuracy_ci95", kNaN);
    sc.exact_match = rate_ci_at(*c, "exact_match_rate", "exact_match_ci95", kNaN);
    sc.unparsed_rate = nan_at(*c, {"unparsed_rate"});
  }
  sc.request_goodput = nan_at(*j, {"performance", "request_goodput"});
  sc.correct_goodput = nan_at(*j, {"performance", "correct_goodput"});
  sc.request_throughput = nan_at(*j, {"performance", "request_throughput"});
  sc.p99_ttft_ms = nan_at(*j, {"performance", "p99_ttft_ms"});
  sc.p99_tpot_ms = nan_at(*j, {"performance", "p99_tpot_ms"});
  sc.p99_e2el_ms = nan_at(*j, {"performance", "p99_e2el_ms"});
  sc.slo_verdict = str_at(*j, {"performance", "slo_verdict"});
  sc.cost_per_million = nan_at(*j, {"cost", "per_million_output_tokens"});
  sc.energy_per_token_j = nan_at(*j, {"cost", "energy_per_output_token_j"});
  sc.error_rate = nan_at(*j, {"reliability", "error_rate"});
  if (const json* by = find_path(*j, {"reliability", "errors_by_class"}); by != nullptr && by->is_object()) {
    sc.errors_by_class.emplace();
    for (const auto& [cls, n] : by->items()) sc.errors_by_class->emplace_back(cls, n.is_number() ? n.get<double>() : kNaN);
  }
  if (const json* v = find_path(*j, {"reliability", "valid"}); v != nullptr && v->is_boolean()) sc.valid = v->get<bool>();
}

/// A sweep.json point's "accuracy" / "consistency": {"rate", "ci95": [lo, hi], "n"}.
static std::optional<RateCI> entry_rate(const json& entry, const char* key) {
  const json* e = find_path(entry, {key});
  if (e == nullptr || !e->is_object() || !num_at(*e, {"rate"})) return std::nullopt;
  return rate_ci_at(*e, "rate", "ci95", nan_at(*e, {"n"}));
}

/// What the point's own result.json does not say about its correctness, from its sweep.json entry.
static void correctness_from_entry(RunSummary& s, const json& entry) {
  if (!s.accuracy.present) {
    if (auto r = entry_rate(entry, "accuracy")) {
      s.accuracy.present = true;
      s.accuracy.all.accuracy = *r;
      s.accuracy.all.graded = r->n;
      s.accuracy.from = "sweep.json";
    }
  }
  if (!s.consistency.present) {
    if (auto r = entry_rate(entry, "consistency")) {
      s.consistency.present = true;
      s.consistency.exact_match = *r;
      s.consistency.from = "sweep.json";
    }
  }
}

static RunSummary summarize(const RunArtifact& a, double offered, const std::string& kind);

// A trials artifact: each trial's summary, the trial count, the goodputs and verdicts across
// trials, the noisy metrics and the trials that stopped early.
static void summarize_trial_runs(RunSummary& s, const RunArtifact& a, double offered, const std::string& kind) {
  const json& r = a.result;
  s.trials = true;
  for (const auto& t : a.trials) s.trial_sums.push_back(summarize(t, offered, kind));
  const json* tr = find_path(r, {"trials"});
  s.n_trials = tr != nullptr && tr->is_array() ? tr->size() : 0;
  if (s.n_trials == 0) s.n_trials = static_cast<std::size_t>(num_at(r, {"conditions", "trials", "n"}).value_or(0.0));
  if (s.n_trials == 0) s.n_trials = a.trials.size();
  if (!std::isfinite(s.request_goodput)) s.request_goodput = nan_at(r, {"request_goodput"});
  if (!std::isfinite(s.request_goodput))
    s.request_goodput = trial_spread(a, "request_goodput", trial_request_goodput).median;
  if (!std::isfinite(s.token_goodput)) s.token_goodput = trial_spread(a, "token_goodput", trial_token_goodput).median;
  if (!std::isfinite(s.attainment)) s.attainment = trial_spread(a, "attainment", trial_attainment).median;
  if (const json* nz = find_path(r, {"noisy"}); nz != nullptr && nz->is_boolean()) s.noisy = nz->get<bool>();
  if (const json* nm = find_path(r, {"noisy_metrics"}); nm != nullptr && nm->is_array()) {
    for (const auto& m : *nm) {
      if (m.is_string()) s.noisy_metrics.push_back(m.get<std::string>());
    }
  }
  if (!s.noisy_metrics.empty()) s.noisy = true;
  if (const json* tv = find_path(r, {"slo", "trial_verdicts"}); tv != nullptr && tv->is_array()) {
    for (const auto& v : *tv) s.trial_verdicts.push_back(v.is_string() ? v.get<std::string>() : std::string());
  } else if (tr != nullptr && tr->is_array()) {
    for (const auto& t : *tr) s.trial_verdicts.push_back(str_at(t, {"slo_verdict"}));
  }
  if (s.slo_view.empty() && !s.trial_sums.empty()) s.slo_view = s.trial_sums.front().slo_view;
  if (s.slo_spec.empty() && !s.trial_sums.empty()) s.slo_spec = s.trial_sums.front().slo_spec;
  for (const auto& t : s.trial_sums) s.interrupted = s.interrupted || t.interrupted;
  // Trials that stopped early (over-saturated sweep points).
  if (!s.stopped_early && tr != nullptr && tr->is_array()) {
    std::string text;
    for (std::size_t i = 0; i < tr->size(); ++i) {
      if (auto why = stopped_reason(find_path((*tr)[i], {"stopped_early"}))) {
        const int num = static_cast<int>(num_at((*tr)[i], {"trial"}).value_or(static_cast<double>(i + 1)));
        text += fmt::format("{}trial {}: {}", text.empty() ? "" : "; ", num, *why);
      }
    }
    if (!text.empty()) s.stopped_early = text;
  }
}

// The latency rows: result.json's distributions, else the artifact's histograms, else (trials)
// vLLM's headline keys.
bool shows_ttfo(const RunArtifact& a) {
  if (auto n = num_at(a.result, {"requests", "reasoning_first"})) return *n > 0;
  if (a.is_trials()) return std::any_of(a.trials.begin(), a.trials.end(), [](const RunArtifact& t) { return shows_ttfo(t); });
  return std::any_of(a.records().begin(), a.records().end(),
                     [](const RequestRecord& r) { return !r.warmup && r.reasoning_first(); });
}

static void summarize_latency_rows(RunSummary& s, const RunArtifact& a) {
  const json& r = a.result;
  const bool ttfo = shows_ttfo(a);
  for (const MetricDef& d : kMetricDefs) {
    if (!ttfo && std::string_view(d.key).starts_with("ttfo")) continue;
    const json* j = nullptr;
    if (r.is_object()) j = d.json_key != nullptr ? find_path(r, {d.section, d.json_key}) : find_path(r, {d.section});
    if (j != nullptr && j->is_object() && nan_at(*j, {"count"}) > 0) {
      s.latency.push_back(lat_from_json(*j, d));
    } else if (auto it = a.histograms.find(d.key); it != a.histograms.end() && it->second.total_count() > 0) {
      s.latency.push_back(lat_from_hist(it->second, d));
    } else if (a.is_trials()) {
      if (auto row = lat_from_vllm_keys(r, d)) s.latency.push_back(*row);
    }
  }
}

static RunSummary summarize(const RunArtifact& a, double offered, const std::string& kind) {
  RunSummary s;
  s.name = a.name;
  s.offered = offered;
  s.load_kind = kind;
  const json& r = a.result;
  if (r.is_object()) {
    s.request_throughput = nan_at(r, {"request_throughput"});
    s.output_throughput = nan_at(r, {"output_throughput"});
    s.total_token_throughput = nan_at(r, {"total_token_throughput"});
    s.request_goodput = nan_at(r, {"slo", "request_goodput"});
    s.token_goodput = nan_at(r, {"slo", "token_goodput"});
    s.attainment = nan_at(r, {"slo", "attainment"});
    s.achieved_send_rate = nan_at(r, {"load", "achieved_send_rate"});
    s.window_s = nan_at(r, {"window", "length_s"});
    s.window_start = nan_at(r, {"window", "start_s"});
    s.window_end = nan_at(r, {"window", "end_s"});
    s.completed = nan_at(r, {"completed"});
    s.failed = nan_at(r, {"failed"});
    s.warmup = nan_at(r, {"requests", "warmup"});
    s.issued = nan_at(r, {"requests", "issued"});
    std::map<std::string, std::int64_t> by_class;
    errors_from(r, by_class);
    if (by_class.empty() && a.is_trials()) {
      for (const auto& t : a.trials) errors_from(t.result, by_class);
    }
    for (const auto& [cls, n] : by_class) s.errors.emplace_back(cls, n);
    summarize_validity(s, r);
    s.slo_verdict = str_at(r, {"slo", "verdict"});
    s.slo_spec = str_at(r, {"slo", "spec"});
    s.slo_view = str_at(r, {"slo", "view"});
    s.slo_latency_verdict = str_at(r, {"slo", "latency_verdict"});
    summarize_accuracy(s.accuracy, r);
    summarize_consistency(s.consistency, r);
    summarize_scorecard(s.scorecard, r);
    s.interrupted = flag(r, "interrupted", false);
    s.stopped_early = stopped_reason(find_path(r, {"stopped_early"}));
    summarize_cost(s, r);
  } else if (a.has_records) {
    summarize_records(s, a);
  }
  if (a.is_trials()) {
    summarize_trial_runs(s, a, offered, kind);
  }
  summarize_latency_rows(s, a);
  return s;
}

std::vector<RunSummary> summaries(const ReportInput& in) {
  std::vector<RunSummary> sums;
  for (std::size_t i = 0; i < in.runs.size(); ++i) {
    RunSummary s = summarize(in.runs[i], in.offered[i], in.load_kind);
    // sweep.json's own record of the point, for what the point's artifact does not say.
    const json& e = i < in.point_entries.size() ? in.point_entries[i] : json();
    if (s.slo_verdict.empty()) s.slo_verdict = point_verdict(json(), e);
    if (!s.stopped_early) s.stopped_early = stopped_reason(find_path(e, {"stopped_early"}));
    correctness_from_entry(s, e);
    sums.push_back(std::move(s));
  }
  return sums;
}

}  // namespace llmload::analysis::report_html
