#include "llmload/analysis/html_report.hpp"

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
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double secs(Nanos d) { return static_cast<double>(d.count()) / 1e9; }
double ms_of(Nanos d) { return static_cast<double>(d.count()) / 1e6; }

// ---------------------------------------------------------------------------------------------
// JSON access

const json* find_path(const json& j, std::initializer_list<std::string_view> path) {
  const json* cur = &j;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(std::string(key));
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::optional<double> num_at(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = find_path(j, path);
  if (p != nullptr && p->is_number()) return p->get<double>();
  return std::nullopt;
}

double nan_at(const json& j, std::initializer_list<std::string_view> path) { return num_at(j, path).value_or(kNaN); }

/// A boolean member; `def` when absent or not a boolean (a hand-edited artifact never throws).
bool flag(const json& j, const char* key, bool def) {
  if (!j.is_object()) return def;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}

std::string str_at(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = find_path(j, path);
  if (p != nullptr && p->is_string()) return p->get<std::string>();
  return {};
}

/// A scalar JSON value as text ("" for null, objects and arrays).
std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return {};
}

// ---------------------------------------------------------------------------------------------
// Text

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

/// Markdown table cell: pipes escaped, line breaks removed.
std::string md_cell(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '|') {
      o += "\\|";
    } else if (c == '\n' || c == '\r') {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o;
}

/// Exact (round-trip) number for the CSV; empty when unknown.
std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); }

std::string shell_join(const json& argv) {
  if (!argv.is_array()) return scalar_text(argv);
  std::string o;
  for (const auto& a : argv) {
    std::string s = scalar_text(a);
    if (!o.empty()) o += ' ';
    if (s.empty() || s.find_first_of(" \t\"'$`\\*?;&|<>(){}") != std::string::npos) {
      std::string q = "'";
      for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      o += q + "'";
    } else {
      o += s;
    }
  }
  return o;
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "–";
  return fmt::format("{:.1f}%", fraction * 100);
}

/// A signed percentage ("+3.2%", "-12.0%").
std::string signed_percent(double fraction) {
  if (!std::isfinite(fraction)) return "–";
  return fmt::format("{:+.1f}%", fraction * 100);
}

// ---------------------------------------------------------------------------------------------
// Spread across trials: median with [min–max] and the 95% CI

struct Spread {
  std::size_t n = 0;
  double median = kNaN, min = kNaN, max = kNaN, mean = kNaN, cv = kNaN;
  double ci_low = kNaN, ci_high = kNaN;
  std::string ci_method, ci_note;
  bool noisy = false;
  std::string noisy_reason;
  bool has_range() const { return n > 1 && std::isfinite(min) && std::isfinite(max); }
};

/// Median (the mean of the two middle values for an even count), min and max of the finite values.
Spread spread_of_values(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(n);
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

struct Reason {
  std::string code;     // "schedule_lag", "error_rate", ... ("" in the old shape)
  std::string message;
  std::optional<int> trial;
};

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

// ---------------------------------------------------------------------------------------------
// Reading

std::optional<std::string> read_if_exists(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  if (fs::is_directory(p, ec)) throw ReportError(fmt::format("{}: is a directory, expected a file", p.string()));
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ReportError(fmt::format("{}: cannot be read ({})", p.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ReportError(fmt::format("{}: read error", p.string()));
  return ss.str();
}

json parse_json_text(const fs::path& p, const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ReportError(fmt::format("{}: is empty (the run did not finish writing it?)", p.string()));
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string::npos) {
      what = what.substr(pos + 2);
    }
    throw ReportError(fmt::format("{}: not valid JSON: {}", p.string(), what));
  }
}

std::string name_of(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  std::string n = p.filename().string();
  if (n.empty() || n == ".") n = p.parent_path().filename().string();
  if (n.empty() || n == "." || n == "..") n = fs::absolute(dir).lexically_normal().filename().string();
  if (n.empty()) n = dir.string();
  return n;
}

bool holds_artifact(const fs::path& d) {
  std::error_code ec;
  return fs::exists(d / "result.json", ec) || fs::exists(d / "requests.jsonl", ec) || fs::exists(d / "latency.hlog", ec);
}

void histograms_from_records(RunArtifact& a) {
  auto fill = [&](bool only_window) {
    std::size_t n = 0;
    auto rec = [&](const char* tag, const std::optional<Nanos>& v) {
      if (!v || v->count() < 0) return;
      auto it = a.histograms.try_emplace(tag).first;
      it->second.record(std::llround(static_cast<double>(v->count()) / 1e3));
    };
    for (const auto& r : a.records) {
      if (r.warmup || !r.ok() || (only_window && !r.in_window)) continue;
      ++n;
      rec("ttft", r.ttft());
      rec("tpot", r.tpot());
      rec("e2e", r.e2e());
      rec("ttft_rt", r.ttft_rt());
      rec("e2e_rt", r.e2e_rt());
      rec("schedule_lag", r.schedule_lag());
    }
    return n;
  };
  if (fill(true) == 0 && fill(false) > 0) {
    a.notes.push_back("no request is marked in the measurement window: the distributions use every successful "
                      "request after warmup");
  }
}

struct Load {
  double value = kNaN;
  std::string kind;
};

Load offered_of(const json& result) {
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

struct LatRow {
  std::string key;
  std::string label;
  double count = kNaN, mean = kNaN, p50 = kNaN, p90 = kNaN, p95 = kNaN, p99 = kNaN, p999 = kNaN, max = kNaN;
  bool low99 = false, low999 = false;
  std::optional<std::pair<double, double>> ci99;
};

struct MetricDef {
  const char* key;
  const char* label;
  const char* section;
  const char* json_key;  // nullptr: the section itself
};
constexpr MetricDef kMetricDefs[] = {
    {"ttft", "TTFT", "latency", "ttft"},
    {"tpot", "TPOT", "latency", "tpot"},
    {"itl", "ITL", "latency", "itl"},
    {"e2e", "E2E", "latency", "e2e"},
    {"ttft_rt", "TTFT from t_intended", "response_time", "ttft"},
    {"e2e_rt", "E2E from t_intended", "response_time", "e2e"},
    {"schedule_lag", "schedule lag", "schedule_lag", nullptr},
};

LatRow lat_from_json(const json& s, const MetricDef& d) {
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

LatRow lat_from_hist(const HdrHistogram& h, const MetricDef& d) {
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
constexpr std::pair<const char*, const char*> kVllmNames[] = {{"ttft", "ttft"}, {"tpot", "tpot"}, {"itl", "itl"}, {"e2e", "e2el"}};

const char* vllm_name(std::string_view metric) {
  for (const auto& [k, v] : kVllmNames) {
    if (metric == k) return v;
  }
  return nullptr;
}

/// A latency row from the vLLM-style keys (a trials artifact: each the median across trials).
std::optional<LatRow> lat_from_vllm_keys(const json& r, const MetricDef& d) {
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
Spread trial_spread(const RunArtifact& a, const std::string& key, double (*from_trial)(const json& trial_result) = nullptr) {
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

struct RunSummary {
  std::string name;
  double offered = kNaN;
  std::string load_kind;
  double request_throughput = kNaN, output_throughput = kNaN, total_token_throughput = kNaN;
  double request_goodput = kNaN, token_goodput = kNaN, attainment = kNaN, achieved_send_rate = kNaN;
  double window_s = kNaN, window_start = kNaN, window_end = kNaN;
  double completed = kNaN, failed = kNaN, warmup = kNaN, issued = kNaN;
  std::vector<std::pair<std::string, std::int64_t>> errors;  // class, count
  std::string validity;  // "valid", "INVALID", "not checked" or ""
  std::string validity_reason;
  std::vector<Reason> reasons;  // every reason of an INVALID verdict
  bool lag_not_checked = false;  // the current validity shape, closed loop: schedule lag not checked
  std::string slo_verdict, slo_spec, slo_view;
  bool interrupted = false;
  std::optional<std::string> stopped_early;  // the reason
  double cost = kNaN, price_per_hour = kNaN, devices = kNaN;  // $ per 1M output tokens
  bool cost_computed = false;  // by the report, from conditions (no "cost" in result.json)
  // A trials artifact: the numbers above are medians across trials (completed, failed: sums).
  bool trials = false;
  std::size_t n_trials = 0;
  bool noisy = false;
  std::vector<std::string> noisy_metrics;
  std::vector<std::string> trial_verdicts;
  std::vector<RunSummary> trial_sums;  // per trial read from its directory (RunArtifact::trials)
  std::vector<LatRow> latency;
  const LatRow* row(std::string_view key) const {
    for (const auto& r : latency) {
      if (r.key == key) return &r;
    }
    return nullptr;
  }
  double p(std::string_view key, double LatRow::*field) const {
    const LatRow* r = row(key);
    return r != nullptr ? r->*field : kNaN;
  }
  std::string errors_text() const {
    std::string o;
    for (const auto& [cls, n] : errors) o += fmt::format("{}{}:{}", o.empty() ? "" : ";", cls, n);
    return o;
  }
  std::string reasons_text() const {
    std::string o;
    for (const auto& r : reasons) {
      std::string c = r.code.empty() ? r.message : r.code;
      if (r.trial) c = fmt::format("{}@trial-{}", c, *r.trial);
      o += (o.empty() ? "" : ";") + c;
    }
    return o;
  }
};

void errors_from(const json& r, std::map<std::string, std::int64_t>& by_class) {
  if (const json* by = find_path(r, {"errors", "by_class"}); by != nullptr && by->is_object()) {
    for (const auto& [cls, e] : by->items()) {
      std::int64_t n = 0;
      if (e.is_number()) n = static_cast<std::int64_t>(e.get<double>());
      if (auto c = num_at(e, {"count"})) n = static_cast<std::int64_t>(*c);
      by_class[cls] += n;
    }
  }
}

RunSummary summarize(const RunArtifact& a, double offered, const std::string& kind) {
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
    if (const json* v = find_path(r, {"validity"}); v != nullptr && v->is_object()) {
      const json* valid = find_path(*v, {"valid"});
      const bool invalid = valid != nullptr && valid->is_boolean() && !valid->get<bool>();
      const bool checked = !(find_path(*v, {"checked"}) != nullptr && (*v)["checked"].is_boolean() && !(*v)["checked"].get<bool>());
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
    s.slo_verdict = str_at(r, {"slo", "verdict"});
    s.slo_spec = str_at(r, {"slo", "spec"});
    s.slo_view = str_at(r, {"slo", "view"});
    s.interrupted = flag(r, "interrupted", false);
    s.stopped_early = stopped_reason(find_path(r, {"stopped_early"}));
    // Cost per 1M output tokens: result.json "cost", else from the conditions' price and devices.
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
  } else if (a.has_records) {
    std::int64_t ok = 0, bad = 0, warm = 0;
    std::map<std::string, std::int64_t> by_class;
    for (const auto& rec : a.records) {
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
    s.issued = static_cast<double>(a.records.size());
    for (const auto& [cls, n] : by_class) s.errors.emplace_back(cls, n);
  }
  if (a.is_trials()) {
    s.trials = true;
    for (const auto& t : a.trials) s.trial_sums.push_back(summarize(t, offered, kind));
    const json* tr = find_path(r, {"trials"});
    s.n_trials = tr != nullptr && tr->is_array() ? tr->size() : 0;
    if (s.n_trials == 0) s.n_trials = static_cast<std::size_t>(num_at(r, {"conditions", "trials", "n"}).value_or(0.0));
    if (s.n_trials == 0) s.n_trials = a.trials.size();
    if (!std::isfinite(s.request_goodput)) s.request_goodput = nan_at(r, {"request_goodput"});
    if (!std::isfinite(s.request_goodput)) s.request_goodput = trial_spread(a, "request_goodput", trial_request_goodput).median;
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
  for (const MetricDef& d : kMetricDefs) {
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
  return s;
}

// ---------------------------------------------------------------------------------------------
// SVG charts

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::string color = "#0072B2";
  bool dashed = false;
  bool markers = false;
  bool line = true;
  bool cross = false;             // markers drawn as an "×" (flagged points) instead of a dot
  std::vector<std::string> tips;  // per point, for markers
  std::vector<double> y_lo, y_hi;  // per point: a vertical whisker (min–max across trials); NaN: none
  std::vector<double> x_lo, x_hi;  // per point: a horizontal whisker
};

Series make_series(std::string name, const char* col, bool dashed, bool markers) {
  Series s;
  s.name = std::move(name);
  s.color = col;
  s.dashed = dashed;
  s.markers = markers;
  return s;
}

struct Band {
  double x0, x1;
  std::string label;
  bool label_bottom = false;
};

struct RefLine {
  double v;
  std::string label;
  std::string color = "#444";
};

struct Callout {
  double x, y;
  std::string label;
};

struct Chart {
  std::string key;  // data-chart
  std::string title;
  std::string x_label, y_label;
  std::string note;
  bool percentile_x = false;
  bool pad_x = false;  // add 6% on each side (scatter-like charts)
  bool integer_x = false;  // x ticks on whole numbers only (trial numbers)
  std::vector<Series> series;
  std::vector<Band> bands;
  std::vector<RefLine> hlines, vlines;
  std::vector<Callout> callouts;
  std::optional<double> y_max;
  std::optional<double> x_min, x_max;
};

namespace color {
constexpr const char* kBlue = "#0072B2";
constexpr const char* kVermillion = "#D55E00";
constexpr const char* kGreen = "#009E73";
constexpr const char* kPurple = "#CC79A7";
constexpr const char* kGray = "#7a7a7a";
constexpr const char* kRed = "#c0392b";
}  // namespace color

/// i-th of n colors along a viridis-like ramp (dark purple to green), readable on white.
std::string ramp_color(std::size_t i, std::size_t n) {
  static constexpr double stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {53, 183, 121}, {144, 200, 50}};
  constexpr std::size_t k = std::size(stops);
  const double t = n <= 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(n - 1);
  const double pos = t * static_cast<double>(k - 1);
  const std::size_t lo = std::min(static_cast<std::size_t>(pos), k - 2);
  const double f = pos - static_cast<double>(lo);
  auto c = [&](int ch) {
    return static_cast<int>(std::lround(stops[lo][ch] + (stops[lo + 1][ch] - stops[lo][ch]) * f));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", c(0), c(1), c(2));
}

double nice_step(double range, int target) {
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nf * mag;
}

int decimals_for(double step) {
  for (int d = 0; d < 7; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 6;
}

std::string tick_text(double v, double step) {
  if (std::fabs(v) < step * 1e-9) v = 0;
  if (step >= 1000 && std::fabs(v) >= 10000) {
    return fmt::format("{:.{}f}k", v / 1000, decimals_for(step / 1000));
  }
  return fmt::format("{:.{}f}", v, decimals_for(step));
}

std::string percentile_label(int k) {
  // x = k means p = 1 - 10^-k: 0%, 90%, 99%, 99.9%, ...
  if (k <= 0) return "0%";
  if (k == 1) return "90%";
  if (k == 2) return "99%";
  return "99." + std::string(static_cast<std::size_t>(k - 2), '9') + "%";
}

/// x position of percentile p (in %) on a percentile axis: log10(1/(1-p)); 100% (the maximum)
/// goes to the end of the curve, as percentile_curve() samples it.
double percentile_x(double p, std::int64_t count) {
  if (p >= 100) return std::max(2.0, std::log10(static_cast<double>(std::max<std::int64_t>(count, 1))));
  return -std::log10(1 - p / 100);
}

std::string coord(double v) { return fmt::format("{:.1f}", v); }

/// Compact number for the embedded readout data.
std::string compact(double v) { return fmt::format("{:.5g}", v); }

bool chart_has_data(const Chart& c) {
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) return true;
    }
  }
  return false;
}

std::string render_chart(const Chart& c, const std::string& id) {
  constexpr double W = 600, H = 306, L = 64, R = 18, T = 46, B = 44;
  constexpr double pw = W - L - R, ph = H - T - B;

  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, ydata = -x0, ymin_data = x0;
  auto at = [](const std::vector<double>& v, std::size_t i) { return i < v.size() ? v[i] : kNaN; };
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      for (double v : {s.x[i], at(s.x_lo, i), at(s.x_hi, i)}) {
        if (!std::isfinite(v)) continue;
        x0 = std::min(x0, v);
        x1 = std::max(x1, v);
      }
      for (double v : {s.y[i], at(s.y_lo, i), at(s.y_hi, i)}) {
        if (!std::isfinite(v)) continue;
        ydata = std::max(ydata, v);
        ymin_data = std::min(ymin_data, v);
      }
    }
  }
  for (const auto& v : c.vlines) {
    x0 = std::min(x0, v.v);
    x1 = std::max(x1, v.v);
  }
  if (!std::isfinite(x0)) {
    x0 = 0;
    x1 = 1;
  }
  if (c.pad_x) {
    double span = x1 - x0;
    if (!(span > 0)) span = std::max(std::fabs(x0), 1.0);
    const bool nonneg = x0 >= 0;
    x0 -= span * 0.08;
    x1 += span * 0.08;
    if (nonneg && x0 < 0) x0 = 0;
  }
  if (c.x_min) x0 = *c.x_min;
  if (c.x_max) x1 = *c.x_max;
  if (!(x1 > x0)) x1 = x0 + 1;

  if (!std::isfinite(ydata)) {
    ydata = 0;
    ymin_data = 0;
  }
  double y0 = std::min(0.0, ymin_data);
  double y1 = ydata;
  std::vector<const RefLine*> above;
  for (const auto& h : c.hlines) {
    if (ydata <= 0 || h.v <= ydata * 1.6) {
      y1 = std::max(y1, h.v);
    } else {
      above.push_back(&h);
    }
  }
  if (c.y_max) y1 = *c.y_max;
  if (!(y1 > y0)) y1 = y0 + 1;
  const double ystep = nice_step(y1 - y0, 5);
  if (!c.y_max) y1 = std::ceil(y1 / ystep - 1e-9) * ystep;
  if (!(y1 > y0)) y1 = y0 + ystep;

  auto sx = [&](double v) { return L + (v - x0) / (x1 - x0) * pw; };
  auto sy = [&](double v) { return T + ph - (v - y0) / (y1 - y0) * ph; };

  std::string o;
  o += fmt::format("<figure class=\"chart\" id=\"{}\" data-chart=\"{}\">\n", html_escape(id), html_escape(c.key));
  o += fmt::format("<figcaption>{}</figcaption>\n", html_escape(c.title));
  o += fmt::format(
      "<svg class=\"plot\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\" data-map=\"{} {} {} {}\""
      " data-px=\"{}\">\n",
      W, H, html_escape(c.title), coord(L), coord(pw), compact(x0), compact(x1), c.percentile_x ? 1 : 0);
  o += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", coord(L), coord(T),
                   coord(pw), coord(ph));
  // Shaded x ranges (discarded phases, capacity bracket).
  for (const auto& b : c.bands) {
    const double a = std::clamp(sx(b.x0), L, L + pw), e = std::clamp(sx(b.x1), L, L + pw);
    if (!(e > a)) continue;
    o += fmt::format("<g class=\"band\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
                     coord(a), coord(T), coord(e - a), coord(ph), html_escape(b.label));
    if (e - a > 6 * static_cast<double>(b.label.size()) + 4) {
      o += fmt::format("<text class=\"band-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", coord((a + e) / 2),
                       coord(b.label_bottom ? T + ph - 6 : T + 13), html_escape(b.label));
    }
    o += "</g>\n";
  }
  // Grid and ticks.
  o += "<g class=\"grid\">";
  for (double v = y0; v <= y1 + ystep * 1e-6; v += ystep) {
    const double y = sy(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", coord(L), coord(L + pw), coord(y), coord(y));
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", coord(L - 6), coord(y + 4),
                     tick_text(v, ystep));
  }
  std::vector<std::pair<double, std::string>> xticks;
  if (c.percentile_x) {
    xticks.emplace_back(0.0, "0%");
    if (x1 - x0 < 4.5) xticks.emplace_back(std::log10(2.0), "50%");
    for (int k = 1; k <= static_cast<int>(std::floor(x1 + 1e-9)); ++k) xticks.emplace_back(k, percentile_label(k));
  } else {
    const double xstep = c.integer_x ? std::max(1.0, nice_step(x1 - x0, 6)) : nice_step(x1 - x0, 6);
    for (double v = std::ceil(x0 / xstep - 1e-9) * xstep; v <= x1 + xstep * 1e-6; v += xstep) {
      xticks.emplace_back(v, tick_text(v, xstep));
    }
  }
  for (const auto& [v, text] : xticks) {
    const double x = sx(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", coord(x), coord(x), coord(T), coord(T + ph));
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", coord(x),
                     coord(T + ph + 15), html_escape(text));
  }
  o += "</g>\n";
  o += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", coord(L + pw / 2),
                   coord(H - 6), html_escape(c.x_label));
  o += fmt::format("<text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   coord(T + ph / 2), html_escape(c.y_label));
  // Reference lines.
  for (const auto& h : c.hlines) {
    if (std::find(above.begin(), above.end(), &h) != above.end()) continue;
    if (!std::isfinite(h.v) || h.v < y0 || h.v > y1) continue;  // outside the plot
    const double y = sy(h.v);
    o += fmt::format(
        "<g class=\"ref hline\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\">{}</text></g>\n",
        coord(L), coord(L + pw), coord(y), coord(y), h.color, coord(L + pw - 4), coord(y - 4), h.color,
        html_escape(h.label));
  }
  // Bounds far above the data: named just above the plot's top right corner instead of squashing the data.
  if (!above.empty()) {
    std::string text;
    for (const RefLine* h : above) text += (text.empty() ? "" : ", ") + h->label;
    o += fmt::format("<text class=\"ref above\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\">▲ {} (above the chart)</text>\n",
                     coord(L + pw), coord(T - 5), above.front()->color, html_escape(text));
  }
  for (const auto& v : c.vlines) {
    const double x = sx(v.v);
    o += fmt::format(
        "<g class=\"ref vline\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" fill=\"{}\">{}</text></g>\n",
        coord(x), coord(x), coord(T), coord(T + ph), v.color, coord(x + (x > L + pw * 0.7 ? -4 : 4)), coord(T + 26),
        x > L + pw * 0.7 ? "end" : "start", v.color, html_escape(v.label));
  }
  // Series.
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    std::string d;
    bool pen = false;
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        pen = false;
        continue;
      }
      d += fmt::format("{}{} {}", pen ? " L" : (d.empty() ? "M" : " M"), coord(sx(s.x[i])), coord(sy(s.y[i])));
      pen = true;
      ++n;
    }
    o += fmt::format("<g class=\"series-group\" data-series=\"{}\">", si);
    // Whiskers (min–max across trials) under the line and the markers.
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const double px = sx(s.x[i]), py = sy(s.y[i]);
      if (std::isfinite(at(s.y_lo, i)) && std::isfinite(at(s.y_hi, i)) && at(s.y_hi, i) > at(s.y_lo, i)) {
        const double a = sy(at(s.y_lo, i)), b = sy(at(s.y_hi, i));
        o += fmt::format("<path class=\"whisker\" d=\"M{0} {1} L{0} {2} M{3} {1} L{4} {1} M{3} {2} L{4} {2}\" stroke=\"{5}\"/>",
                         coord(px), coord(a), coord(b), coord(px - 4), coord(px + 4), s.color);
      }
      if (std::isfinite(at(s.x_lo, i)) && std::isfinite(at(s.x_hi, i)) && at(s.x_hi, i) > at(s.x_lo, i)) {
        const double a = sx(at(s.x_lo, i)), b = sx(at(s.x_hi, i));
        o += fmt::format("<path class=\"whisker\" d=\"M{1} {0} L{2} {0} M{1} {3} L{1} {4} M{2} {3} L{2} {4}\" stroke=\"{5}\"/>",
                         coord(py), coord(a), coord(b), coord(py - 4), coord(py + 4), s.color);
      }
    }
    if (s.line && !d.empty()) {
      o += fmt::format("<path class=\"series\" d=\"{}\" stroke=\"{}\"{} data-n=\"{}\"><title>{}</title></path>", d, s.color,
                       s.dashed ? " stroke-dasharray=\"6 4\"" : "", n, html_escape(s.name));
    }
    if (s.markers) {
      for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        const std::string tip = html_escape(i < s.tips.size() ? s.tips[i] : s.name);
        const double px = sx(s.x[i]), py = sy(s.y[i]);
        if (s.cross) {
          o += fmt::format("<path class=\"marker cross\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\" stroke=\"{4}\">"
                           "<title>{5}</title></path>",
                           coord(px - 6), coord(py - 6), coord(px + 6), coord(py + 6), s.color, tip);
        } else {
          o += fmt::format("<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"><title>{}</title></circle>",
                           coord(px), coord(py), s.color, tip);
        }
      }
    }
    o += "</g>\n";
  }
  for (const auto& k : c.callouts) {
    if (!std::isfinite(k.x) || !std::isfinite(k.y)) continue;
    const double x = sx(k.x), y = sy(k.y);
    const bool left = x > L + pw * 0.75;
    o += fmt::format(
        "<g class=\"callout\"><circle cx=\"{}\" cy=\"{}\" r=\"8\"/><text x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text></g>\n",
        coord(x), coord(y), coord(left ? x - 11 : x + 11), coord(y > T + 16 ? y - 10 : y + 20), left ? "end" : "start",
        html_escape(k.label));
  }
  // Legend (click to hide a series).
  double lx = L;
  double ly = 16;
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    if (s.name.empty()) continue;
    const double w = 30 + 6.6 * static_cast<double>(s.name.size());
    if (lx + w > W - R && lx > L) {
      lx = L;
      ly += 15;
    }
    o += fmt::format("<g class=\"legend-item\" data-series=\"{}\" tabindex=\"0\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" fill=\"transparent\"/>",
                     si, coord(lx - 2), coord(ly - 10), coord(w));
    if (s.line) {
      o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"{}/>", coord(lx), coord(lx + 20),
                       coord(ly - 3), coord(ly - 3), s.color, s.dashed ? " stroke-dasharray=\"5 3\"" : "");
    }
    if (s.markers && s.cross) {
      o += fmt::format("<path class=\"cross\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\" stroke=\"{4}\"/>", coord(lx + 5),
                       coord(ly - 8), coord(lx + 15), coord(ly + 2), s.color);
    } else if (s.markers) {
      o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"/>", coord(lx + 10), coord(ly - 3), s.color);
    }
    o += fmt::format("<text x=\"{}\" y=\"{}\">{}</text></g>\n", coord(lx + 25), coord(ly + 1), html_escape(s.name));
    lx += w + 10;
  }
  o += fmt::format("<line class=\"crosshair\" x1=\"0\" x2=\"0\" y1=\"{}\" y2=\"{}\" visibility=\"hidden\"/>\n", coord(T),
                   coord(T + ph));
  o += "</svg>\n";
  // The data again, for the hover readout (a JSON data block: never executed).
  std::string data = "{\"xl\":" + json(c.x_label).dump() + ",\"s\":[";
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    data += (si ? "," : "") + std::string("{\"n\":") + json(s.name).dump() + ",\"p\":[";
    bool first = true;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      data += fmt::format("{}[{},{}]", first ? "" : ",", compact(s.x[i]), compact(s.y[i]));
      first = false;
    }
    data += "]}";
  }
  data += "]}";
  for (std::size_t pos = data.find("</"); pos != std::string::npos; pos = data.find("</", pos + 3)) data.replace(pos, 2, "<\\/");
  o += "<script type=\"application/json\" class=\"chart-data\">" + data + "</script>\n";
  o += "<div class=\"readout\"></div>\n";
  if (!c.note.empty()) o += fmt::format("<p class=\"chart-note\">{}</p>\n", html_escape(c.note));
  o += "</figure>\n";
  return o;
}

/// Unit for a latency axis: ms, or s when the values reach 10 s.
std::pair<double, std::string> latency_unit(double max_ms) {
  if (max_ms >= 10000) return {1000.0, "s"};
  return {1.0, "ms"};
}

// ---------------------------------------------------------------------------------------------
// Charts of one run

std::optional<double> slo_bound(const json& result, const std::string& metric) {
  return num_at(result, {"slo", "bounds_ms", metric});
}

std::vector<Chart> percentile_charts(const RunArtifact& a) {
  std::vector<Chart> charts;
  const std::pair<const char*, const char*> metrics[] = {{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2e", "E2E"}};
  for (const auto& [key, label] : metrics) {
    auto it = a.histograms.find(key);
    if (it == a.histograms.end() || it->second.total_count() == 0) continue;
    const HdrHistogram& h = it->second;
    const HdrHistogram* rt = nullptr;
    if (auto r = a.histograms.find(std::string(key) + "_rt"); r != a.histograms.end() && r->second.total_count() > 0) {
      rt = &r->second;
    }
    double max_ms = static_cast<double>(h.max()) / 1e3;
    if (rt != nullptr) max_ms = std::max(max_ms, static_cast<double>(rt->max()) / 1e3);
    const auto lu = latency_unit(max_ms);
    const double div = lu.first;
    const std::string unit = lu.second;
    Chart c;
    c.key = std::string("pct-") + key;
    c.title = fmt::format("{} percentile distribution", label);
    c.x_label = "percentile (log scale toward the tail)";
    c.y_label = fmt::format("{} ({})", label, unit);
    c.percentile_x = true;
    auto add = [&](const HdrHistogram& hist, std::string name, const char* col, bool dashed) {
      Series s;
      s.name = std::move(name);
      s.color = col;
      s.dashed = dashed;
      for (const auto& [p, v] : percentile_curve(hist)) {
        s.x.push_back(percentile_x(p, hist.total_count()));
        s.y.push_back(v / div);
      }
      c.series.push_back(std::move(s));
    };
    add(h, fmt::format("{} (from t_send)", label), color::kBlue, false);
    if (rt != nullptr) add(*rt, fmt::format("{} from t_intended", label), color::kVermillion, true);
    if (auto b = slo_bound(a.result, key)) {
      c.hlines.push_back({*b / div, fmt::format("SLO {} {}", format_number(*b / div), unit), color::kRed});
    }
    std::string note = fmt::format("{} samples", format_number(static_cast<double>(h.total_count())));
    if (h.total_count() < 1000) note += "; p99 from fewer than 1,000 samples is low-confidence";
    if (a.histogram_source == "requests.jsonl") note += "; recomputed from requests.jsonl";
    c.note = note;
    charts.push_back(std::move(c));
  }
  return charts;
}

/// How the warmup was chosen, in words, for the time-series notes ("" when not recorded).
std::string warmup_words(const json& result) {
  const json* w = find_path(result, {"window", "warmup"});
  if (w == nullptr || !w->is_object()) return {};
  const std::string method = str_at(*w, {"method"});
  if (method != "auto") return {};
  const json* d = find_path(*w, {"detection"});
  if (d == nullptr || !d->is_object()) return "the warmup was detected automatically";
  const std::string m = str_at(*d, {"method"}).empty() ? std::string("MSER-5") : str_at(*d, {"method"});
  const json* found = find_path(*d, {"found"});
  if (found != nullptr && found->is_boolean() && !found->get<bool>()) {
    return fmt::format("{} found no steady state: nothing was discarded as warmup", m);
  }
  std::string o = fmt::format("the warmup was detected by {}", m);
  if (auto sd = str_at(*d, {"deciding_series"}); !sd.empty()) o += fmt::format(" (decided by the {} series)", sd);
  return o;
}

std::vector<Chart> time_series_charts(const RunArtifact& a, double interval_s, const std::string& which = {}) {
  std::vector<Chart> charts;
  if (!a.has_records || a.records.empty()) return charts;
  const TimeSeries ts = compute_time_series(a.records, a.result, interval_s);
  std::vector<double> mid;
  for (double s : ts.start_s) mid.push_back(std::min(s + ts.interval_s / 2, ts.end_s));
  std::vector<Band> bands;
  // The warmup is shaded when something before the window was discarded: warmup requests, or
  // requests intended before the window's start (`--warmup none` leaves only the idle start).
  const bool discarded_start =
      ts.window_start_s && *ts.window_start_s > 0 &&
      std::any_of(a.records.begin(), a.records.end(),
                  [&](const RequestRecord& r) { return r.warmup || secs(r.t_intended) < *ts.window_start_s - 1e-9; });
  const bool auto_warmup = str_at(a.result, {"window", "warmup", "method"}) == "auto";
  if (discarded_start) {
    bands.push_back({0, *ts.window_start_s, auto_warmup ? "auto warmup (discarded)" : "warmup (discarded)", false});
  }
  if (ts.window_end_s && *ts.window_end_s < ts.end_s) bands.push_back({*ts.window_end_s, ts.end_s, "drain (discarded)", false});
  const std::string how = warmup_words(a.result);
  const std::string xl = "time since the run's start (s)";
  auto base = [&](std::string key, std::string title, std::string yl) {
    Chart c;
    c.key = std::move(key);
    c.title = std::move(title);
    c.x_label = xl;
    c.y_label = std::move(yl);
    c.bands = bands;
    c.x_min = 0;
    c.x_max = ts.end_s > 0 ? ts.end_s : 1;
    c.note = fmt::format("per {:g} s interval", ts.interval_s);
    if (!bands.empty()) {
      c.note += "; shaded: ";
      for (std::size_t i = 0; i < bands.size(); ++i) {
        c.note += fmt::format("{}{} {}–{} s", i ? ", " : "", bands[i].label.substr(0, bands[i].label.find(" (")),
                              format_number(bands[i].x0), format_number(bands[i].x1));
      }
      c.note += " (discarded)";
    }
    if (!how.empty()) c.note += "; " + how;
    if (ts.clamped) c.note += fmt::format(" (widened to keep at most {} intervals)", kMaxIntervals);
    if (!which.empty()) c.note += "; " + which;
    return c;
  };
  auto series = [&](std::string name, const std::vector<double>& y, const char* col, bool dashed = false) {
    Series s;
    s.name = std::move(name);
    s.x = mid;
    s.y = y;
    s.color = col;
    s.dashed = dashed;
    return s;
  };
  {
    Chart c = base("ts-requests", "Requests per second", "requests/s");
    c.series.push_back(series("sent", ts.sends_per_s, color::kGray, true));
    c.series.push_back(series("completed", ts.completions_per_s, color::kBlue));
    if (std::any_of(ts.errors_per_s.begin(), ts.errors_per_s.end(), [](double v) { return v > 0; })) {
      c.series.push_back(series("failed", ts.errors_per_s, color::kRed));
    }
    charts.push_back(std::move(c));
  }
  {
    Chart c = base("ts-tokens", "Output tokens per second", "tokens/s");
    c.series.push_back(series("output tokens/s", ts.tokens_per_s, color::kGreen));
    c.note += "; each request's tokens spread evenly between its first and last token";
    charts.push_back(std::move(c));
  }
  {
    Chart c = base("ts-inflight", "Requests in flight", "requests (time-averaged)");
    c.series.push_back(series("in flight", ts.in_flight, color::kPurple));
    charts.push_back(std::move(c));
  }
  {
    double mx = 0;
    for (double v : ts.ttft_p99_ms) {
      if (std::isfinite(v)) mx = std::max(mx, v);
    }
    const auto [div, unit] = latency_unit(mx);
    std::vector<double> p50 = ts.ttft_p50_ms, p99 = ts.ttft_p99_ms;
    for (double& v : p50) v /= div;
    for (double& v : p99) v /= div;
    Chart c = base("ts-ttft", "TTFT per interval", fmt::format("TTFT ({})", unit));
    c.series.push_back(series("p50", p50, color::kBlue));
    c.series.push_back(series("p99", p99, color::kVermillion));
    if (auto b = slo_bound(a.result, "ttft")) {
      c.hlines.push_back({*b / div, fmt::format("SLO {} {}", format_number(*b / div), unit), color::kRed});
    }
    c.note += " (by first-token time; from t_send; p99 of an interval with few requests is close to its max)";
    charts.push_back(std::move(c));
  }
  // The server's own view (its /metrics, scraped during the run), against the client's in-flight.
  if (const json* sr = find_path(a.result, {"server_metrics", "series"}); sr != nullptr && sr->is_object()) {
    const json* t = find_path(*sr, {"t_s"});
    if (t != nullptr && t->is_array() && t->size() >= 2) {
      Chart c = base("ts-server", "Server: requests running and waiting", "requests");
      auto from = [&](const char* key, std::string name, const char* col, bool dashed) {
        Series s = make_series(std::move(name), col, dashed, false);
        const json* v = find_path(*sr, {key});
        if (v == nullptr || !v->is_array()) return s;
        for (std::size_t i = 0; i < t->size() && i < v->size(); ++i) {
          const double x = (*t)[i].is_number() ? (*t)[i].get<double>() : kNaN;
          s.x.push_back(x >= 0 && x <= ts.end_s ? x : kNaN);  // the before and after snapshots lie just outside
          s.y.push_back((*v)[i].is_number() ? (*v)[i].get<double>() : kNaN);
        }
        return s;
      };
      c.series.push_back(from("running", "running (server)", color::kBlue, false));
      c.series.push_back(from("waiting", "waiting (server)", color::kVermillion, false));
      c.series.push_back(series("in flight (client)", ts.in_flight, color::kGray, true));
      c.note += "; the server's gauges from its /metrics, one point per scrape; the client's in-flight, dashed, "
                "for comparison (the server also counts other clients)";
      charts.push_back(std::move(c));
    }
  }
  return charts;
}

/// Per-trial spread: result.json "trials", an array of objects carrying the headline numbers
/// (directly, or under "result" or "metrics"), numbered by their "trial" (else 1, 2, ...). The
/// median line, and the 95% CI from "trial_summary" when there; invalid and stopped-early trials
/// are marked.
std::vector<Chart> trial_charts(const json& result) {
  std::vector<Chart> charts;
  const json* trials = find_path(result, {"trials"});
  if (trials == nullptr || !trials->is_array() || trials->empty()) return charts;
  const std::pair<const char*, const char*> metrics[] = {
      {"request_throughput", "request throughput (req/s)"}, {"output_throughput", "output tokens/s"},
      {"request_goodput", "request goodput (req/s)"},       {"p99_ttft_ms", "p99 TTFT (ms)"},
      {"p99_tpot_ms", "p99 TPOT (ms)"},                     {"p99_e2el_ms", "p99 E2E (ms)"}};
  for (const auto& [key, label] : metrics) {
    Series s = make_series(label, color::kBlue, false, true);
    s.line = false;
    Series flagged = make_series("invalid or stopped early", color::kRed, false, true);
    flagged.line = false;
    flagged.cross = true;
    std::vector<double> values;
    for (std::size_t i = 0; i < trials->size(); ++i) {
      const json& t = (*trials)[i];
      std::optional<double> v = num_at(t, {key});
      if (!v) v = num_at(t, {"result", key});
      if (!v) v = num_at(t, {"metrics", key});
      if (!v || !std::isfinite(*v)) continue;
      const double num = num_at(t, {"trial"}).value_or(static_cast<double>(i + 1));
      const json* valid = find_path(t, {"valid"});
      const bool invalid = valid != nullptr && valid->is_boolean() && !valid->get<bool>();
      const auto stopped = stopped_reason(find_path(t, {"stopped_early"}));
      std::string tip = fmt::format("trial {}: {}", format_number(num), format_number(*v));
      if (invalid) tip += " (INVALID)";
      if (stopped) tip += " (stopped early: " + *stopped + ")";
      if (const std::string sv = str_at(t, {"slo_verdict"}); !sv.empty()) tip += ", SLO " + sv;
      s.x.push_back(num);
      s.y.push_back(*v);
      s.tips.push_back(tip);
      if (invalid || stopped) {
        flagged.x.push_back(num);
        flagged.y.push_back(*v);
        flagged.tips.push_back(tip);
      }
      values.push_back(*v);
    }
    if (values.empty()) continue;
    Spread sp = spread_of_values(values);
    const std::optional<Spread> summary = summary_spread(result, key);
    const bool ci = summary && std::isfinite(summary->ci_low) && std::isfinite(summary->ci_high);
    Chart c;
    c.key = std::string("trials-") + key;
    c.title = fmt::format("{} per trial", label);
    c.x_label = "trial";
    c.y_label = label;
    c.pad_x = true;
    c.integer_x = true;
    c.series.push_back(std::move(s));
    if (!flagged.x.empty()) c.series.push_back(std::move(flagged));
    c.hlines.push_back({sp.median, fmt::format("median {}", format_number(sp.median)), color::kVermillion});
    if (ci) {
      c.hlines.push_back({summary->ci_high, "95% CI", color::kGray});
      c.hlines.push_back({summary->ci_low, "", color::kGray});
    }
    c.note = fmt::format("{} trials: min {}, median {}, max {}", sp.n, format_number(sp.min), format_number(sp.median),
                         format_number(sp.max));
    if (ci) c.note += fmt::format("; 95% CI {} ({})", ci_text(*summary), summary->ci_method);
    if (summary && std::isfinite(summary->cv)) c.note += fmt::format("; CV {}", percent(summary->cv));
    if (summary && summary->noisy) c.note += "; NOISY";
    charts.push_back(std::move(c));
  }
  return charts;
}

/// A trials artifact's percentile distributions: one curve per trial (from t_send), overlaid.
std::vector<Chart> trial_percentile_charts(const RunArtifact& a) {
  std::vector<Chart> charts;
  const std::pair<const char*, const char*> metrics[] = {{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2e", "E2E"}};
  for (const auto& [key, label] : metrics) {
    double mx = 0;
    std::size_t with = 0;
    for (const auto& t : a.trials) {
      if (auto it = t.histograms.find(key); it != t.histograms.end() && it->second.total_count() > 0) {
        mx = std::max(mx, static_cast<double>(it->second.max()) / 1e3);
        ++with;
      }
    }
    if (with == 0) continue;
    const auto [div, unit] = latency_unit(mx);
    Chart c;
    c.key = std::string("pct-") + key;
    c.title = fmt::format("{} percentile distribution, each trial", label);
    c.x_label = "percentile (log scale toward the tail)";
    c.y_label = fmt::format("{} ({})", label, unit);
    c.percentile_x = true;
    std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < a.trials.size(); ++i) {
      auto it = a.trials[i].histograms.find(key);
      if (it == a.trials[i].histograms.end() || it->second.total_count() == 0) continue;
      Series s;
      s.name = fmt::format("trial {}", a.trial_numbers[i]);
      s.color = ramp_color(i, a.trials.size());
      for (const auto& [p, v] : percentile_curve(it->second)) {
        s.x.push_back(percentile_x(p, it->second.total_count()));
        s.y.push_back(v / div);
      }
      smallest = std::min(smallest, it->second.total_count());
      c.series.push_back(std::move(s));
    }
    std::optional<double> bound = slo_bound(a.result, key);
    if (!bound && !a.trials.empty()) bound = slo_bound(a.trials.front().result, key);
    if (bound) c.hlines.push_back({*bound / div, fmt::format("SLO {} {}", format_number(*bound / div), unit), color::kRed});
    c.note = fmt::format("{} of {} trials, from t_send; each trial's measurement window", with, a.trials.size());
    if (smallest < 1000) c.note += "; p99 from fewer than 1,000 samples is low-confidence";
    charts.push_back(std::move(c));
  }
  return charts;
}

// ---------------------------------------------------------------------------------------------
// HTML pieces

constexpr const char* kCss = R"CSS(
:root { --fg:#1d232a; --muted:#5b6673; --line:#d9dee4; --bg:#ffffff; --panel:#f6f8fa;
  --pass:#1e7d46; --fail:#b42318; --warn:#a15c00; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  color:var(--fg); background:var(--bg); }
main { max-width:1280px; margin:0 auto; padding:20px 24px 40px; }
h1 { font-size:22px; margin:0 0 4px; }
h2 { font-size:17px; margin:28px 0 10px; padding-bottom:4px; border-bottom:1px solid var(--line); }
h3 { font-size:15px; margin:18px 0 8px; }
.sub { color:var(--muted); margin:0 0 10px; word-break:break-all; }
.badges { display:flex; flex-wrap:wrap; gap:8px; margin:10px 0; }
.badge { display:inline-block; padding:4px 10px; border-radius:4px; font-weight:600; border:1px solid;
  background:#fff; }
.badge.pass, .badge.valid { color:var(--pass); border-color:var(--pass); background:#ecf7f0; }
.badge.fail, .badge.invalid { color:var(--fail); border-color:var(--fail); background:#fdf0ef; }
.badge.inconclusive, .badge.warn { color:var(--warn); border-color:var(--warn); background:#fdf6e9; }
.badge.neutral { color:var(--muted); border-color:var(--line); }
.reason { margin:4px 0; color:var(--fail); }
.reason.warn { color:var(--warn); }
ul.reasons { margin:4px 0 8px; padding-left:22px; color:var(--fail); }
ul.reasons code { background:#fdf0ef; padding:0 4px; border-radius:3px; }
h4 { font-size:14px; margin:14px 0 6px; }
.checks { margin:0 0 10px; }
p.verdict { margin:6px 0 4px; }
p.verdict .badge { margin-right:6px; }
.kv .range { font-size:12px; color:var(--muted); font-variant-numeric:tabular-nums; }
tr.noisy td { background:#fdf6e9; }
tr.capacity td { background:#ecf7f0; }
tr.stopped td { background:#fdf6e9; }
td .badge, p .badge { padding:1px 7px; font-size:12px; }
.notes { background:#fdf6e9; border-left:4px solid var(--warn); padding:8px 12px 8px 28px; margin:12px 0; }
.kv { display:grid; grid-template-columns:repeat(auto-fill,minmax(190px,1fr)); gap:10px; margin:8px 0 16px; }
.kv > div { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px 10px; }
.kv .k { color:var(--muted); font-size:12px; }
.kv .v { font-size:19px; font-weight:600; font-variant-numeric:tabular-nums; }
.kv .u { font-size:12px; color:var(--muted); font-weight:400; }
table { border-collapse:collapse; margin:6px 0 14px; font-variant-numeric:tabular-nums; }
th, td { border:1px solid var(--line); padding:4px 9px; text-align:right; vertical-align:top; }
td { white-space:nowrap; }
th { background:var(--panel); font-weight:600; }
td.l, th.l { text-align:left; }
td.wrap { white-space:normal; max-width:760px; word-break:break-word; text-align:left; }
td.note { white-space:normal; min-width:110px; max-width:240px; text-align:left; }
.scroll { overflow-x:auto; max-width:100%; }
.scroll > table { margin-bottom:4px; }
.rng { font-size:11px; color:var(--muted); }
.low { color:var(--warn); }
.charts { display:grid; grid-template-columns:repeat(auto-fill,minmax(560px,1fr)); gap:14px 22px; }
figure.chart { margin:0; padding:10px 12px 6px; border:1px solid var(--line); border-radius:6px; background:#fff; }
figure.chart figcaption { font-weight:600; margin-bottom:2px; }
svg.plot { width:100%; height:auto; display:block; font-size:11px; }
svg.plot .frame { fill:#fff; stroke:#9aa4ae; stroke-width:1; }
svg.plot .grid line { stroke:#e8ebef; stroke-width:1; }
svg.plot .tick { fill:#4a5561; }
svg.plot .axis-label { fill:#2e3740; font-size:12px; }
svg.plot .band rect { fill:#8b96a3; fill-opacity:0.16; }
svg.plot .band-label { fill:#55606c; font-size:11px; font-style:italic; }
svg.plot path.series { fill:none; stroke-width:2; stroke-linejoin:round; stroke-linecap:round; }
svg.plot path.whisker { fill:none; stroke-width:1.3; stroke-opacity:0.75; }
svg.plot path.cross { fill:none; stroke-width:2.6; stroke-linecap:round; }
svg.plot .ref line { stroke-width:1.4; stroke-dasharray:3 3; }
svg.plot .ref text { font-size:11px; font-weight:600; paint-order:stroke; stroke:#fff; stroke-width:3px; }
svg.plot .callout circle { fill:none; stroke:#1d232a; stroke-width:2; }
svg.plot .callout text { font-weight:700; font-size:12px; paint-order:stroke; stroke:#fff; stroke-width:3px; }
svg.plot .legend-item { cursor:pointer; }
svg.plot .legend-item text { fill:#2e3740; }
svg.plot .legend-item.off { opacity:0.35; }
svg.plot .series-group.off { display:none; }
svg.plot .crosshair { stroke:#1d232a; stroke-width:1; stroke-opacity:0.4; }
.readout { min-height:1.4em; font-size:12px; color:var(--muted); font-variant-numeric:tabular-nums; }
.chart-note { margin:0 0 4px; font-size:12px; color:var(--muted); }
details { margin:10px 0; }
details > summary { cursor:pointer; font-weight:600; }
details.point { border:1px solid var(--line); border-radius:6px; padding:8px 12px; }
pre { background:var(--panel); border:1px solid var(--line); padding:10px; overflow:auto; font-size:12px; max-height:480px; }
footer { margin-top:30px; color:var(--muted); font-size:12px; }
@media print { .readout { display:none; } details { display:block; } }
)CSS";

// Legend clicks hide a series; moving over a chart shows the values under the pointer.
constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1000) return v.toFixed(0);
    if (a >= 100) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }
  function setup(fig) {
    var svg = fig.querySelector('svg.plot');
    if (!svg) return;
    var items = fig.querySelectorAll('.legend-item');
    Array.prototype.forEach.call(items, function (item) {
      item.addEventListener('click', function () {
        var idx = item.getAttribute('data-series');
        Array.prototype.forEach.call(fig.querySelectorAll('[data-series="' + idx + '"]'), function (el) {
          el.classList.toggle('off');
        });
      });
    });
    var out = fig.querySelector('.readout');
    var el = fig.querySelector('script.chart-data');
    var map = (svg.getAttribute('data-map') || '').split(' ').map(Number);
    if (!out || !el || map.length !== 4 || map.some(isNaN)) return;
    var data;
    try { data = JSON.parse(el.textContent); } catch (e) { return; }
    var pct = svg.getAttribute('data-px') === '1';
    var cross = svg.querySelector('.crosshair');
    var vbw = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 600;
    svg.addEventListener('mousemove', function (ev) {
      var r = svg.getBoundingClientRect();
      if (!r.width) return;
      var px = (ev.clientX - r.left) * vbw / r.width;
      if (px < map[0] || px > map[0] + map[1]) return;
      var x = map[2] + (px - map[0]) / map[1] * (map[3] - map[2]);
      var parts = [], shownX = null;
      data.s.forEach(function (s, i) {
        var leg = fig.querySelector('.legend-item[data-series="' + i + '"]');
        if ((leg && leg.classList.contains('off')) || !s.p.length) return;
        var best = s.p[0];
        s.p.forEach(function (p) { if (Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p; });
        if (shownX === null) shownX = best[0];
        parts.push((s.n || 'value') + ' ' + fmt(best[1]));
      });
      if (shownX === null) return;
      var xs = pct ? (100 * (1 - Math.pow(10, -shownX))).toPrecision(6).replace(/0+$/, '').replace(/\.$/, '') + '%'
                   : fmt(shownX);
      out.textContent = data.xl + ': ' + xs + '  \u00b7  ' + parts.join('  \u00b7  ');
      if (cross) {
        cross.setAttribute('x1', px);
        cross.setAttribute('x2', px);
        cross.setAttribute('visibility', 'visible');
      }
    });
    svg.addEventListener('mouseleave', function () {
      out.textContent = '';
      if (cross) cross.setAttribute('visibility', 'hidden');
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('figure.chart'), setup);
  document.documentElement.setAttribute('data-report-ready', '1');
})();
)JS";

std::string verdict_class(const std::string& v) {
  if (v == "PASS") return "pass";
  if (v == "FAIL") return "fail";
  if (v == "INCONCLUSIVE") return "inconclusive";
  return "neutral";
}

/// "2 of 3 trials PASS" (trial verdicts of a trials artifact).
std::string trial_verdicts_text(const RunSummary& s) {
  if (s.trial_verdicts.empty()) return {};
  std::map<std::string, int> by;
  for (const auto& v : s.trial_verdicts) ++by[v.empty() ? "no verdict" : v];
  std::string o;
  for (const char* v : {"PASS", "FAIL", "INCONCLUSIVE", "no verdict"}) {
    if (auto it = by.find(v); it != by.end()) o += fmt::format("{}{} {}", o.empty() ? "" : ", ", it->second, v);
  }
  return fmt::format("{} of {} trials", o, s.trial_verdicts.size());
}

std::string reason_text(const Reason& r) {
  std::string o;
  if (r.trial) o += fmt::format("trial {}: ", *r.trial);
  return o + r.message;
}

std::string badges_html(const RunSummary& s, const std::string& prefix) {
  std::string o = "<div class=\"badges\">";
  if (!s.slo_verdict.empty()) {
    std::string title = s.slo_spec + (s.slo_view.empty() ? "" : ", " + s.slo_view + " view");
    if (s.trials) title += "; " + trial_verdicts_text(s) + " (the majority decides)";
    o += fmt::format("<span class=\"badge {}\" id=\"{}verdict-slo\" title=\"{}\">SLO {}</span>", verdict_class(s.slo_verdict),
                     prefix, html_escape(title), html_escape(s.slo_verdict));
  } else {
    o += fmt::format("<span class=\"badge neutral\" id=\"{}verdict-slo\">no SLO given</span>", prefix);
  }
  if (s.validity == "valid") {
    o += fmt::format("<span class=\"badge valid\" id=\"{}verdict-validity\">{}</span>", prefix,
                     s.trials ? "valid: every trial" : "valid: the client held the offered load");
  } else if (s.validity == "INVALID") {
    o += fmt::format("<span class=\"badge invalid\" id=\"{}verdict-validity\">INVALID{}</span>", prefix,
                     s.reasons.size() > 1 ? fmt::format(" ({} reasons)", s.reasons.size()) : std::string());
  } else if (s.validity == "not checked") {
    o += fmt::format("<span class=\"badge neutral\" id=\"{}verdict-validity\">validity not checked (closed loop)</span>",
                     prefix);
  }
  if (s.trials) {
    o += fmt::format("<span class=\"badge neutral\" id=\"{}verdict-trials\">{} trials: median [min–max]</span>", prefix, s.n_trials);
    if (s.noisy) {
      std::string which;
      for (const auto& m : s.noisy_metrics) which += (which.empty() ? "" : ", ") + m;
      o += fmt::format("<span class=\"badge warn\" id=\"{}verdict-noisy\" title=\"{}\">NOISY{}</span>", prefix,
                       html_escape("coefficient of variation across trials above the threshold"),
                       html_escape(which.empty() ? "" : ": " + which));
    }
  }
  if (s.stopped_early) {
    o += fmt::format("<span class=\"badge warn\" id=\"{}verdict-stopped\">STOPPED EARLY</span>", prefix);
  }
  if (s.interrupted) o += "<span class=\"badge warn\">INTERRUPTED</span>";
  if (std::isfinite(s.failed) && s.failed > 0) {
    o += fmt::format("<span class=\"badge warn\">{} failed</span>", format_number(s.failed));
  }
  o += "</div>\n";
  if (!s.slo_spec.empty()) {
    std::string trials = s.trials && !s.trial_verdicts.empty() ? "; " + trial_verdicts_text(s) + ", the majority decides" : "";
    o += fmt::format("<p class=\"sub\">SLO {}{}{}</p>\n", html_escape(s.slo_spec),
                     s.slo_view.empty() ? "" : html_escape(fmt::format(", judged in the {} view", s.slo_view)),
                     html_escape(trials));
  }
  const bool reason_list = s.reasons.size() > 1 || std::any_of(s.reasons.begin(), s.reasons.end(), [](const Reason& r) {
                             return !r.code.empty() || r.trial.has_value();
                           });
  if (reason_list && s.validity == "INVALID") {
    o += fmt::format("<ul class=\"reasons\" id=\"{}validity-reasons\">", prefix);
    for (const auto& r : s.reasons) {
      o += fmt::format("<li data-code=\"{}\">{}{}</li>", html_escape(r.code),
                       r.code.empty() ? "" : "<code>" + html_escape(r.code) + "</code> ", html_escape(reason_text(r)));
    }
    o += "</ul>\n";
  } else if (!s.validity_reason.empty()) {
    o += fmt::format("<p class=\"reason\">{}</p>\n", html_escape(s.validity_reason));
  }
  if (s.lag_not_checked) {
    o += "<p class=\"sub\">Schedule lag not checked (closed loop: each request starts when a slot frees, there is no "
         "schedule to fall behind).</p>\n";
  }
  if (s.stopped_early) {
    o += fmt::format("<p class=\"reason warn\" id=\"{}stopped-early\">Stopped early: {}. The numbers cover the run up to the "
                     "stop.</p>\n",
                     prefix, html_escape(*s.stopped_early));
  }
  if (s.interrupted) {
    o += "<p class=\"reason\">The run was interrupted: results cover only what was measured before the signal.</p>\n";
  }
  return o;
}

std::string notes_html(const std::vector<std::string>& notes) {
  if (notes.empty()) return {};
  std::string o = "<ul class=\"notes\">";
  for (const auto& n : notes) o += "<li>" + html_escape(n) + "</li>";
  return o + "</ul>\n";
}

std::string cost_text(const RunSummary& s) {
  std::string o = fmt::format("${} per 1M output tokens", format_number(s.cost));
  if (std::isfinite(s.price_per_hour)) {
    o += fmt::format(" (${}/h per device × {} device{} at {} output tokens/s{})", format_number(s.price_per_hour),
                     format_number(s.devices), s.devices == 1 ? "" : "s", format_number(s.output_throughput),
                     s.cost_computed ? "; computed by the report from the conditions" : "");
  }
  return o;
}

std::string kv_html(const RunArtifact& a, const RunSummary& s, const std::string& prefix) {
  std::string o = "<div class=\"kv\">";
  auto item = [&](const std::string& k, const std::string& v, const std::string& u, const std::string& key = {},
                  double (*from_trial)(const json&) = nullptr) {
    std::string range;
    if (s.trials && !key.empty()) {
      const Spread sp = trial_spread(a, key, from_trial);
      if (sp.has_range()) {
        range = fmt::format("[{}–{}]", format_number(sp.min), format_number(sp.max));
        if (std::isfinite(sp.ci_low)) range += " · 95% CI " + ci_text(sp);
        if (sp.noisy) range += " · noisy";
      }
    }
    o += fmt::format("<div{}><div class=\"k\">{}</div><div class=\"v\">{} <span class=\"u\">{}</span></div>{}</div>",
                     key.empty() ? "" : fmt::format(" data-key=\"{}\"", key), html_escape(k), html_escape(v), html_escape(u),
                     range.empty() ? "" : "<div class=\"range\">" + html_escape(range) + "</div>");
  };
  const std::string med = s.trials ? "median " : "";
  if (std::isfinite(s.offered)) item("offered load", format_number(s.offered), load_unit(s.load_kind));
  if (std::isfinite(s.achieved_send_rate)) item("achieved send rate", format_number(s.achieved_send_rate), "req/s");
  if (std::isfinite(s.request_throughput)) {
    item(med + "request throughput", format_number(s.request_throughput), "req/s", "request_throughput");
  }
  if (std::isfinite(s.output_throughput)) {
    item(med + "output throughput", format_number(s.output_throughput), "tokens/s", "output_throughput");
  }
  if (std::isfinite(s.total_token_throughput)) {
    item(med + "total token throughput", format_number(s.total_token_throughput), "tokens/s", "total_token_throughput");
  }
  if (std::isfinite(s.request_goodput)) {
    item(med + "request goodput", format_number(s.request_goodput), "req/s", "request_goodput", trial_request_goodput);
  }
  if (std::isfinite(s.token_goodput)) {
    item(med + "token goodput", format_number(s.token_goodput), "tokens/s", "token_goodput", trial_token_goodput);
  }
  if (std::isfinite(s.attainment)) item(med + "SLO attainment", percent(s.attainment), "of requests good");
  if (std::isfinite(s.completed)) item("completed", format_number(s.completed), s.trials ? "requests (all trials)" : "requests");
  if (std::isfinite(s.failed)) item("failed", format_number(s.failed), s.trials ? "requests (all trials)" : "requests");
  if (std::isfinite(s.window_s)) item("measurement window", format_number(s.window_s), "s");
  if (std::isfinite(s.cost)) {
    o += fmt::format("<div id=\"{}\" title=\"{}\"><div class=\"k\">cost</div><div class=\"v\">${} <span class=\"u\">per 1M "
                     "output tokens</span></div></div>",
                     prefix + "cost", html_escape(cost_text(s)), format_number(s.cost));
  }
  o += "</div>\n";
  if (std::isfinite(s.cost)) o += "<p class=\"chart-note cost\">Cost: " + html_escape(cost_text(s)) + ".</p>\n";
  return o;
}

std::string latency_table_html(const RunSummary& s, const std::string& id) {
  if (s.latency.empty()) return {};
  std::string o = fmt::format(
      "<table id=\"{}\"><thead><tr><th class=\"l\">metric (ms)</th><th>n</th><th>mean</th><th>p50</th><th>p90</th>"
      "<th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead><tbody>\n",
      id);
  if (s.trials) {
    o = fmt::format("<table id=\"{}\"><thead><tr><th class=\"l\">metric (ms), median across trials</th><th>mean</th>"
                    "<th>p50</th><th>p90</th><th>p95</th><th>p99</th></tr></thead><tbody>\n",
                    id);
    for (const auto& r : s.latency) {
      o += fmt::format("<tr data-metric=\"{}\"><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       r.key, html_escape(r.label), format_number(r.mean), format_number(r.p50), format_number(r.p90),
                       format_number(r.p95), format_number(r.p99));
    }
    return o + "</tbody></table>\n<p class=\"chart-note\">Each cell: the median of the trials' values (a median of "
               "percentiles, not the percentile of all trials' requests pooled). Each trial's own table, with its "
               "sample counts and confidence flags, is in its report.</p>\n";
  }
  for (const auto& r : s.latency) {
    std::string p99 = format_number(r.p99);
    if (r.low99) p99 = "<span class=\"low\" title=\"fewer than 1,000 samples: low confidence\">" + p99 + "†</span>";
    std::string p999 = format_number(r.p999);
    if (r.low999) p999 = "<span class=\"low\" title=\"fewer than 10,000 samples: low confidence\">" + p999 + "†</span>";
    std::string ci;
    if (r.ci99) ci = fmt::format(" title=\"95% CI of p99: {} – {} ms\"", format_number(r.ci99->first), format_number(r.ci99->second));
    o += fmt::format(
        "<tr data-metric=\"{}\"><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        r.key, html_escape(r.label), format_number(r.count), format_number(r.mean), format_number(r.p50),
        format_number(r.p90), format_number(r.p95), ci, p99, p999, format_number(r.max));
  }
  o += "</tbody></table>\n<p class=\"chart-note\">† low confidence: p99 from fewer than 1,000 samples, p99.9 from fewer than "
       "10,000. Hover p99 for its 95% confidence interval.</p>\n";
  return o;
}

std::string slo_table_html(const json& result) {
  const json* metrics = find_path(result, {"slo", "metrics"});
  if (metrics == nullptr || !metrics->is_array() || metrics->empty()) return {};
  std::string o =
      "<table class=\"slo\"><thead><tr><th class=\"l\">metric</th><th>bound (ms)</th><th>observed (ms)</th>"
      "<th>over the bound</th><th>requests</th><th>needed to pass</th><th class=\"l\">verdict</th><th class=\"l\">why</th></tr>"
      "</thead><tbody>\n";
  for (const auto& m : *metrics) {
    const std::string v = str_at(m, {"verdict"});
    o += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"l\"><span class=\"badge {}\">{}</span></td><td class=\"wrap\">{}</td></tr>\n",
        html_escape(str_at(m, {"metric"})), format_number(nan_at(m, {"bound_ms"})), format_number(nan_at(m, {"observed_ms"})),
        format_number(nan_at(m, {"exceedances"})), format_number(nan_at(m, {"requests"})),
        format_number(nan_at(m, {"required_requests"})), verdict_class(v), html_escape(v),
        html_escape(str_at(m, {"explanation"})));
  }
  return o + "</tbody></table>\n";
}

std::string errors_html(const json& result) {
  const json* by = find_path(result, {"errors", "by_class"});
  const json* st = find_path(result, {"errors", "by_http_status"});
  const bool any = (by != nullptr && by->is_object() && !by->empty()) || (st != nullptr && st->is_object() && !st->empty());
  if (!any) return {};
  std::string o = "<h3>Errors</h3><table class=\"errors\"><thead><tr><th class=\"l\">class</th><th>count</th>"
                  "<th class=\"l\">example</th></tr></thead><tbody>\n";
  auto rows = [&](const json* obj, const std::string& prefix) {
    if (obj == nullptr || !obj->is_object()) return;
    for (const auto& [k, e] : obj->items()) {
      const double n = e.is_number() ? e.get<double>() : nan_at(e, {"count"});
      o += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>\n", html_escape(prefix + k),
                       format_number(n), html_escape(str_at(e, {"example"})));
    }
  };
  rows(by, "");
  rows(st, "HTTP ");
  return o + "</tbody></table>\n";
}

std::vector<std::pair<std::string, std::string>> condition_rows(const json& result) {
  std::vector<std::pair<std::string, std::string>> rows;
  const json* c = find_path(result, {"conditions"});
  if (c == nullptr || !c->is_object()) return rows;
  const json& cond = *c;
  if (const json* t = find_path(cond, {"tool"}); t != nullptr && t->is_object()) {
    rows.emplace_back("tool", fmt::format("{} {} ({}, {})", str_at(*t, {"name"}), str_at(*t, {"version"}), str_at(*t, {"build"}),
                                          str_at(*t, {"compiler"})));
  }
  if (auto s = str_at(cond, {"start_time"}); !s.empty()) rows.emplace_back("start time", s);
  if (const json* cl = find_path(cond, {"command_line"}); cl != nullptr) rows.emplace_back("command line", shell_join(*cl));
  if (const json* sc = find_path(cond, {"scenario"}); sc != nullptr && sc->is_object()) {
    std::string text;
    for (const char* k : {"scenario", "request_rate", "concurrency", "arrival_process", "num_requests", "duration_s", "warmup",
                          "input_tokens", "output_tokens", "endpoint", "stream", "slo", "turns"}) {
      const json* v = find_path(*sc, {k});
      if (v == nullptr || v->is_null()) continue;
      const std::string t = scalar_text(*v);
      if (t.empty()) continue;
      text += fmt::format("{}{}: {}", text.empty() ? "" : ", ", k, t);
    }
    rows.emplace_back("scenario", text);
  }
  if (const json* e = find_path(cond, {"endpoint"}); e != nullptr) {
    rows.emplace_back("endpoint", e->is_object() ? str_at(*e, {"base_url"}) + str_at(*e, {"path"}) : scalar_text(*e));
  }
  if (const json* m = find_path(cond, {"model"}); m != nullptr) rows.emplace_back("model", scalar_text(*m));
  if (const json* m = find_path(cond, {"machine"}); m != nullptr && m->is_object()) {
    std::string text;
    for (const auto& [k, v] : m->items()) {
      const std::string t = scalar_text(v);
      if (!t.empty()) text += fmt::format("{}{}: {}", text.empty() ? "" : ", ", k, t);
    }
    rows.emplace_back("machine", text);
  }
  if (const json* w = find_path(cond, {"workload"}); w != nullptr && w->is_object()) {
    std::string text = str_at(*w, {"dataset"});
    if (auto in = str_at(*w, {"input", "spec"}); !in.empty()) text += ", input " + in;
    if (auto out = str_at(*w, {"output", "spec"}); !out.empty()) text += ", output " + out;
    rows.emplace_back("workload", text);
  }
  if (const json* s = find_path(cond, {"seeds"}); s != nullptr && s->is_object()) {
    std::string text;
    for (const auto& [k, v] : s->items()) text += fmt::format("{}{}: {}", text.empty() ? "" : ", ", k, scalar_text(v));
    rows.emplace_back("seeds", text);
  }
  return rows;
}

std::string conditions_html(const json& result, const std::string& id) {
  const auto rows = condition_rows(result);
  if (rows.empty()) return {};
  std::string o = fmt::format("<table class=\"conditions\" id=\"{}\"><tbody>\n", id);
  for (const auto& [k, v] : rows) {
    o += fmt::format("<tr><th class=\"l\">{}</th><td class=\"wrap\">{}</td></tr>\n", html_escape(k), html_escape(v));
  }
  o += "</tbody></table>\n";
  o += "<details><summary>all conditions (JSON)</summary><pre>" + html_escape(result["conditions"].dump(2)) + "</pre></details>\n";
  return o;
}

std::string charts_html(const std::vector<Chart>& charts, const std::string& prefix) {
  std::string o;
  for (const auto& c : charts) {
    if (chart_has_data(c)) o += render_chart(c, prefix + "chart-" + c.key);
  }
  return o.empty() ? o : "<div class=\"charts\">\n" + o + "</div>\n";
}

/// Everything about one run (the whole page for a run; a point's details in a sweep).
/// "k: v, k: v" of an object's scalar members (numbers for people), skipping `skip`.
std::string scalars_text(const json& obj, std::initializer_list<std::string_view> skip) {
  std::string o;
  if (!obj.is_object()) return o;
  for (const auto& [k, v] : obj.items()) {
    if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
    std::string t = v.is_number() ? format_number(v.get<double>()) : scalar_text(v);
    if (v.is_null()) t = "–";
    if (t.empty()) continue;
    o += fmt::format("{}{}: {}", o.empty() ? "" : ", ", k, t);
  }
  return o;
}

std::string yes_no_badge(bool ok, const std::string& yes, const std::string& no) {
  return fmt::format("<span class=\"badge {}\">{}</span>", ok ? "valid" : "invalid", html_escape(ok ? yes : no));
}

/// How the measurement window was chosen: the window, the warmup (and its automatic detection),
/// the cooldown, and the minimums.
std::string window_html(const RunArtifact& a, const RunSummary& s, const std::string& prefix, int h) {
  const json& r = a.result;
  const json* w = find_path(r, {"window"});
  const json* mins = find_path(r, {"minimums"});
  const bool has_w = w != nullptr && w->is_object();
  const bool has_m = mins != nullptr && mins->is_object();
  if (!has_w && !has_m) return {};
  std::string rows;
  auto row = [&](const std::string& k, const std::string& v_html, const std::string& key) {
    rows += fmt::format("<tr data-key=\"{}\"><th class=\"l\">{}</th><td class=\"wrap\">{}</td></tr>\n", key, html_escape(k), v_html);
  };
  const json* detection = nullptr;
  if (has_w) {
    std::string text = fmt::format("{}–{} s ({} s)", format_number(s.window_start), format_number(s.window_end),
                                   format_number(s.window_s));
    if (auto m = str_at(*w, {"method"}); !m.empty()) text += ": " + m;
    row("window", html_escape(text), "window");
    if (const json* wu = find_path(*w, {"warmup"}); wu != nullptr && wu->is_object()) {
      const std::string method = str_at(*wu, {"method"});
      std::string t = method == "none"       ? "none: every request is measured"
                      : method == "requests" ? "by request count"
                      : method == "time"     ? "by time"
                      : method == "auto"     ? "automatic: the start of steady state, detected from the run's interval series"
                                             : method;
      if (const std::string more = scalars_text(*wu, {"method", "detection", "cooldown"}); !more.empty()) t += " (" + more + ")";
      if (std::isfinite(s.warmup) && s.warmup > 0) t += fmt::format("; {} requests discarded", format_number(s.warmup));
      row("warmup", html_escape(t), "warmup");
      detection = find_path(*wu, {"detection"});
      if (detection != nullptr && detection->is_object()) {
        const std::string dm = str_at(*detection, {"method"}).empty() ? std::string("MSER-5") : str_at(*detection, {"method"});
        const json* found = find_path(*detection, {"found"});
        const bool ok = found == nullptr || !found->is_boolean() || found->get<bool>();
        std::string d = dm;
        if (auto iv = num_at(*detection, {"interval_s"})) d += fmt::format(" over {} s intervals", format_number(*iv));
        if (ok) {
          if (auto st = num_at(*detection, {"start_s"})) d += fmt::format(": steady state from {} s", format_number(*st));
          if (auto ds = str_at(*detection, {"deciding_series"}); !ds.empty()) d += fmt::format(", decided by the '{}' series", ds);
          d += " (the latest truncation point of the series)";
        } else {
          d += ": no steady state found; the whole run is measured";
        }
        const std::string more = scalars_text(*detection, {"method", "interval_s", "found", "deciding_series", "start_s", "applied",
                                                           "note", "reason", "span_end_s"});
        row("steady-state detection",
            yes_no_badge(ok, "found", "not found") + " " + html_escape(d + (more.empty() ? "" : "; " + more)), "detection");
      }
    }
    const json* cool = find_path(*w, {"cooldown"});
    if ((cool == nullptr || cool->is_null()) && detection != nullptr) cool = find_path(*detection, {"cooldown"});
    if (cool == nullptr || cool->is_null()) cool = find_path(*w, {"warmup", "cooldown"});
    if (cool != nullptr && !cool->is_null()) {
      row("cooldown", html_escape(cool->is_object() ? scalars_text(*cool, {}) : scalar_text(*cool)), "cooldown");
    }
  }
  if (has_m) {
    std::string t;
    if (auto v = num_at(*mins, {"min_duration_s"})) t += fmt::format("window at least {} s", format_number(*v));
    if (auto v = num_at(*mins, {"min_requests"})) {
      t += fmt::format("{}at least {} measured requests", t.empty() ? "" : ", ", format_number(*v));
    }
    if (auto v = num_at(*mins, {"max_duration_s"})) t += fmt::format("{}the run at most {} s", t.empty() ? "" : "; ", format_number(*v));
    if (t.empty()) t = "no minimum duration or request count set";
    if (auto v = num_at(*mins, {"required_samples"})) {
      t += fmt::format("; the requested percentiles need at least {} measured requests", format_number(*v));
    }
    if (const json* mr = find_path(*mins, {"max_duration_reached"}); mr != nullptr && mr->is_boolean() && mr->get<bool>()) {
      t += "; the maximum duration was reached: issuing stopped there";
    }
    std::string badge;
    if (const json* met = find_path(*mins, {"met"}); met != nullptr && met->is_boolean()) {
      badge = yes_no_badge(met->get<bool>(), "met", "NOT met") + " ";
    }
    row("minimums", badge + html_escape(t), "minimums");
  }
  std::string o = fmt::format("<h{0}>Measurement window</h{0}>\n<table class=\"window\" id=\"{1}window\"><tbody>\n{2}</tbody></table>\n",
                              h, prefix, rows);
  const json* series = detection != nullptr ? find_path(*detection, {"series"}) : nullptr;
  if (series != nullptr && series->is_object() && !series->empty()) {
    o += fmt::format("<table class=\"detection\" id=\"{}warmup-detection\"><thead><tr><th class=\"l\">series</th><th>found</th>"
                     "<th>truncation (s)</th><th class=\"l\">reason</th></tr></thead><tbody>\n",
                     prefix);
    const std::string deciding = str_at(*detection, {"deciding_series"});
    for (const auto& [name, v] : series->items()) {
      const json* f = find_path(v, {"found"});
      o += fmt::format("<tr data-series=\"{}\"><td class=\"l\">{}{}</td><td>{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>\n",
                       html_escape(name), html_escape(name), name == deciding ? " (deciding)" : "",
                       f != nullptr && f->is_boolean() ? (f->get<bool>() ? "yes" : "no") : "–",
                       format_number(nan_at(v, {"truncation_s"})), html_escape(str_at(v, {"reason"})));
    }
    o += "</tbody></table>\n";
  }
  return o;
}

/// The server-metrics cross-checks: client vs server TTFT, and Little's law.
std::string cross_checks_html(const json& r, const std::string& prefix, int h) {
  const json* tc = find_path(r, {"ttft_cross_check"});
  const json* ll = find_path(r, {"littles_law"});
  const json* sm = find_path(r, {"server_metrics"});
  const bool has_tc = tc != nullptr && tc->is_object();
  const bool has_ll = ll != nullptr && ll->is_object();
  if (!has_tc && !has_ll) {
    if (sm != nullptr && sm->is_object() && !flag(*sm, "available", true) && !str_at(*sm, {"reason"}).empty()) {
      return fmt::format("<h{0}>Server cross-checks</h{0}>\n<p class=\"sub\" id=\"{1}cross-checks\">Server metrics: {2}</p>\n", h,
                         prefix, html_escape(str_at(*sm, {"reason"})));
    }
    return {};
  }
  std::string o = fmt::format("<h{0}>Server cross-checks</h{0}>\n<div class=\"checks\" id=\"{1}cross-checks\">\n", h, prefix);
  // Client vs server TTFT.
  o += "<h4>Client vs server TTFT</h4>\n";
  if (has_tc && flag(*tc, "available", false)) {
    const double diff = nan_at(*tc, {"mean_diff_ms"});
    const json* cm = find_path(*tc, {"count_matches"});
    const bool counts_differ = cm != nullptr && cm->is_boolean() && !cm->get<bool>();
    std::string bucket;
    if (const json* b = find_path(*tc, {"server_p50_bucket_ms"}); b != nullptr && b->is_array() && b->size() == 2 &&
                                                                (*b)[0].is_number() && (*b)[1].is_number()) {
      bucket = fmt::format(" <span class=\"u\" title=\"the histogram bucket holding the server's p50: its resolution\">"
                           "(bucket {}–{})</span>",
                           format_number((*b)[0].get<double>()), format_number((*b)[1].get<double>()));
    }
    o += fmt::format(
        "<table class=\"cross\" id=\"{}ttft-cross-check\"><thead><tr><th class=\"l\">TTFT</th><th>client (ms)</th>"
        "<th>server (ms)</th><th>client − server (ms)</th></tr></thead><tbody>\n"
        "<tr data-stat=\"mean\"><td class=\"l\">mean</td><td>{}</td><td>{}</td><td>{}</td></tr>\n"
        "<tr data-stat=\"p50\"><td class=\"l\">p50</td><td>{}</td><td>{}{}</td><td>{}</td></tr>\n"
        "<tr data-stat=\"count\"><td class=\"l\">requests</td><td>{}</td><td>{}</td><td>{}</td></tr>\n</tbody></table>\n",
        prefix, format_number(nan_at(*tc, {"client_mean_ms"})), format_number(nan_at(*tc, {"server_mean_ms"})),
        format_number(diff), format_number(nan_at(*tc, {"client_p50_ms"})), format_number(nan_at(*tc, {"server_p50_ms"})),
        bucket, format_number(nan_at(*tc, {"p50_diff_ms"})), format_number(nan_at(*tc, {"client_count"})),
        format_number(nan_at(*tc, {"server_count"})), counts_differ ? "differ" : (cm != nullptr ? "match" : "–"));
    std::string verdict;
    std::string cls = "valid";
    if (!std::isfinite(diff)) {
      verdict = "no difference computed";
      cls = "neutral";
    } else if (diff < 0) {
      // Per request the client's TTFT contains the server's (llmload-server's clock starts at the
      // kernel's receive time of the request): a negative difference of the means comes from the
      // populations (the server's histogram counts warmup and other clients' requests too).
      verdict = fmt::format("client below server by {} ms: the two cover different requests",
                            format_number(-diff));
      cls = "warn";
    } else if (counts_differ) {
      verdict = fmt::format("network + client overhead ≈ {} ms (populations differ: see the counts)", format_number(diff));
      cls = "warn";
    } else {
      verdict = fmt::format("network + client overhead ≈ {} ms", format_number(diff));
    }
    o += fmt::format("<p class=\"verdict\" id=\"{}ttft-cross-check-verdict\"><span class=\"badge {}\">{}</span> The difference of "
                     "the means estimates the network round trip, HTTP/TLS and the client's own parsing (plus whatever the "
                     "server does before its clock starts); it should be small and positive.</p>\n",
                     prefix, cls, html_escape(verdict));
    if (const json* notes = find_path(*tc, {"notes"}); notes != nullptr && notes->is_array() && !notes->empty()) {
      std::vector<std::string> n;
      for (const auto& x : *notes) {
        if (x.is_string()) n.push_back(x.get<std::string>());
      }
      o += notes_html(n);
    }
    if (auto cav = str_at(*tc, {"caveat"}); !cav.empty()) {
      o += "<details><summary>how to read it</summary><p class=\"chart-note\">" + html_escape(cav) + "</p></details>\n";
    }
  } else {
    const std::string why = has_tc ? str_at(*tc, {"reason"}) : "not computed";
    o += fmt::format("<p class=\"sub\" id=\"{}ttft-cross-check\">Not available: {}</p>\n", prefix, html_escape(why));
  }
  // Little's law.
  o += "<h4>Little's law: in flight = throughput × time in system</h4>\n";
  if (has_ll && flag(*ll, "available", false)) {
    const json* ag = find_path(*ll, {"agrees"});
    const bool agrees = ag != nullptr && ag->is_boolean() && ag->get<bool>();
    o += fmt::format("<p class=\"verdict\" id=\"{}littles-law-verdict\" data-agrees=\"{}\">{} deviation {} against a tolerance of "
                     "±{}</p>\n",
                     prefix, agrees ? "true" : "false",
                     yes_no_badge(agrees, "agrees: consistent", "does NOT agree: inconsistent"),
                     html_escape(signed_percent(nan_at(*ll, {"relative_deviation"}))),
                     html_escape(percent(nan_at(*ll, {"tolerance"}))));
    o += fmt::format(
        "<table class=\"cross\" id=\"{}littles-law\"><tbody>\n"
        "<tr data-key=\"server_mean_in_system\"><th class=\"l\">server's mean requests in system, L (running + waiting, its "
        "/metrics)</th><td>{}</td></tr>\n"
        "<tr data-key=\"client_throughput_x_mean_e2e\"><th class=\"l\">client's request throughput × mean E2E, X·W</th><td>{}</td></tr>\n"
        "<tr data-key=\"relative_deviation\"><th class=\"l\">deviation (L − X·W) / X·W</th><td>{}</td></tr>\n"
        "<tr data-key=\"tolerance\"><th class=\"l\">tolerance</th><td>±{}</td></tr>\n"
        "<tr data-key=\"samples\"><th class=\"l\">server samples in the window</th><td>{}</td></tr>\n</tbody></table>\n",
        prefix, format_number(nan_at(*ll, {"server_mean_in_system"})),
        format_number(nan_at(*ll, {"client_throughput_x_mean_e2e"})), signed_percent(nan_at(*ll, {"relative_deviation"})),
        percent(nan_at(*ll, {"tolerance"})), format_number(nan_at(*ll, {"samples"})));
    if (auto e = str_at(*ll, {"explanation"}); !e.empty()) o += "<p class=\"chart-note\">" + html_escape(e) + "</p>\n";
    if (auto cav = str_at(*ll, {"caveat"}); !cav.empty()) o += "<p class=\"chart-note\">Caveat: " + html_escape(cav) + ".</p>\n";
  } else {
    const std::string why = has_ll ? str_at(*ll, {"reason"}) : "not computed (no server series)";
    o += fmt::format("<p class=\"sub\" id=\"{}littles-law\">Not available: {}</p>\n", prefix, html_escape(why));
  }
  return o + "</div>\n";
}

/// A trial_summary key for people: "p99_ttft_ms" -> "p99 TTFT (ms)".
std::string metric_label(const std::string& key) {
  static const std::map<std::string, std::string> named = {
      {"request_throughput", "request throughput (req/s)"}, {"output_throughput", "output throughput (tokens/s)"},
      {"total_token_throughput", "total token throughput (tokens/s)"}, {"request_goodput", "request goodput (req/s)"},
      {"token_goodput", "token goodput (tokens/s)"}, {"attainment", "SLO attainment"}};
  if (auto it = named.find(key); it != named.end()) return it->second;
  for (const char* stat : {"mean", "median", "p90", "p95", "p99", "std"}) {
    const std::string pre = std::string(stat) + "_";
    if (key.rfind(pre, 0) != 0 || key.size() < pre.size() + 3 || key.substr(key.size() - 3) != "_ms") continue;
    std::string m = key.substr(pre.size(), key.size() - pre.size() - 3);
    if (m == "e2el") m = "e2e";
    std::string upper;
    for (char c : m) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return fmt::format("{} {} (ms)", std::string_view(stat) == "median" ? "p50" : stat, upper);
  }
  return key;
}

/// The order of trial_summary's rows: throughput first, then latency by metric and statistic,
/// then anything else.
std::vector<std::string> summary_keys(const json& ts) {
  std::vector<std::string> order = {"request_throughput", "output_throughput", "total_token_throughput", "request_goodput",
                                    "token_goodput", "attainment"};
  for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* st : {"mean", "median", "p90", "p95", "p99"}) order.push_back(fmt::format("{}_{}_ms", st, m));
  }
  std::vector<std::string> keys;
  for (const auto& k : order) {
    if (ts.contains(k)) keys.push_back(k);
  }
  for (const auto& [k, v] : ts.items()) {
    if (std::find(order.begin(), order.end(), k) == order.end()) keys.push_back(k);
  }
  return keys;
}

/// Where a report links to another report (a trial's): relative to the directory the page is
/// written to, and only when that report.html exists; "" otherwise.
std::string report_link(const std::string& target_dir, const HtmlReportOptions& options) {
  std::error_code ec;
  const fs::path target = fs::path(target_dir) / "report.html";
  if (!fs::exists(target, ec)) return {};
  const fs::path from = fs::weakly_canonical(fs::absolute(options.output_dir, ec), ec);
  const fs::path to = fs::weakly_canonical(fs::absolute(target, ec), ec);
  if (ec) return {};
  const fs::path rel = to.lexically_relative(from);
  return rel.empty() ? std::string() : rel.generic_string();
}

/// A trials artifact: the spread of every headline number, one row per trial, and each trial's
/// cross-checks.
std::string trials_html(const RunArtifact& a, const RunSummary& s, const HtmlReportOptions& options, const std::string& prefix,
                        int h) {
  const json& r = a.result;
  std::string o = fmt::format("<h{0}>Across {1} trials</h{0}>\n", h, s.n_trials);
  std::string seeds;
  if (const json* sd = find_path(r, {"conditions", "trials", "seeds"}); sd != nullptr && sd->is_array()) {
    for (const auto& x : *sd) seeds += (seeds.empty() ? "" : ", ") + scalar_text(x);
  }
  const double pause = nan_at(r, {"conditions", "trials", "pause_s"});
  o += "<p class=\"chart-note\">Independent repetitions (new connections, seeds derived from the base seed and the trial "
       "index";
  if (!seeds.empty()) o += ": " + html_escape(seeds);
  if (std::isfinite(pause) && pause > 0) o += fmt::format("; {} s pause between trials", format_number(pause));
  o += "). Every headline number is the median across trials with its [min–max] and a 95% confidence interval; best-of-N "
       "is never the headline.</p>\n";
  const json* ts = find_path(r, {"trial_summary"});
  if (ts != nullptr && ts->is_object() && !ts->empty()) {
    o += fmt::format("<table class=\"trial-summary\" id=\"{}trial-summary\"><thead><tr><th class=\"l\">metric</th><th>median</th>"
                     "<th>min–max</th><th>95% CI</th><th>CV</th><th class=\"l\">noisy</th></tr></thead><tbody>\n",
                     prefix);
    for (const auto& key : summary_keys(*ts)) {
      const auto sp = summary_spread(r, key);
      if (!sp) continue;
      const std::string ci_title = sp->ci_method.empty() && sp->ci_note.empty()
                                       ? std::string()
                                       : fmt::format(" title=\"{}\"", html_escape(sp->ci_method + (sp->ci_note.empty()
                                                                                                      ? ""
                                                                                                      : ": " + sp->ci_note)));
      o += fmt::format(
          "<tr data-metric=\"{}\"{}><td class=\"l\">{}</td><td>{}</td><td>{}–{}</td><td{}>{}</td><td>{}</td>"
          "<td class=\"l\">{}</td></tr>\n",
          html_escape(key), sp->noisy ? " class=\"noisy\"" : "", html_escape(metric_label(key)), format_number(sp->median),
          format_number(sp->min), format_number(sp->max), ci_title, ci_text(*sp), percent(sp->cv),
          sp->noisy ? fmt::format("<span class=\"badge warn\" title=\"{}\">noisy</span> CV above the threshold",
                                  html_escape(sp->noisy_reason))
                    : "–");
    }
    o += "</tbody></table>\n<p class=\"chart-note\">95% CI: of the median (order statistics) with 6 or more trials, else of "
         "the mean (Student t; assumes roughly normal trials); hover a CI for its method. CV: standard deviation / mean "
         "across trials; above the threshold (10% by default) a metric is flagged noisy.</p>\n";
  }
  // One row per trial.
  const json* tr = find_path(r, {"trials"});
  if (tr != nullptr && tr->is_array() && !tr->empty()) {
    o += fmt::format("<div class=\"scroll\"><table class=\"trials\" id=\"{}trials-table\"><thead><tr><th>trial</th><th>seed</th>"
                     "<th class=\"l\">report</th>"
                     "<th>throughput (req/s)</th><th>output tokens/s</th><th>goodput (req/s)</th><th>p99 TTFT (ms)</th>"
                     "<th>p99 TPOT (ms)</th><th>p99 E2E (ms)</th><th>completed</th><th>failed</th><th class=\"l\">validity</th>"
                     "<th class=\"l\">SLO</th><th class=\"l\">stopped early</th></tr></thead><tbody>\n",
                     prefix);
    for (std::size_t i = 0; i < tr->size(); ++i) {
      const json& t = (*tr)[i];
      const int num = static_cast<int>(num_at(t, {"trial"}).value_or(static_cast<double>(i + 1)));
      std::string dir = str_at(t, {"dir"});
      if (dir.empty()) dir = fmt::format("trial-{}", num);
      std::string link = "<span class=\"u\">no artifact</span>";
      for (std::size_t k = 0; k < a.trials.size(); ++k) {
        if (a.trial_numbers[k] != num) continue;
        const std::string href = report_link(a.trials[k].dir, options);
        link = href.empty() ? html_escape(dir) + " <span class=\"u\">(no report.html)</span>"
                            : fmt::format("<a href=\"{}\">{}/report.html</a>", html_escape(href), html_escape(dir));
      }
      const json* valid = find_path(t, {"valid"});
      const std::string validity = valid == nullptr || !valid->is_boolean() ? "–" : (valid->get<bool>() ? "valid" : "INVALID");
      const std::string sv = str_at(t, {"slo_verdict"});
      const auto stopped = stopped_reason(find_path(t, {"stopped_early"}));
      o += fmt::format(
          "<tr data-trial=\"{}\"><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"note\">{}</td></tr>\n",
          num, num, html_escape(scalar_text(t.value("seed", json()))), link, format_number(nan_at(t, {"request_throughput"})),
          format_number(nan_at(t, {"output_throughput"})), format_number(nan_at(t, {"request_goodput"})),
          format_number(nan_at(t, {"p99_ttft_ms"})), format_number(nan_at(t, {"p99_tpot_ms"})),
          format_number(nan_at(t, {"p99_e2el_ms"})), format_number(nan_at(t, {"completed"})), format_number(nan_at(t, {"failed"})),
          validity == "INVALID" ? "<span class=\"badge invalid\">INVALID</span>" : html_escape(validity),
          sv.empty() ? "–" : fmt::format("<span class=\"badge {}\">{}</span>", verdict_class(sv), html_escape(sv)),
          stopped ? html_escape(*stopped) : "–");
    }
    o += "</tbody></table></div>\n";
  }
  // Each trial's cross-checks (from its own result.json).
  bool any = false;
  std::string rows;
  for (std::size_t k = 0; k < a.trials.size(); ++k) {
    const json& tr_res = a.trials[k].result;
    const json* tc = find_path(tr_res, {"ttft_cross_check"});
    const json* ll = find_path(tr_res, {"littles_law"});
    const bool tc_ok = tc != nullptr && tc->is_object() && flag(*tc, "available", false);
    const bool ll_ok = ll != nullptr && ll->is_object() && flag(*ll, "available", false);
    if ((tc == nullptr || tc->is_null()) && (ll == nullptr || ll->is_null())) continue;
    any = true;
    std::string ll_text = "–";
    if (ll_ok) {
      const json* ag = find_path(*ll, {"agrees"});
      ll_text = fmt::format("{} {} (±{})", yes_no_badge(ag != nullptr && ag->is_boolean() && ag->get<bool>(), "agrees", "does NOT agree"),
                            html_escape(signed_percent(nan_at(*ll, {"relative_deviation"}))),
                            html_escape(percent(nan_at(*ll, {"tolerance"}))));
    } else if (ll != nullptr && ll->is_object()) {
      ll_text = "<span class=\"u\">" + html_escape("not available: " + str_at(*ll, {"reason"})) + "</span>";
    }
    rows += fmt::format("<tr data-trial=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>\n", a.trial_numbers[k],
                        a.trial_numbers[k], tc_ok ? format_number(nan_at(*tc, {"mean_diff_ms"})) : "–",
                        tc_ok ? format_number(nan_at(*tc, {"server_mean_ms"})) : "–", ll_text);
  }
  if (any) {
    o += fmt::format("<h{0}>Server cross-checks, each trial</h{0}>\n<table class=\"cross\" id=\"{1}trials-cross-checks\"><thead><tr>"
                     "<th>trial</th><th>TTFT client − server, mean (ms)</th><th>server mean TTFT (ms)</th><th class=\"l\">Little's "
                     "law</th></tr></thead><tbody>\n{2}</tbody></table>\n",
                     h, prefix, rows);
  }
  return o;
}

/// Everything about one run (the whole page for a run; a point's details in a sweep). A trials
/// artifact: the spread across trials, each trial's distributions, and trial 1 over time.
std::string run_body(const RunArtifact& a, const RunSummary& s, const HtmlReportOptions& options, const std::string& prefix,
                     int h) {
  std::string o;
  o += badges_html(s, prefix);
  o += notes_html(a.notes);
  if (s.trials) {
    o += fmt::format("<h{0}>Key metrics, median across trials</h{0}>\n", h);
    o += kv_html(a, s, prefix);
    o += trials_html(a, s, options, prefix, h);
    o += latency_table_html(s, prefix + "latency-table");
    o += errors_html(a.result);
    const std::string tr = charts_html(trial_charts(a.result), prefix);
    if (!tr.empty()) {
      o += fmt::format("<h{0}>Spread across trials</h{0}>\n", h);
      o += "<p class=\"chart-note\">One dot per trial; the median and, where computed, the 95% confidence interval as "
           "lines; × marks an invalid trial or one stopped early.</p>\n";
      o += tr;
    }
    const std::string pct = charts_html(trial_percentile_charts(a), prefix);
    if (!pct.empty()) {
      o += fmt::format("<h{0}>Latency distributions, each trial</h{0}>\n", h);
      o += "<p class=\"chart-note\">HdrHistogram-style, one curve per trial (from each trial's latency.hlog): curves that "
           "lie together are trials that agree.</p>\n";
      o += pct;
    }
    if (!a.trials.empty()) {
      const std::string which = fmt::format("trial {} of {}", a.trial_numbers.front(), s.n_trials);
      const std::string ts = charts_html(time_series_charts(a.trials.front(), options.interval_s, which), prefix);
      if (!ts.empty()) {
        o += fmt::format("<h{0}>Over time: trial {1}</h{0}>\n", h, a.trial_numbers.front());
        o += fmt::format("<p class=\"chart-note\">The time series of trial {} only (from its requests.jsonl); each trial's own "
                         "report has its own. The shaded warmup and drain are not in the statistics.</p>\n",
                         a.trial_numbers.front());
        o += ts;
      }
    }
  } else {
    o += fmt::format("<h{0}>Key metrics</h{0}>\n", h);
    o += kv_html(a, s, prefix);
    o += latency_table_html(s, prefix + "latency-table");
    o += slo_table_html(a.result);
    o += errors_html(a.result);
    o += window_html(a, s, prefix, h);
    o += cross_checks_html(a.result, prefix, h);
    const std::string pct = charts_html(percentile_charts(a), prefix);
    if (!pct.empty()) {
      o += fmt::format("<h{0}>Latency distributions</h{0}>\n", h);
      o += "<p class=\"chart-note\">HdrHistogram-style: x is the percentile on a log scale toward the tail (1/(1−p)), "
           "y the latency at that percentile";
      o += a.histogram_source == "latency.hlog" ? ", from latency.hlog (the measurement window).</p>\n"
                                                : ", from requests.jsonl (the measurement window).</p>\n";
      o += pct;
    }
    const std::string ts = charts_html(time_series_charts(a, options.interval_s), prefix);
    if (!ts.empty()) {
      o += fmt::format("<h{0}>Over time</h{0}>\n", h);
      o += "<p class=\"chart-note\">All requests of the run, from requests.jsonl; the shaded warmup and drain are not in "
           "the statistics.</p>\n";
      o += ts;
    }
    const std::string tr = charts_html(trial_charts(a.result), prefix);
    if (!tr.empty()) {
      o += fmt::format("<h{0}>Spread across trials</h{0}>\n", h);
      o += tr;
    }
  }
  const std::string cond = conditions_html(a.result, prefix + "conditions");
  if (!cond.empty()) {
    o += fmt::format("<h{0}>Conditions</h{0}>\n", h);
    o += cond;
  }
  return o;
}

std::string page(const std::string& title, const std::string& body) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<meta name=\"generator\" content=\"llmload ";
  o += kVersion;
  o += "\">\n<title>" + html_escape(title) + "</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n<main>\n";
  o += body;
  o += fmt::format("<footer>Generated by llmload {} (<code>llmload report</code>). Self-contained: no network access. "
                   "Definitions: docs/metrics.md; this page: docs/report.md.</footer>\n",
                   kVersion);
  o += "</main>\n<script>";
  o += kScript;
  o += "</script>\n</body>\n</html>\n";
  return o;
}

// ---------------------------------------------------------------------------------------------
// Sweeps

/// Latency of a sweep point in the SLO's view: the response-time view for ttft/e2e when the SLO
/// is judged there.
double sweep_latency(const RunArtifact& a, const RunSummary& s, const std::string& metric, const char* field) {
  if (s.slo_view == "response" && (metric == "ttft" || metric == "e2e")) {
    if (auto v = num_at(a.result, {"response_time", metric, field})) return *v;
  }
  if (auto v = num_at(a.result, {"latency", metric, field})) return *v;
  const LatRow* r = s.row(metric);
  if (r == nullptr) return kNaN;
  return std::string_view(field) == "p50_ms" ? r->p50 : r->p99;
}

/// A sweep point's latency: a run's value (n = 1), or for a trials artifact the median with
/// min–max of its trials' values (each in the SLO's view), else of result.json's vLLM-style keys.
Spread point_latency(const RunArtifact& a, const RunSummary& s, const std::string& metric, const char* field) {
  Spread sp;
  if (!s.trials) {
    sp.median = sweep_latency(a, s, metric, field);
    sp.n = std::isfinite(sp.median) ? 1 : 0;
    return sp;
  }
  std::vector<double> v;
  for (std::size_t k = 0; k < a.trials.size() && k < s.trial_sums.size(); ++k) {
    v.push_back(sweep_latency(a.trials[k], s.trial_sums[k], metric, field));
  }
  sp = spread_of_values(std::move(v));
  if (sp.n > 0) return sp;
  const char* vn = vllm_name(metric);
  if (vn == nullptr) return sp;
  const std::string key = fmt::format("{}_{}_ms", std::string_view(field) == "p50_ms" ? "median" : "p99", vn);
  if (auto ss = summary_spread(a.result, key); ss && std::isfinite(ss->median)) return *ss;
  sp = trial_spread(a, key);
  if (sp.n == 0 && num_at(a.result, {key})) {
    sp.median = nan_at(a.result, {key});
    sp.n = 1;
  }
  return sp;
}

double trial_request_throughput(const json& r) { return nan_at(r, {"request_throughput"}); }
double trial_output_throughput(const json& r) { return nan_at(r, {"output_throughput"}); }

/// A sweep point's headline number: the run's value, or for a trials artifact its median (the
/// headline) with the trials' min–max.
Spread point_value(const RunArtifact& a, double value, const std::string& key, double (*from_trial)(const json&)) {
  Spread sp;
  if (a.is_trials()) sp = trial_spread(a, key, from_trial);
  if (std::isfinite(value)) sp.median = value;
  if (sp.n == 0 && std::isfinite(value)) sp.n = 1;
  return sp;
}

void set_whisker(Series& s, const Spread& sp, bool x_axis, double scale = 1) {
  std::vector<double>& lo = x_axis ? s.x_lo : s.y_lo;
  std::vector<double>& hi = x_axis ? s.x_hi : s.y_hi;
  lo.push_back(sp.has_range() ? sp.min * scale : kNaN);
  hi.push_back(sp.has_range() ? sp.max * scale : kNaN);
}

std::string range_tip(const Spread& sp, double scale = 1) {
  if (!sp.has_range()) return {};
  return fmt::format(" [{}–{}] over {} trials", format_number(sp.min * scale), format_number(sp.max * scale), sp.n);
}

std::optional<std::size_t> capacity_index(const ReportInput& in) {
  if (!in.highest_pass) return std::nullopt;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < in.offered.size(); ++i) {
    if (!std::isfinite(in.offered[i])) continue;
    if (std::fabs(in.offered[i] - *in.highest_pass) <= 1e-9 * std::max(1.0, std::fabs(*in.highest_pass))) best = i;
  }
  return best;
}

/// The points that stopped early, as an "×" series over another series' points.
Series stopped_series(const std::vector<RunSummary>& sums, const Series& over) {
  Series st = make_series("stopped early", color::kRed, false, true);
  st.line = false;
  st.cross = true;
  for (std::size_t i = 0; i < sums.size() && i < over.x.size() && i < over.y.size(); ++i) {
    if (!sums[i].stopped_early) continue;
    st.x.push_back(over.x[i]);
    st.y.push_back(over.y[i]);
    st.tips.push_back(fmt::format("{}: stopped early ({})", sums[i].name, *sums[i].stopped_early));
  }
  return st;
}

std::vector<Chart> sweep_charts(const ReportInput& in, const std::vector<RunSummary>& sums) {
  std::vector<Chart> charts;
  const std::string unit = load_unit(in.load_kind);
  const std::string xl_offered = unit.empty() ? "offered load" : fmt::format("offered load ({})", unit);
  const auto cap = capacity_index(in);
  const bool any_trials = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.trials; });
  const bool any_stopped = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.stopped_early.has_value(); });
  const std::string trials_note =
      any_trials ? "points with trials: the median across trials, whiskers from the lowest to the highest trial" : "";
  auto with_notes = [&](std::string note) {
    if (!trials_note.empty()) note += (note.empty() ? "" : "; ") + trials_note;
    if (any_stopped) note += std::string(note.empty() ? "" : "; ") + "× marks a point stopped early (over-saturated)";
    return note;
  };
  auto point_tip = [&](std::size_t i) { return fmt::format("{}: offered {}", in.runs[i].name, load_text(in.offered[i], in.load_kind)); };
  std::vector<Spread> thr_spread, good_spread, out_spread, tgood_spread, att_spread;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const RunArtifact& a = in.runs[i];
    thr_spread.push_back(point_value(a, sums[i].request_throughput, "request_throughput", trial_request_throughput));
    good_spread.push_back(point_value(a, sums[i].request_goodput, "request_goodput", trial_request_goodput));
    out_spread.push_back(point_value(a, sums[i].output_throughput, "output_throughput", trial_output_throughput));
    tgood_spread.push_back(point_value(a, sums[i].token_goodput, "token_goodput", trial_token_goodput));
    att_spread.push_back(point_value(a, sums[i].attainment, "attainment", trial_attainment));
  }
  // Latency-throughput, one chart per metric.
  const std::pair<const char*, const char*> metrics[] = {{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"e2e", "E2E"}};
  for (const auto& [key, label] : metrics) {
    std::vector<double> x;
    std::vector<Spread> p99, p50;
    double mx = 0;
    for (std::size_t i = 0; i < sums.size(); ++i) {
      x.push_back(sums[i].request_throughput);
      p99.push_back(point_latency(in.runs[i], sums[i], key, "p99_ms"));
      p50.push_back(point_latency(in.runs[i], sums[i], key, "p50_ms"));
      for (double v : {p99.back().median, p99.back().max}) {
        if (std::isfinite(v)) mx = std::max(mx, v);
      }
    }
    std::optional<double> bound;
    for (const auto& r : in.runs) {
      if (auto b = slo_bound(r.result, key)) bound = b;
      for (const auto& t : r.trials) {
        if (auto b = slo_bound(t.result, key)) bound = b;
      }
    }
    const auto [div, u] = latency_unit(std::max(mx, bound.value_or(0)));
    Chart c;
    c.key = std::string("latency-throughput-") + key;
    c.title = fmt::format("{} versus throughput", label);
    c.x_label = any_trials ? "request throughput (req/s, median across trials)" : "request throughput (req/s)";
    c.y_label = fmt::format("{} ({})", label, u);
    c.pad_x = true;
    Series s99 = make_series("p99", color::kVermillion, false, true);
    Series s50 = make_series("p50", color::kBlue, true, true);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      s99.x.push_back(x[i]);
      s50.x.push_back(x[i]);
      s99.y.push_back(p99[i].median / div);
      s50.y.push_back(p50[i].median / div);
      set_whisker(s99, p99[i], false, 1 / div);
      set_whisker(s50, p50[i], false, 1 / div);
      set_whisker(s99, thr_spread[i], true);
      set_whisker(s50, thr_spread[i], true);
      s99.tips.push_back(fmt::format("{}: {} req/s{}, p99 {} {}{}", point_tip(i), format_number(x[i]), range_tip(thr_spread[i]),
                                     format_number(s99.y[i]), u, range_tip(p99[i], 1 / div)));
      s50.tips.push_back(fmt::format("{}: {} req/s, p50 {} {}{}", point_tip(i), format_number(x[i]), format_number(s50.y[i]), u,
                                     range_tip(p50[i], 1 / div)));
    }
    if (bound) c.hlines.push_back({*bound / div, fmt::format("SLO {} {}", format_number(*bound / div), u), color::kRed});
    if (cap && std::isfinite(x[*cap]) && std::isfinite(s99.y[*cap])) {
      c.callouts.push_back({x[*cap], s99.y[*cap], fmt::format("capacity ({})", load_text(in.offered[*cap], in.load_kind))});
    }
    Series stopped = stopped_series(sums, s99);
    c.series.push_back(std::move(s50));
    c.series.push_back(std::move(s99));
    if (!stopped.x.empty()) c.series.push_back(std::move(stopped));
    const bool view_rt = !sums.empty() && sums.front().slo_view == "response" && (std::string_view(key) != "tpot");
    c.note = with_notes(view_rt ? "measured from t_intended (the view the SLO is judged in)" : "measured from t_send");
    charts.push_back(std::move(c));
  }
  auto capacity_marks = [&](Chart& c) {
    if (in.highest_pass && in.lowest_fail && *in.lowest_fail > *in.highest_pass) {
      c.bands.push_back({*in.highest_pass, *in.lowest_fail, "capacity bracket", true});
    }
    if (in.highest_pass) c.vlines.push_back({*in.highest_pass, fmt::format("capacity {}", format_number(*in.highest_pass)), "#1d232a"});
  };
  auto value_series = [&](std::string name, const char* col, bool dashed, const std::vector<Spread>& sp, double scale,
                          const std::string& what, const std::string& u) {
    Series s = make_series(std::move(name), col, dashed, true);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      s.x.push_back(in.offered[i]);
      s.y.push_back(sp[i].median * scale);
      set_whisker(s, sp[i], false, scale);
      s.tips.push_back(fmt::format("{}: {} {}{}{}", point_tip(i), what, format_number(sp[i].median * scale), u, range_tip(sp[i], scale)));
    }
    return s;
  };
  {
    Chart c;
    c.key = "goodput";
    c.title = "Throughput and goodput versus offered load";
    c.x_label = xl_offered;
    c.y_label = "requests/s";
    c.pad_x = true;
    Series thr = value_series("throughput", color::kBlue, false, thr_spread, 1, "throughput", " req/s");
    Series good = value_series("goodput", color::kGreen, true, good_spread, 1, "goodput", " req/s");
    if (in.load_kind == "rate") {
      Series off = make_series("offered", color::kGray, true, false);
      for (double v : in.offered) {
        off.x.push_back(v);
        off.y.push_back(v);
      }
      c.series.push_back(std::move(off));
    }
    Series stopped = stopped_series(sums, thr);
    c.series.push_back(std::move(thr));
    c.series.push_back(std::move(good));
    if (!stopped.x.empty()) c.series.push_back(std::move(stopped));
    capacity_marks(c);
    c.note = with_notes("");
    charts.push_back(std::move(c));
  }
  {
    Chart c;
    c.key = "goodput-tokens";
    c.title = "Output tokens/s and token goodput versus offered load";
    c.x_label = xl_offered;
    c.y_label = "tokens/s";
    c.pad_x = true;
    Series thr = value_series("output tokens/s", color::kBlue, false, out_spread, 1, "", " tokens/s");
    Series good = value_series("token goodput", color::kGreen, true, tgood_spread, 1, "token goodput", " tokens/s");
    Series stopped = stopped_series(sums, thr);
    c.series.push_back(std::move(thr));
    c.series.push_back(std::move(good));
    if (!stopped.x.empty()) c.series.push_back(std::move(stopped));
    capacity_marks(c);
    c.note = with_notes("");
    charts.push_back(std::move(c));
  }
  {
    Chart c;
    c.key = "attainment";
    c.title = "SLO attainment versus offered load";
    c.x_label = xl_offered;
    c.y_label = "good requests (%)";
    c.pad_x = true;
    c.y_max = 100;
    Series att = value_series("attainment", color::kGreen, false, att_spread, 100, "", "% good");
    for (std::size_t i = 0; i < sums.size() && i < att.tips.size(); ++i) {
      att.tips[i] += fmt::format(" ({})", sums[i].slo_verdict.empty() ? "no verdict" : sums[i].slo_verdict);
    }
    Series stopped = stopped_series(sums, att);
    c.series.push_back(std::move(att));
    if (!stopped.x.empty()) c.series.push_back(std::move(stopped));
    c.hlines.push_back({99, "99%", color::kRed});
    capacity_marks(c);
    c.note = with_notes("");
    charts.push_back(std::move(c));
  }
  // Percentile distributions of every point, overlaid (a trials point: its trials pooled).
  for (const auto& [key, label] : {std::pair{"ttft", "TTFT"}, std::pair{"tpot", "TPOT"}, std::pair{"e2e", "E2E"}}) {
    Chart c;
    c.key = std::string("pct-by-load-") + key;
    c.title = fmt::format("{} percentile distribution by offered load", label);
    c.x_label = "percentile (log scale toward the tail)";
    c.percentile_x = true;
    std::vector<std::optional<HdrHistogram>> hists;
    double mx = 0;
    for (const auto& r : in.runs) {
      std::optional<HdrHistogram> h;
      const std::string metric_key = key;  // clang 14 cannot capture a structured binding
      auto take = [&](const RunArtifact& x) {
        auto it = x.histograms.find(metric_key);
        if (it == x.histograms.end() || it->second.total_count() == 0) return;
        if (!h) {
          h = it->second;
        } else {
          h->add(it->second);
        }
      };
      if (r.is_trials()) {
        for (const auto& t : r.trials) take(t);
      } else {
        take(r);
      }
      if (h) mx = std::max(mx, static_cast<double>(h->max()) / 1e3);
      hists.push_back(std::move(h));
    }
    const auto [div, u] = latency_unit(mx);
    c.y_label = fmt::format("{} ({})", label, u);
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
      if (!hists[i]) continue;
      Series s;
      s.name = std::isfinite(in.offered[i]) ? load_text(in.offered[i], in.load_kind) : in.runs[i].name;
      s.color = ramp_color(i, in.runs.size());
      for (const auto& [p, v] : percentile_curve(*hists[i])) {
        s.x.push_back(percentile_x(p, hists[i]->total_count()));
        s.y.push_back(v / div);
      }
      c.series.push_back(std::move(s));
    }
    std::optional<double> bound;
    for (const auto& r : in.runs) {
      if (auto b = slo_bound(r.result, key)) bound = b;
      for (const auto& t : r.trials) {
        if (auto b = slo_bound(t.result, key)) bound = b;
      }
    }
    if (bound) c.hlines.push_back({*bound / div, fmt::format("SLO {} {}", format_number(*bound / div), u), color::kRed});
    c.note = any_trials ? "from t_send; a point with trials: the requests of all its trials pooled" : "from t_send";
    charts.push_back(std::move(c));
  }
  return charts;
}

std::string capacity_text(const ReportInput& in) {
  const std::string u = load_unit(in.load_kind);
  auto v = [&](double x) { return u.empty() ? format_number(x) : format_number(x) + " " + u; };
  if (in.highest_pass && in.lowest_fail) {
    return fmt::format("capacity {} (highest passing load; the lowest failing is {})", v(*in.highest_pass), v(*in.lowest_fail));
  }
  if (in.highest_pass) return fmt::format("capacity at least {} (every probed load passed)", v(*in.highest_pass));
  if (in.lowest_fail) return fmt::format("capacity below {} (no probed load passed)", v(*in.lowest_fail));
  return "capacity unknown (no conclusive SLO verdict)";
}

/// sweep.json's "slo": a spec string, or an object holding one.
std::string sweep_slo_text(const ReportInput& in) {
  const json* s = find_path(in.sweep_json, {"slo"});
  if (s == nullptr || s->is_null()) return {};
  if (s->is_string()) return s->get<std::string>();
  if (s->is_object()) return str_at(*s, {"spec"}).empty() ? s->dump() : str_at(*s, {"spec"});
  return scalar_text(*s);
}

/// The capacity search's details from sweep.json "capacity" (analysis::to_json(CapacityResult)):
/// why it stopped, the goodput and throughput at capacity, the tolerance and bracket width.
std::string capacity_details(const ReportInput& in) {
  const json* c = find_path(in.sweep_json, {"capacity"});
  if (c == nullptr || !c->is_object()) return {};
  std::vector<std::string> parts;
  if (auto v = num_at(*c, {"goodput_at_capacity"})) parts.push_back(fmt::format("goodput at capacity {} req/s", format_number(*v)));
  if (auto v = num_at(*c, {"throughput_at_capacity"})) parts.push_back(fmt::format("throughput {} req/s", format_number(*v)));
  if (auto v = num_at(*c, {"relative_width"})) parts.push_back(fmt::format("bracket width {}", percent(*v)));
  if (auto v = num_at(*c, {"tolerance"})) parts.push_back(fmt::format("tolerance {}", percent(*v)));
  if (auto v = str_at(*c, {"stop"}); !v.empty()) parts.push_back("stopped: " + v);
  std::string o;
  for (const auto& p : parts) o += (o.empty() ? "" : "; ") + p;
  if (auto e = str_at(*c, {"explanation"}); !e.empty()) o += (o.empty() ? "" : ". ") + e;
  return o;
}

std::string sweep_table_html(const ReportInput& in, const std::vector<RunSummary>& sums) {
  const bool any_trials = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.trials; });
  const bool any_stopped = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.stopped_early.has_value(); });
  std::string o = "<div class=\"scroll\"><table id=\"sweep-table\"><thead><tr><th class=\"l\">point</th><th>offered</th>";
  if (any_trials) o += "<th>trials</th>";
  o += "<th>throughput (req/s)</th><th>goodput (req/s)</th><th>output tokens/s</th><th>attainment</th><th>p99 TTFT (ms)</th>"
       "<th>p99 TPOT (ms)</th><th>p99 E2E (ms)</th><th>failed</th><th class=\"l\">SLO</th><th class=\"l\">validity</th>";
  if (any_stopped) o += "<th class=\"l\">stopped early</th>";
  o += "</tr></thead><tbody>\n";
  const auto cap = capacity_index(in);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const RunSummary& s = sums[i];
    const RunArtifact& a = in.runs[i];
    std::string cls;
    if (cap && *cap == i) cls = " class=\"capacity\"";
    if (s.stopped_early) cls = " class=\"stopped\"";
    o += fmt::format("<tr{} data-point=\"{}\"><td class=\"l\"><a href=\"#point-{}\">{}</a>{}</td><td>{}</td>", cls, i, i,
                     html_escape(s.name), cap && *cap == i ? "<br>◀ capacity" : "", html_escape(load_text(in.offered[i], in.load_kind)));
    if (any_trials) o += fmt::format("<td>{}</td>", s.trials ? std::to_string(s.n_trials) : "1");
    const Spread att = point_value(a, s.attainment, "attainment", trial_attainment);
    std::string att_text = percent(att.median);
    if (att.has_range() && att.max > att.min) {
      att_text += fmt::format("<br><span class=\"rng\">[{}–{}]</span>", percent(att.min), percent(att.max));
    }
    o += fmt::format(
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td>"
        "<td class=\"l\">{}</td>",
        spread_cell(point_value(a, s.request_throughput, "request_throughput", trial_request_throughput)),
        spread_cell(point_value(a, s.request_goodput, "request_goodput", trial_request_goodput)),
        spread_cell(point_value(a, s.output_throughput, "output_throughput", trial_output_throughput)), att_text,
        spread_cell(point_latency(a, s, "ttft", "p99_ms")), spread_cell(point_latency(a, s, "tpot", "p99_ms")),
        spread_cell(point_latency(a, s, "e2e", "p99_ms")), format_number(s.failed),
        s.slo_verdict.empty() ? "–" : fmt::format("<span class=\"badge {}\">{}</span>", verdict_class(s.slo_verdict), s.slo_verdict),
        s.validity == "INVALID" ? fmt::format("<span class=\"badge invalid\" title=\"{}\">INVALID</span>", html_escape(s.reasons_text()))
                                : html_escape(s.validity.empty() ? "–" : s.validity));
    if (any_stopped) {
      o += fmt::format("<td class=\"note\">{}</td>", s.stopped_early ? html_escape(*s.stopped_early) : "–");
    }
    o += "</tr>\n";
  }
  o += "</tbody></table></div>\n";
  if (any_trials) {
    o += "<p class=\"chart-note\">A point with trials: the median across its trials, [min–max] below it.</p>\n";
  }
  if (!sums.empty() && sums.front().slo_view == "response") {
    o += "<p class=\"chart-note\">p99 TTFT and E2E measured from t_intended, the view the SLO is judged in.</p>\n";
  }
  return o;
}

std::vector<RunSummary> summaries(const ReportInput& in) {
  std::vector<RunSummary> sums;
  for (std::size_t i = 0; i < in.runs.size(); ++i) {
    RunSummary s = summarize(in.runs[i], in.offered[i], in.load_kind);
    // sweep.json's own record of the point, for what the point's artifact does not say.
    const json& e = i < in.point_entries.size() ? in.point_entries[i] : json();
    if (s.slo_verdict.empty()) s.slo_verdict = point_verdict(json(), e);
    if (!s.stopped_early) s.stopped_early = stopped_reason(find_path(e, {"stopped_early"}));
    sums.push_back(std::move(s));
  }
  return sums;
}

void write_file(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw ReportWriteError(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
    out << text;
    out.flush();
    if (!out) throw ReportWriteError(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) throw ReportWriteError(fmt::format("cannot write {}: {}", p.string(), ec.message()));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API

std::string format_number(double v) {
  if (std::isnan(v)) return "–";
  if (std::isinf(v)) return v > 0 ? "∞" : "−∞";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  std::string s;
  if (a >= 100 || (v == std::round(v) && a < 1e15)) {
    s = fmt::format("{:.0f}", v);
  } else if (a >= 10) {
    s = fmt::format("{:.1f}", v);
  } else if (a >= 1) {
    s = fmt::format("{:.2f}", v);
  } else if (a >= 0.001) {
    s = fmt::format("{:.3f}", v);
  } else {
    s = fmt::format("{:.2g}", v);
  }
  if (a >= 10000) {
    const std::size_t start = s[0] == '-' ? 1 : 0;
    for (auto i = static_cast<std::ptrdiff_t>(s.size()) - 3; i > static_cast<std::ptrdiff_t>(start); i -= 3) {
      s.insert(static_cast<std::size_t>(i), ",");
    }
  }
  return s;
}

namespace {

enum class ReadMode { kTop, kTrialWithRecords, kTrialHistogramsOnly };

RunArtifact read_artifact(const std::string& dir, ReadMode mode);

/// The trials of a trials artifact: result.json "trials"[].dir (default trial-<n>), else the
/// directories trial-1, trial-2, ... that exist.
void read_trials(RunArtifact& a, const fs::path& root) {
  const std::string rp = (root / "result.json").string();
  std::vector<std::pair<int, std::string>> dirs;
  const json* tr = find_path(a.result, {"trials"});
  if (tr != nullptr && !tr->is_null()) {
    if (!tr->is_array()) {
      throw ReportError(fmt::format("{}: \"trials\" is not an array (a trials artifact lists its trials: "
                                    "[{{\"trial\": 1, \"dir\": \"trial-1\", ...}}, ...])",
                                    rp));
    }
    for (std::size_t i = 0; i < tr->size(); ++i) {
      const json& t = (*tr)[i];
      if (!t.is_object()) throw ReportError(fmt::format("{}: trials[{}] is not an object", rp, i));
      const int num = static_cast<int>(num_at(t, {"trial"}).value_or(static_cast<double>(i + 1)));
      std::string d = str_at(t, {"dir"});
      if (d.empty()) d = fmt::format("trial-{}", num);
      dirs.emplace_back(num, d);
    }
  } else {
    std::error_code ec;
    for (int k = 1; fs::is_directory(root / fmt::format("trial-{}", k), ec); ++k) dirs.emplace_back(k, fmt::format("trial-{}", k));
  }
  for (const auto& [num, d] : dirs) {
    fs::path pd(d);
    if (pd.is_relative()) pd = root / pd;
    std::error_code ec;
    if (!fs::is_directory(pd, ec) || !holds_artifact(pd)) {
      a.notes.push_back(fmt::format("trial {} ('{}'): no artifact there (not run yet, or interrupted); it is left out", num, d));
      continue;
    }
    RunArtifact t = read_artifact(pd.string(), a.trials.empty() ? ReadMode::kTrialWithRecords : ReadMode::kTrialHistogramsOnly);
    t.name = d;
    for (const auto& n : t.notes) a.notes.push_back(fmt::format("trial {}: {}", num, n));
    a.trials.push_back(std::move(t));
    a.trial_numbers.push_back(num);
  }
  if (a.trials.empty()) {
    a.notes.push_back("no trial directory holds an artifact: no distributions or time series, only result.json's numbers");
  }
}

RunArtifact read_artifact(const std::string& dir, ReadMode mode) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) throw ReportError(fmt::format("'{}' does not exist", dir));
  if (!fs::is_directory(root, ec)) {
    throw ReportError(fmt::format("'{}' is not a directory: give the directory that `llmload run --output` wrote", dir));
  }
  RunArtifact a;
  a.dir = dir;
  a.name = name_of(root);
  const auto result_text = read_if_exists(root / "result.json");
  const auto records_text = read_if_exists(root / "requests.jsonl");
  const auto hlog_text = read_if_exists(root / "latency.hlog");
  if (!result_text && !records_text && !hlog_text) {
    throw ReportError(fmt::format("'{}' holds no llmload artifact: no result.json, requests.jsonl or latency.hlog", dir));
  }
  if (result_text) {
    a.result = parse_json_text(root / "result.json", *result_text);
    if (!a.result.is_object()) throw ReportError(fmt::format("{}: expected a JSON object", (root / "result.json").string()));
    if (flag(a.result, "interrupted", false)) {
      a.notes.push_back("the run was interrupted: results cover only what was measured before the signal");
    }
  } else {
    a.result = nullptr;
    a.notes.push_back("no result.json (an interrupted or unfinished run?): no verdicts, window or headline throughput; "
                      "what is shown is computed from the other files");
  }
  if (mode == ReadMode::kTop && a.result.is_object() &&
      (str_at(a.result, {"artifact"}) == "trials" || (a.result.contains("trial_summary") && a.result["trial_summary"].is_object()))) {
    // A trials artifact: its requests and histograms are in its trials' directories.
    a.kind = "trials";
    read_trials(a, root);
    return a;
  }
  const bool skip_records = mode == ReadMode::kTrialHistogramsOnly && hlog_text.has_value();
  if (records_text && !skip_records) {
    a.has_records = true;
    const std::string& text = *records_text;
    const std::string path = (root / "requests.jsonl").string();
    std::size_t pos = 0, line_no = 0;
    while (pos < text.size()) {
      const std::size_t nl = text.find('\n', pos);
      const bool unterminated = nl == std::string::npos;
      const std::size_t end = unterminated ? text.size() : nl;
      std::string_view line(text.data() + pos, end - pos);
      pos = unterminated ? text.size() : nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      json j = json::parse(line.begin(), line.end(), nullptr, false);
      if (j.is_discarded()) {
        if (unterminated) {
          a.notes.push_back(fmt::format("requests.jsonl: the last line ({}) is cut off (the run was stopped while "
                                        "writing?); it is left out",
                                        line_no));
          break;
        }
        throw ReportError(fmt::format("{}: line {} is not valid JSON", path, line_no));
      }
      try {
        a.records.push_back(record_from_json(j));
      } catch (const MergeError& e) {
        throw ReportError(fmt::format("{}: line {}: {}", path, line_no, e.what()));
      }
    }
    if (a.records.empty()) a.notes.push_back("requests.jsonl holds no request");
  } else if (!records_text) {
    a.notes.push_back("no requests.jsonl: no time series");
  }
  if (hlog_text) {
    std::istringstream in(*hlog_text);
    try {
      HlogFile f = read_hlog(in);
      for (auto& iv : f.intervals) {
        const std::string tag = iv.tag.value_or("untagged");
        auto [it, inserted] = a.histograms.try_emplace(tag, iv.histogram);
        if (!inserted) it->second.add(iv.histogram);
      }
    } catch (const std::exception& e) {
      throw ReportError(fmt::format("{}: {}", (root / "latency.hlog").string(), e.what()));
    }
    a.histogram_source = "latency.hlog";
    if (a.histograms.empty()) a.notes.push_back("latency.hlog holds no histogram");
  }
  if (a.histograms.empty() && !a.records.empty()) {
    histograms_from_records(a);
    if (!a.histograms.empty()) {
      a.histogram_source = "requests.jsonl";
      if (!hlog_text) {
        a.notes.push_back("no latency.hlog: the percentile distributions are recomputed from requests.jsonl (without ITL, "
                          "which needs the per-event gaps)");
      }
    }
  } else if (!hlog_text) {
    a.notes.push_back("no latency.hlog: no percentile distributions");
  }
  return a;
}

}  // namespace

RunArtifact read_run_artifact(const std::string& dir) { return read_artifact(dir, ReadMode::kTop); }

ReportInput read_report_input(const std::string& dir) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::exists(root, ec)) throw ReportError(fmt::format("'{}' does not exist", dir));
  if (!fs::is_directory(root, ec)) {
    throw ReportError(fmt::format("'{}' is not a directory: give the directory that `llmload run --output` wrote", dir));
  }
  ReportInput in;
  in.dir = dir;
  struct Point {
    RunArtifact a;
    double offered;
    json entry;
  };
  std::vector<Point> points;
  std::vector<std::string> kinds;
  const fs::path sweep_path = root / "sweep.json";
  if (auto text = read_if_exists(sweep_path)) {
    in.sweep = true;
    const json sj = parse_json_text(sweep_path, *text);
    in.sweep_json = sj;
    const std::string sp = sweep_path.string();
    if (!sj.is_object()) throw ReportError(fmt::format("{}: expected an object {{\"points\": [...]}}", sp));
    const json* pts = find_path(sj, {"points"});
    if (pts == nullptr || !pts->is_array()) {
      throw ReportError(fmt::format("{}: missing \"points\" (an array of {{\"dir\": ..., \"offered\": ...}})", sp));
    }
    for (std::size_t i = 0; i < pts->size(); ++i) {
      const json& p = (*pts)[i];
      const json* d = find_path(p, {"dir"});
      if (d == nullptr || !d->is_string() || d->get<std::string>().empty()) {
        throw ReportError(fmt::format("{}: points[{}] needs \"dir\" (a directory, relative to {})", sp, i, dir));
      }
      double offered = kNaN;
      if (const json* o = find_path(p, {"offered"}); o != nullptr && !o->is_null()) {
        if (!o->is_number()) throw ReportError(fmt::format("{}: points[{}].offered is not a number", sp, i));
        offered = o->get<double>();
      }
      fs::path pd(d->get<std::string>());
      if (pd.is_relative()) pd = root / pd;
      if (!fs::is_directory(pd, ec) || !holds_artifact(pd)) {
        in.notes.push_back(fmt::format("sweep.json points[{}] ('{}'): no artifact there (not run yet, or an interrupted "
                                       "sweep); left out",
                                       i, d->get<std::string>()));
        continue;
      }
      RunArtifact a = read_run_artifact(pd.string());
      a.name = d->get<std::string>();
      const Load l = offered_of_artifact(a);
      if (!std::isfinite(offered)) offered = l.value;
      if (!l.kind.empty()) kinds.push_back(l.kind);
      points.push_back({std::move(a), offered, p});
    }
    if (const json* cap = find_path(sj, {"capacity"}); cap != nullptr && !cap->is_null()) {
      if (!cap->is_object()) throw ReportError(fmt::format("{}: \"capacity\" is not an object", sp));
      for (const char* k : {"highest_pass", "lowest_fail"}) {
        const json* v = find_path(*cap, {k});
        if (v == nullptr || v->is_null()) continue;
        if (!v->is_number()) throw ReportError(fmt::format("{}: capacity.{} is not a number", sp, k));
        (std::string_view(k) == "highest_pass" ? in.highest_pass : in.lowest_fail) = v->get<double>();
      }
      if (in.highest_pass || in.lowest_fail) in.capacity_source = "sweep.json";
    }
    for (const char* k : {"load_kind", "load"}) {
      if (auto s = str_at(sj, {k}); s == "rate" || s == "concurrency") kinds.insert(kinds.begin(), s);
    }
    if (points.empty()) throw ReportError(fmt::format("{}: none of its points has an artifact yet", sp));
  } else if (holds_artifact(root)) {
    RunArtifact a = read_run_artifact(dir);
    const Load l = offered_of_artifact(a);
    if (!l.kind.empty()) kinds.push_back(l.kind);
    points.push_back({std::move(a), l.value, nullptr});
  } else {
    std::vector<fs::path> subdirs;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      std::error_code ec2;
      if (!e.is_directory(ec2)) continue;
      if (fs::exists(e.path() / "result.json", ec2) || fs::exists(e.path() / "requests.jsonl", ec2)) subdirs.push_back(e.path());
    }
    if (ec) throw ReportError(fmt::format("'{}': cannot list the directory: {}", dir, ec.message()));
    if (subdirs.empty()) {
      throw ReportError(fmt::format("'{}' holds no llmload artifact: no result.json or requests.jsonl, no sweep.json, and no "
                                    "subdirectory holding a result.json",
                                    dir));
    }
    std::sort(subdirs.begin(), subdirs.end());
    in.sweep = true;
    if (std::all_of(subdirs.begin(), subdirs.end(), [](const fs::path& d) { return d.filename().string().rfind("trial-", 0) == 0; })) {
      in.notes.push_back("these look like the trials of an unfinished `llmload run --trials` (no result.json at the top, "
                         "which holds their medians): each trial is shown as a point");
    }
    for (const auto& d : subdirs) {
      RunArtifact a = read_run_artifact(d.string());
      const Load l = offered_of_artifact(a);
      if (!l.kind.empty()) kinds.push_back(l.kind);
      points.push_back({std::move(a), l.value, nullptr});
    }
  }
  if (!kinds.empty()) {
    in.load_kind = kinds.front();
    if (std::any_of(kinds.begin(), kinds.end(), [&](const std::string& k) { return k != in.load_kind; })) {
      in.notes.push_back("the points mix request rates and concurrencies: the offered-load axis is not one quantity");
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& x, const Point& y) {
    if (std::isfinite(x.offered) != std::isfinite(y.offered)) return std::isfinite(x.offered);
    return std::isfinite(x.offered) && x.offered < y.offered;
  });
  for (auto& p : points) {
    in.runs.push_back(std::move(p.a));
    in.offered.push_back(p.offered);
    in.point_entries.push_back(std::move(p.entry));
  }
  std::vector<std::string> verdicts;
  for (std::size_t i = 0; i < in.runs.size(); ++i) verdicts.push_back(point_verdict(in.runs[i].result, in.point_entries[i]));
  const bool conclusive =
      std::any_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return v == "PASS" || v == "FAIL"; });
  if (in.sweep && !in.highest_pass && !in.lowest_fail && !conclusive &&
      std::any_of(verdicts.begin(), verdicts.end(), [](const std::string& v) { return !v.empty(); })) {
    in.notes.push_back("no point has a conclusive SLO verdict (PASS or FAIL): the capacity is unknown; give each point "
                       "more requests (a p99 verdict needs at least 459 in the window)");
  }
  if (in.sweep && !in.highest_pass && !in.lowest_fail && conclusive) {
    std::optional<double> lowest_fail;
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
      const std::string& v = verdicts[i];
      if ((v == "FAIL" || v == "INCONCLUSIVE") && std::isfinite(in.offered[i])) {
        if (!lowest_fail || in.offered[i] < *lowest_fail) lowest_fail = in.offered[i];
      }
    }
    std::optional<double> highest_pass;
    for (std::size_t i = 0; i < in.runs.size(); ++i) {
      if (verdicts[i] != "PASS" || !std::isfinite(in.offered[i])) continue;
      if (lowest_fail && in.offered[i] >= *lowest_fail) continue;
      if (!highest_pass || in.offered[i] > *highest_pass) highest_pass = in.offered[i];
    }
    in.highest_pass = highest_pass;
    in.lowest_fail = lowest_fail;
    if (highest_pass || lowest_fail) in.capacity_source = "slo verdicts";
  }
  return in;
}

double choose_interval(double run_length_s) {
  static constexpr double kNice[] = {0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600};
  for (double v : kNice) {
    if (run_length_s / v <= 60) return v;
  }
  return std::ceil(run_length_s / 60 / 3600) * 3600;
}

TimeSeries compute_time_series(const std::vector<RequestRecord>& records, const json& result, double interval_s) {
  TimeSeries ts;
  double end = 0;
  for (const auto& r : records) {
    end = std::max(end, secs(r.t_intended));
    for (const auto* t : {&r.t_send, &r.t_first, &r.t_last, &r.t_done}) {
      if (*t) end = std::max(end, secs(**t));
    }
  }
  ts.end_s = end;
  if (auto w0 = num_at(result, {"window", "start_s"})) ts.window_start_s = *w0;
  if (auto w1 = num_at(result, {"window", "end_s"})) ts.window_end_s = *w1;
  if (!ts.window_start_s || !ts.window_end_s) {
    std::optional<double> w0, w1;
    for (const auto& r : records) {
      if (r.warmup) continue;
      const double ti = secs(r.t_intended);
      if (!w0 || ti < *w0) w0 = ti;
      if (r.t_done && (!w1 || secs(*r.t_done) > *w1)) w1 = secs(*r.t_done);
    }
    if (!ts.window_start_s) ts.window_start_s = w0;
    if (!ts.window_end_s) ts.window_end_s = w1;
  }
  double iv = interval_s > 0 ? interval_s : choose_interval(end);
  if (end / iv > static_cast<double>(kMaxIntervals)) {
    iv = end / static_cast<double>(kMaxIntervals) * (1 + 1e-9);
    ts.clamped = true;
  }
  ts.interval_s = iv;
  const std::size_t n = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(end / iv - 1e-9)));
  auto bin = [&](double t) {
    if (!(t > 0)) return std::size_t{0};
    return std::min(n - 1, static_cast<std::size_t>(t / iv));
  };
  auto spread = [&](std::vector<double>& bins, double mass, double a, double b) {
    if (!(b > a)) {
      bins[bin(a)] += mass;
      return;
    }
    for (std::size_t i = bin(a); i <= bin(b); ++i) {
      const double lo = std::max(a, static_cast<double>(i) * iv);
      const double hi = (i + 1 == n) ? b : std::min(b, static_cast<double>(i + 1) * iv);
      if (hi > lo) bins[i] += mass * (hi - lo) / (b - a);
    }
  };
  std::vector<double> sends(n, 0), done(n, 0), errs(n, 0), tokens(n, 0), busy(n, 0);
  std::vector<std::vector<double>> ttft(n);
  for (const auto& r : records) {
    if (r.t_send) ++sends[bin(secs(*r.t_send))];
    if (r.t_done) ++(r.ok() ? done : errs)[bin(secs(*r.t_done))];
    if (r.t_first) {
      const std::int64_t n_tok = r.output_tokens > 0 ? r.output_tokens : r.output_events;
      const double first = secs(*r.t_first);
      if (n_tok > 0) {
        tokens[bin(first)] += 1;
        if (n_tok > 1) spread(tokens, static_cast<double>(n_tok - 1), first, r.t_last ? secs(*r.t_last) : first);
      }
      if (r.ok()) {
        if (auto t = r.ttft()) ttft[bin(first)].push_back(ms_of(*t));
      }
    }
    if (r.t_send) {
      const double a = secs(*r.t_send);
      const double b = r.t_done ? secs(*r.t_done) : (r.t_last ? secs(*r.t_last) : end);
      if (b > a) spread(busy, b - a, a, b);
    }
  }
  ts.start_s.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double lo = static_cast<double>(i) * iv;
    const double len = std::max(std::min(iv, end - lo), iv * 1e-3);
    ts.start_s[i] = lo;
    ts.sends_per_s.push_back(sends[i] / len);
    ts.completions_per_s.push_back(done[i] / len);
    ts.errors_per_s.push_back(errs[i] / len);
    ts.tokens_per_s.push_back(tokens[i] / len);
    ts.in_flight.push_back(busy[i] / len);
    auto& v = ttft[i];
    if (v.empty()) {
      ts.ttft_p50_ms.push_back(kNaN);
      ts.ttft_p99_ms.push_back(kNaN);
    } else {
      std::sort(v.begin(), v.end());
      auto at = [&](double p) {
        const auto rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(v.size()) - 1e-9)));
        return v[std::min(rank, v.size()) - 1];
      };
      ts.ttft_p50_ms.push_back(at(50));
      ts.ttft_p99_ms.push_back(at(99));
    }
  }
  return ts;
}

std::vector<std::pair<double, double>> percentile_curve(const HdrHistogram& h) {
  std::vector<std::pair<double, double>> pts;
  if (h.total_count() == 0) return pts;
  const double xmax = std::max(2.0, std::log10(static_cast<double>(h.total_count())));
  for (int i = 0;; ++i) {
    const double x = i * 0.02;
    if (x > xmax + 1e-9) break;
    const double p = 100 * (1 - std::pow(10.0, -x));
    pts.emplace_back(p, static_cast<double>(h.value_at_percentile(p)) / 1e3);
  }
  pts.emplace_back(100.0, static_cast<double>(h.max()) / 1e3);
  return pts;
}

std::string render_html(const ReportInput& in, const HtmlReportOptions& options_in) {
  const std::vector<RunSummary> sums = summaries(in);
  HtmlReportOptions options = options_in;  // links to other reports are relative to where this one goes
  if (options.output_dir.empty()) options.output_dir = in.dir;
  std::string body;
  if (!in.sweep) {
    const RunArtifact& a = in.runs.front();
    body += fmt::format("<header id=\"report-header\"><h1>llmload {}report</h1>\n", a.is_trials() ? "trials " : "");
    std::string sub = in.dir;
    if (a.is_trials()) sub += fmt::format(" · {} trials", sums.front().n_trials);
    if (auto t = str_at(a.result, {"conditions", "start_time"}); !t.empty()) sub += " · " + t;
    if (auto m = str_at(a.result, {"conditions", "model"}); !m.empty()) sub += " · model " + m;
    body += "<p class=\"sub\">" + html_escape(sub) + "</p></header>\n";
    body += run_body(a, sums.front(), options, "", 2);
    return page("llmload report: " + a.name, body);
  }
  body += "<header id=\"report-header\"><h1>llmload sweep report</h1>\n";
  body += fmt::format("<p class=\"sub\">{} · {} points{}</p>\n", html_escape(in.dir), in.runs.size(),
                      in.load_kind.empty() ? "" : html_escape(" · offered " + load_unit(in.load_kind)));
  body += "<div class=\"badges\">";
  const std::string cls = in.highest_pass ? "pass" : (in.lowest_fail ? "fail" : "neutral");
  body += fmt::format("<span class=\"badge {}\" id=\"verdict-capacity\">{}</span>", cls, html_escape(capacity_text(in)));
  body += "</div>\n";
  if (!in.capacity_source.empty()) {
    body += fmt::format("<p class=\"sub\">capacity from {}</p>\n", html_escape(in.capacity_source == "sweep.json"
                                                                               ? "sweep.json"
                                                                               : "the points' SLO verdicts (highest PASS below "
                                                                                 "the lowest FAIL or INCONCLUSIVE)"));
  }
  if (const std::string d = capacity_details(in); !d.empty()) {
    body += "<p class=\"sub\" id=\"capacity-details\">" + html_escape(d) + "</p>\n";
  }
  if (const std::string slo = sweep_slo_text(in); !slo.empty()) {
    body += "<p class=\"sub\" id=\"sweep-slo\">SLO " + html_escape(slo) + "</p>\n";
  }
  const std::size_t stopped =
      static_cast<std::size_t>(std::count_if(sums.begin(), sums.end(), [](const RunSummary& s) { return s.stopped_early.has_value(); }));
  if (stopped > 0) {
    body += fmt::format("<p class=\"reason warn\">{} point{} stopped early: the server was over-saturated (queue and TTFT "
                        "growing without bound); the numbers cover the run up to the stop.</p>\n",
                        stopped, stopped == 1 ? "" : "s");
  }
  body += "</header>\n";
  body += notes_html(in.notes);
  body += "<h2>Points</h2>\n" + sweep_table_html(in, sums);
  const std::string charts = charts_html(sweep_charts(in, sums), "");
  if (!charts.empty()) body += "<h2>Sweep</h2>\n" + charts;
  body += "<h2>Each point</h2>\n";
  for (std::size_t i = 0; i < in.runs.size(); ++i) {
    const RunSummary& s = sums[i];
    body += fmt::format("<details class=\"point\" id=\"point-{}\"><summary>{} — offered {}{}{}{}</summary>\n", i,
                        html_escape(s.name), html_escape(load_text(in.offered[i], in.load_kind)),
                        s.trials ? html_escape(fmt::format(" — {} trials", s.n_trials)) : "",
                        s.slo_verdict.empty() ? "" : html_escape(" — SLO " + s.slo_verdict),
                        s.stopped_early ? " — stopped early" : "");
    body += run_body(in.runs[i], s, options, fmt::format("p{}-", i), 3);
    body += "</details>\n";
  }
  return page("llmload sweep report: " + name_of(fs::path(in.dir)), body);
}

std::vector<std::string> summary_csv_columns() {
  std::vector<std::string> cols = {"run", "offered_load", "load_kind", "request_throughput", "output_throughput",
                                   "request_goodput", "token_goodput", "attainment"};
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    for (const char* p : {"p50", "p90", "p99"}) cols.push_back(fmt::format("{}_{}_ms", m, p));
  }
  for (const char* c : {"completed", "failed", "errors", "validity", "slo_verdict", "interrupted", "validity_reasons",
                        "stopped_early", "trials", "noisy", "cost_per_million_output_tokens"}) {
    cols.emplace_back(c);
  }
  return cols;
}

std::string render_csv(const ReportInput& in) {
  const std::vector<RunSummary> sums = summaries(in);
  std::string o;
  const auto cols = summary_csv_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) o += (i ? "," : "") + cols[i];
  o += "\n";
  for (const auto& s : sums) {
    std::vector<std::string> f = {s.name,
                                  csv_number(s.offered),
                                  s.load_kind,
                                  csv_number(s.request_throughput),
                                  csv_number(s.output_throughput),
                                  csv_number(s.request_goodput),
                                  csv_number(s.token_goodput),
                                  csv_number(s.attainment)};
    for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
      f.push_back(csv_number(s.p(m, &LatRow::p50)));
      f.push_back(csv_number(s.p(m, &LatRow::p90)));
      f.push_back(csv_number(s.p(m, &LatRow::p99)));
    }
    f.push_back(csv_number(s.completed));
    f.push_back(csv_number(s.failed));
    f.push_back(s.errors_text());
    f.push_back(s.validity);
    f.push_back(s.slo_verdict);
    f.push_back(s.interrupted ? "true" : "false");
    f.push_back(s.validity == "INVALID" ? s.reasons_text() : std::string());
    f.push_back(s.stopped_early.value_or(""));
    f.push_back(s.trials ? std::to_string(s.n_trials) : std::string());
    f.push_back(s.trials ? (s.noisy ? "true" : "false") : std::string());
    f.push_back(csv_number(s.cost));
    for (std::size_t i = 0; i < f.size(); ++i) o += (i ? "," : "") + csv_field(f[i]);
    o += "\n";
  }
  return o;
}

namespace {

void window_md(std::string& o, const RunArtifact& a, const RunSummary& s, const std::string& h) {
  const json& r = a.result;
  const json* w = find_path(r, {"window"});
  const json* mins = find_path(r, {"minimums"});
  const bool has_w = w != nullptr && w->is_object();
  const bool has_m = mins != nullptr && mins->is_object();
  if (!has_w && !has_m) return;
  o += fmt::format("\n{} Measurement window\n\n", h);
  if (has_w) {
    o += fmt::format("- **Window**: {}–{} s ({} s){}\n", format_number(s.window_start), format_number(s.window_end),
                     format_number(s.window_s), str_at(*w, {"method"}).empty() ? "" : ": " + str_at(*w, {"method"}));
    if (const json* wu = find_path(*w, {"warmup"}); wu != nullptr && wu->is_object()) {
      const std::string more = scalars_text(*wu, {"method", "detection", "cooldown"});
      o += fmt::format("- **Warmup**: {}{}{}\n", str_at(*wu, {"method"}), more.empty() ? "" : " (" + more + ")",
                       std::isfinite(s.warmup) && s.warmup > 0 ? fmt::format("; {} requests discarded", format_number(s.warmup)) : "");
      if (const json* d = find_path(*wu, {"detection"}); d != nullptr && d->is_object()) {
        const json* found = find_path(*d, {"found"});
        const bool ok = found == nullptr || !found->is_boolean() || found->get<bool>();
        o += fmt::format("- **Steady-state detection**: {}, {}", str_at(*d, {"method"}).empty() ? "MSER-5" : str_at(*d, {"method"}),
                         ok ? "found" : "no steady state found (the whole run is measured)");
        if (auto st = num_at(*d, {"start_s"}); ok && st) o += fmt::format(", from {} s", format_number(*st));
        if (auto ds = str_at(*d, {"deciding_series"}); ok && !ds.empty()) o += fmt::format(", decided by '{}'", ds);
        if (auto iv = num_at(*d, {"interval_s"})) o += fmt::format(" ({} s intervals)", format_number(*iv));
        o += "\n";
        if (const json* series = find_path(*d, {"series"}); series != nullptr && series->is_object()) {
          for (const auto& [name, v] : series->items()) {
            const json* f = find_path(v, {"found"});
            o += fmt::format("  - {}: {}{}{}\n", name, f != nullptr && f->is_boolean() ? (f->get<bool>() ? "found" : "not found") : "–",
                             num_at(v, {"truncation_s"}) ? fmt::format(" at {} s", format_number(nan_at(v, {"truncation_s"}))) : "",
                             str_at(v, {"reason"}).empty() ? "" : " — " + str_at(v, {"reason"}));
          }
        }
      }
    }
  }
  if (has_m) {
    std::string t;
    if (auto v = num_at(*mins, {"min_duration_s"})) t += fmt::format("window at least {} s", format_number(*v));
    if (auto v = num_at(*mins, {"min_requests"})) {
      t += fmt::format("{}at least {} measured requests", t.empty() ? "" : ", ", format_number(*v));
    }
    if (auto v = num_at(*mins, {"max_duration_s"})) t += fmt::format("{}the run at most {} s", t.empty() ? "" : "; ", format_number(*v));
    if (auto v = num_at(*mins, {"required_samples"})) {
      t += fmt::format("{}the requested percentiles need at least {} measured requests", t.empty() ? "" : "; ", format_number(*v));
    }
    if (const json* mr = find_path(*mins, {"max_duration_reached"}); mr != nullptr && mr->is_boolean() && mr->get<bool>()) {
      t += std::string(t.empty() ? "" : "; ") + "the maximum duration was reached";
    }
    const json* met = find_path(*mins, {"met"});
    o += fmt::format("- **Minimums**: {}{}\n", met != nullptr && met->is_boolean() ? (met->get<bool>() ? "met" : "NOT met") : "–",
                     t.empty() ? "" : " (" + t + ")");
  }
}

void cross_checks_md(std::string& o, const json& r, const std::string& h) {
  const json* tc = find_path(r, {"ttft_cross_check"});
  const json* ll = find_path(r, {"littles_law"});
  const bool has_tc = tc != nullptr && tc->is_object();
  const bool has_ll = ll != nullptr && ll->is_object();
  if (!has_tc && !has_ll) return;
  o += fmt::format("\n{} Server cross-checks\n\n", h);
  if (has_tc && flag(*tc, "available", false)) {
    o += fmt::format("- **Client vs server TTFT**: mean {} ms (client) vs {} ms (server): client − server {} ms, the network + "
                     "client overhead; p50 {} vs {} ms; requests {} vs {}\n",
                     format_number(nan_at(*tc, {"client_mean_ms"})), format_number(nan_at(*tc, {"server_mean_ms"})),
                     format_number(nan_at(*tc, {"mean_diff_ms"})), format_number(nan_at(*tc, {"client_p50_ms"})),
                     format_number(nan_at(*tc, {"server_p50_ms"})), format_number(nan_at(*tc, {"client_count"})),
                     format_number(nan_at(*tc, {"server_count"})));
    if (const json* notes = find_path(*tc, {"notes"}); notes != nullptr && notes->is_array()) {
      for (const auto& n : *notes) {
        if (n.is_string()) o += "  - " + n.get<std::string>() + "\n";
      }
    }
  } else {
    o += fmt::format("- **Client vs server TTFT**: not available: {}\n", has_tc ? str_at(*tc, {"reason"}) : "not computed");
  }
  if (has_ll && flag(*ll, "available", false)) {
    const json* ag = find_path(*ll, {"agrees"});
    const bool agrees = ag != nullptr && ag->is_boolean() && ag->get<bool>();
    o += fmt::format("- **Little's law**: {}: server mean in system {} vs client throughput × mean E2E {}; deviation {} "
                     "(tolerance ±{}, {} server samples)\n",
                     agrees ? "agrees" : "does NOT agree", format_number(nan_at(*ll, {"server_mean_in_system"})),
                     format_number(nan_at(*ll, {"client_throughput_x_mean_e2e"})), signed_percent(nan_at(*ll, {"relative_deviation"})),
                     percent(nan_at(*ll, {"tolerance"})), format_number(nan_at(*ll, {"samples"})));
  } else {
    o += fmt::format("- **Little's law**: not available: {}\n", has_ll ? str_at(*ll, {"reason"}) : "not computed");
  }
}

void trials_md(std::string& o, const RunArtifact& a, const RunSummary& s, const std::string& h) {
  const json& r = a.result;
  o += fmt::format("\n{} Across {} trials (median, [min–max], 95% CI)\n\n", h, s.n_trials);
  const json* ts = find_path(r, {"trial_summary"});
  if (ts != nullptr && ts->is_object() && !ts->empty()) {
    o += "| metric | median | min–max | 95% CI | CV | noisy |\n| --- | ---: | ---: | ---: | ---: | --- |\n";
    for (const auto& key : summary_keys(*ts)) {
      const auto sp = summary_spread(r, key);
      if (!sp) continue;
      o += fmt::format("| {} | {} | {}–{} | {} | {} | {} |\n", md_cell(metric_label(key)), format_number(sp->median),
                       format_number(sp->min), format_number(sp->max), ci_text(*sp), percent(sp->cv),
                       sp->noisy ? md_cell("noisy: " + sp->noisy_reason) : "–");
    }
  }
  const json* tr = find_path(r, {"trials"});
  if (tr != nullptr && tr->is_array() && !tr->empty()) {
    o += "\n| trial | seed | throughput (req/s) | output tokens/s | goodput (req/s) | p99 TTFT (ms) | p99 TPOT (ms) | "
         "p99 E2E (ms) | completed | failed | validity | SLO | stopped early |\n"
         "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n";
    for (std::size_t i = 0; i < tr->size(); ++i) {
      const json& t = (*tr)[i];
      const json* valid = find_path(t, {"valid"});
      const auto stopped = stopped_reason(find_path(t, {"stopped_early"}));
      const std::string sv = str_at(t, {"slo_verdict"});
      o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                       format_number(num_at(t, {"trial"}).value_or(static_cast<double>(i + 1))),
                       md_cell(scalar_text(t.value("seed", json()))), format_number(nan_at(t, {"request_throughput"})),
                       format_number(nan_at(t, {"output_throughput"})), format_number(nan_at(t, {"request_goodput"})),
                       format_number(nan_at(t, {"p99_ttft_ms"})), format_number(nan_at(t, {"p99_tpot_ms"})),
                       format_number(nan_at(t, {"p99_e2el_ms"})), format_number(nan_at(t, {"completed"})),
                       format_number(nan_at(t, {"failed"})),
                       valid == nullptr || !valid->is_boolean() ? "–" : (valid->get<bool>() ? "valid" : "INVALID"),
                       sv.empty() ? "–" : sv, stopped ? md_cell(*stopped) : "–");
    }
    o += "\nEach trial's own report: its directory's report.html.\n";
  }
}

}  // namespace

std::string render_markdown(const ReportInput& in) {
  const std::vector<RunSummary> sums = summaries(in);
  std::string o;
  auto run_md = [&](const RunArtifact& a, const RunSummary& s, const std::string& h) {
    if (!s.slo_verdict.empty()) {
      o += fmt::format("- **SLO**: {} ({}{}){}\n", s.slo_verdict, s.slo_spec, s.slo_view.empty() ? "" : ", " + s.slo_view + " view",
                       s.trials && !s.trial_verdicts.empty() ? "; " + trial_verdicts_text(s) + ", the majority decides" : "");
    } else {
      o += "- **SLO**: none given\n";
    }
    if (!s.validity.empty()) {
      if (s.validity == "INVALID" && !s.reasons.empty()) {
        o += "- **Validity**: INVALID\n";
        for (const auto& r : s.reasons) {
          o += fmt::format("  - {}{}\n", r.code.empty() ? "" : "`" + r.code + "` ", md_cell(reason_text(r)));
        }
      } else {
        o += fmt::format("- **Validity**: {}{}\n", s.validity, s.validity_reason.empty() ? "" : ": " + s.validity_reason);
      }
      if (s.lag_not_checked) o += "  - schedule lag not checked (closed loop)\n";
    }
    if (s.trials) {
      std::string noisy;
      for (const auto& m : s.noisy_metrics) noisy += (noisy.empty() ? "" : ", ") + m;
      o += fmt::format("- **Trials**: {}; every number is the median across trials{}\n", s.n_trials,
                       s.noisy ? "; **NOISY**" + (noisy.empty() ? std::string() : ": " + noisy) : "");
    }
    if (s.stopped_early) o += "- **Stopped early**: " + *s.stopped_early + "\n";
    if (s.interrupted) o += "- **Interrupted**: results cover only what was measured before the signal\n";
    for (const auto& n : a.notes) o += "- Note: " + n + "\n";
    o += fmt::format("\n{} Key metrics{}\n\n| metric | value |\n| --- | --- |\n", h, s.trials ? " (median [min–max] across trials)" : "");
    auto row = [&](const std::string& k, double v, const std::string& u, const std::string& key = {},
                   double (*from_trial)(const json&) = nullptr) {
      if (!std::isfinite(v)) return;
      std::string range;
      if (s.trials && !key.empty()) {
        const Spread sp = trial_spread(a, key, from_trial);
        if (sp.has_range()) range = fmt::format(" [{}–{}]", format_number(sp.min), format_number(sp.max));
      }
      o += fmt::format("| {} | {}{}{} |\n", k, format_number(v), u.empty() ? "" : " " + u, range);
    };
    row("offered load", s.offered, load_unit(s.load_kind));
    row("achieved send rate", s.achieved_send_rate, "req/s");
    row("measurement window", s.window_s, "s");
    row("completed", s.completed, "requests");
    row("failed", s.failed, "requests");
    row("request throughput", s.request_throughput, "req/s", "request_throughput");
    row("output throughput", s.output_throughput, "tokens/s", "output_throughput");
    row("total token throughput", s.total_token_throughput, "tokens/s", "total_token_throughput");
    row("request goodput", s.request_goodput, "req/s", "request_goodput", trial_request_goodput);
    row("token goodput", s.token_goodput, "tokens/s", "token_goodput", trial_token_goodput);
    if (std::isfinite(s.attainment)) o += fmt::format("| SLO attainment | {} |\n", percent(s.attainment));
    if (std::isfinite(s.cost)) o += fmt::format("| cost | {} |\n", md_cell(cost_text(s)));
    if (!s.errors.empty()) o += fmt::format("| errors | {} |\n", md_cell(s.errors_text()));
    if (!s.latency.empty() && s.trials) {
      o += fmt::format("\n{} Latency (ms, median across trials)\n\n| metric | mean | p50 | p90 | p95 | p99 |\n"
                       "| --- | ---: | ---: | ---: | ---: | ---: |\n",
                       h);
      for (const auto& r : s.latency) {
        o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.label, format_number(r.mean), format_number(r.p50),
                         format_number(r.p90), format_number(r.p95), format_number(r.p99));
      }
    } else if (!s.latency.empty()) {
      o += fmt::format("\n{} Latency (ms)\n\n| metric | n | mean | p50 | p90 | p95 | p99 | p99.9 | max |\n"
                       "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
                       h);
      for (const auto& r : s.latency) {
        o += fmt::format("| {} | {} | {} | {} | {} | {} | {}{} | {}{} | {} |\n", r.label, format_number(r.count), format_number(r.mean),
                         format_number(r.p50), format_number(r.p90), format_number(r.p95), format_number(r.p99),
                         r.low99 ? "†" : "", format_number(r.p999), r.low999 ? "†" : "", format_number(r.max));
      }
      o += "\n† low confidence (p99 from fewer than 1,000 samples, p99.9 from fewer than 10,000).\n";
    }
    if (s.trials) trials_md(o, a, s, h);
    if (const json* m = find_path(a.result, {"slo", "metrics"}); m != nullptr && m->is_array() && !m->empty()) {
      o += fmt::format("\n{} SLO\n\n| metric | bound (ms) | observed (ms) | over the bound | verdict | why |\n"
                       "| --- | ---: | ---: | ---: | --- | --- |\n",
                       h);
      for (const auto& v : *m) {
        o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_cell(str_at(v, {"metric"})), format_number(nan_at(v, {"bound_ms"})),
                         format_number(nan_at(v, {"observed_ms"})), format_number(nan_at(v, {"exceedances"})),
                         md_cell(str_at(v, {"verdict"})), md_cell(str_at(v, {"explanation"})));
      }
    }
    if (!s.trials) {
      window_md(o, a, s, h);
      cross_checks_md(o, a.result, h);
    }
    if (const auto rows = condition_rows(a.result); !rows.empty()) {
      o += fmt::format("\n{} Conditions\n\n", h);
      for (const auto& [k, v] : rows) o += fmt::format("- **{}**: {}\n", k, k == "command line" ? "`" + v + "`" : v);
    }
  };
  if (!in.sweep) {
    o += fmt::format("# llmload {}report: {}\n\n", in.runs.front().is_trials() ? "trials " : "", in.runs.front().name);
    run_md(in.runs.front(), sums.front(), "##");
    o += "\nCharts: report.html. Definitions: docs/metrics.md.\n";
    return o;
  }
  o += fmt::format("# llmload sweep report: {}\n\n", name_of(fs::path(in.dir)));
  o += fmt::format("- **Points**: {}\n- **Capacity**: {}{}\n", in.runs.size(), capacity_text(in),
                   in.capacity_source.empty() ? "" : " (from " + in.capacity_source + ")");
  if (const std::string d = capacity_details(in); !d.empty()) o += "- **Capacity search**: " + d + "\n";
  if (const std::string slo = sweep_slo_text(in); !slo.empty()) o += "- **SLO**: " + slo + "\n";
  for (const auto& n : in.notes) o += "- Note: " + n + "\n";
  const bool any_trials = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.trials; });
  o += "\n## Points\n\n| point | offered | throughput (req/s) | goodput (req/s) | output tokens/s | attainment | p99 TTFT (ms) | "
       "p99 TPOT (ms) | p99 E2E (ms) | failed | SLO | validity | trials | stopped early |\n"
       "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |\n";
  const auto cap = capacity_index(in);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const RunSummary& s = sums[i];
    const RunArtifact& a = in.runs[i];
    o += fmt::format("| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md_cell(s.name),
                     cap && *cap == i ? " (capacity)" : "", load_text(in.offered[i], in.load_kind),
                     spread_text(point_value(a, s.request_throughput, "request_throughput", trial_request_throughput)),
                     spread_text(point_value(a, s.request_goodput, "request_goodput", trial_request_goodput)),
                     spread_text(point_value(a, s.output_throughput, "output_throughput", trial_output_throughput)),
                     percent(s.attainment), spread_text(point_latency(a, s, "ttft", "p99_ms")),
                     spread_text(point_latency(a, s, "tpot", "p99_ms")), spread_text(point_latency(a, s, "e2e", "p99_ms")),
                     format_number(s.failed), s.slo_verdict.empty() ? "–" : s.slo_verdict, s.validity.empty() ? "–" : s.validity,
                     s.trials ? std::to_string(s.n_trials) : "1", s.stopped_early ? md_cell(*s.stopped_early) : "–");
  }
  if (any_trials) o += "\nA point with trials: the median across its trials, [min–max] in brackets.\n";
  if (!sums.empty() && sums.front().slo_view == "response") {
    o += "\np99 TTFT and E2E measured from t_intended, the view the SLO is judged in.\n";
  }
  for (std::size_t i = 0; i < in.runs.size(); ++i) {
    o += fmt::format("\n## {} (offered {})\n\n", in.runs[i].name, load_text(in.offered[i], in.load_kind));
    run_md(in.runs[i], sums[i], "###");
  }
  o += "\nCharts: report.html. Definitions: docs/metrics.md.\n";
  return o;
}

ReportFiles write_report(const std::string& dir, const HtmlReportOptions& options) {
  if (options.interval_s < 0 || !std::isfinite(options.interval_s)) {
    throw ReportError(fmt::format("--interval {}: must be a positive number of seconds (0: automatic)", options.interval_s));
  }
  const ReportInput in = read_report_input(dir);
  const fs::path out = options.output_dir.empty() ? fs::path(dir) : fs::path(options.output_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ReportWriteError(fmt::format("cannot create {}: {}", out.string(), ec.message()));
  ReportFiles files;
  files.html = (out / "report.html").string();
  files.markdown = (out / "summary.md").string();
  files.csv = (out / "summary.csv").string();
  write_file(files.html, render_html(in, options));
  write_file(files.markdown, render_markdown(in));
  write_file(files.csv, render_csv(in));
  files.notes = in.notes;
  for (const auto& r : in.runs) {
    for (const auto& n : r.notes) files.notes.push_back(in.sweep ? r.name + ": " + n : n);
  }
  return files;
}

}  // namespace llmload::analysis
