// A sweep's sections: the sweep charts (latency-throughput, goodput, attainment, distributions by
// load), the capacity text and details, the points table (id sweep-table).
#include "html_report/internal.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
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

namespace llmload::analysis::report_html {

// ---------------------------------------------------------------------------------------------
// Sweeps

/// Latency of a sweep point in the SLO's view: the response-time view for ttft/e2e when the SLO
/// is judged there.
static double sweep_latency(const RunArtifact& a, const RunSummary& s, const std::string& metric, const char* field) {
  if (s.slo_view == "response" && (metric == "ttft" || metric == "ttfo" || metric == "e2e")) {
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

/// A run's prefix-cache hit rate: from usage, else the server's (NaN without either).
static double cache_hit_rate(const json& r) {
  if (auto v = num_at(r, {"prefix_cache", "hit_rate"})) return *v;
  return nan_at(r, {"prefix_cache", "server_hit_rate"});
}

Spread point_cache_hit(const RunArtifact& a) {
  if (!a.is_trials()) {
    Spread sp;
    sp.median = cache_hit_rate(a.result);
    sp.n = std::isfinite(sp.median) ? 1 : 0;
    return sp;
  }
  std::vector<double> v;
  for (const auto& t : a.trials) v.push_back(cache_hit_rate(t.result));
  return spread_of_values(std::move(v));
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

static void set_whisker(Series& s, const Spread& sp, bool x_axis, double scale = 1) {
  std::vector<double>& lo = x_axis ? s.x_lo : s.y_lo;
  std::vector<double>& hi = x_axis ? s.x_hi : s.y_hi;
  lo.push_back(sp.has_range() ? sp.min * scale : kNaN);
  hi.push_back(sp.has_range() ? sp.max * scale : kNaN);
}

static std::string range_tip(const Spread& sp, double scale = 1) {
  if (!sp.has_range()) return {};
  return fmt::format(" [{}–{}] over {} trials", format_number(sp.min * scale), format_number(sp.max * scale), sp.n);
}

/// The point at `load` (the last with that offered load), when there is one.
static std::optional<std::size_t> point_at(const ReportInput& in, const std::optional<double>& load) {
  if (!load) return std::nullopt;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < in.offered.size(); ++i) {
    if (!std::isfinite(in.offered[i])) continue;
    if (std::fabs(in.offered[i] - *load) <= 1e-9 * std::max(1.0, std::fabs(*load))) best = i;
  }
  return best;
}

std::optional<std::size_t> capacity_index(const ReportInput& in) { return point_at(in, in.highest_pass); }

CapacityValidity capacity_validity(const ReportInput& in, const std::vector<RunSummary>& sums) {
  CapacityValidity v;
  const auto pass = point_at(in, in.highest_pass);
  const auto fail = point_at(in, in.lowest_fail);
  auto check = [&](const std::optional<std::size_t>& i, const char* role) {
    if (!i || *i >= sums.size() || sums[*i].validity != "INVALID") return;
    for (const auto& p : v.invalid_points) {
      if (p.index == *i) return;
    }
    std::string codes;
    for (const auto& r : sums[*i].reasons) {
      codes += (codes.empty() ? "" : ", ") + (r.code.empty() ? r.message : r.code);
      if (r.trial) codes += fmt::format(" (trial {})", *r.trial);
    }
    v.invalid_points.push_back({*i, sums[*i].name, role, codes});
  };
  check(pass, "the highest passing load");
  check(fail, "the lowest failing load");
  // sweep.json "capacity": {"valid": false, "invalid_reasons": [...]} (the capacity search's own verdict).
  if (const json* c = find_path(in.sweep_json, {"capacity"}); c != nullptr && c->is_object()) {
    v.search_invalid = !flag(*c, "valid", true);
    if (const json* rs = find_path(*c, {"invalid_reasons"}); rs != nullptr && rs->is_array()) {
      for (const auto& r : *rs) {
        if (r.is_string() && !r.get<std::string>().empty()) v.search_reasons.push_back(r.get<std::string>());
      }
    }
  }
  return v;
}

std::string capacity_validity_text(const CapacityValidity& v) {
  std::string o;
  if (!v.invalid_points.empty()) {
    o = "INVALID points: ";
    for (std::size_t k = 0; k < v.invalid_points.size(); ++k) {
      const auto& p = v.invalid_points[k];
      o += fmt::format("{}{}{}", k ? ", " : "", p.name, p.reasons.empty() ? "" : " (" + p.reasons + ")");
    }
  }
  if (v.search_invalid) {
    o += o.empty() ? "capacity search not valid" : "; capacity search not valid";
    for (std::size_t k = 0; k < v.search_reasons.size(); ++k) o += (k ? "; " : ": ") + v.search_reasons[k];
  }
  return o;
}

/// The points that stopped early, as an "×" series over another series' points.
static Series stopped_series(const std::vector<RunSummary>& sums, const Series& over) {
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

namespace {

/// What the sweep charts share: the points, their headline numbers (spread across trials), the
/// capacity, and how notes and tips are worded.
struct SweepChartContext {
  const ReportInput& in;
  const std::vector<RunSummary>& sums;
  std::string xl_offered;
  std::optional<std::size_t> cap;
  bool any_trials = false;
  bool any_stopped = false;
  std::vector<Spread> thr, good, out, tgood, att;

  SweepChartContext(const ReportInput& input, const std::vector<RunSummary>& summaries) : in(input), sums(summaries) {
    const std::string unit = load_unit(in.load_kind);
    xl_offered = unit.empty() ? "offered load" : fmt::format("offered load ({})", unit);
    cap = capacity_index(in);
    any_trials = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.trials; });
    any_stopped = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.stopped_early.has_value(); });
    for (std::size_t i = 0; i < sums.size(); ++i) {
      const RunArtifact& a = in.runs[i];
      thr.push_back(point_value(a, sums[i].request_throughput, "request_throughput", trial_request_throughput));
      good.push_back(point_value(a, sums[i].request_goodput, "request_goodput", trial_request_goodput));
      out.push_back(point_value(a, sums[i].output_throughput, "output_throughput", trial_output_throughput));
      tgood.push_back(point_value(a, sums[i].token_goodput, "token_goodput", trial_token_goodput));
      att.push_back(point_value(a, sums[i].attainment, "attainment", trial_attainment));
    }
  }

  std::string with_notes(std::string note) const {
    if (any_trials) {
      note += std::string(note.empty() ? "" : "; ") +
              "points with trials: the median across trials, whiskers from the lowest to the highest trial";
    }
    if (any_stopped) note += std::string(note.empty() ? "" : "; ") + "× marks a point stopped early (over-saturated)";
    return note;
  }

  std::string point_tip(std::size_t i) const {
    return fmt::format("{}: offered {}", in.runs[i].name, load_text(in.offered[i], in.load_kind));
  }

  void capacity_marks(Chart& c) const {
    if (in.highest_pass && in.lowest_fail && *in.lowest_fail > *in.highest_pass) {
      c.bands.push_back({*in.highest_pass, *in.lowest_fail, "capacity bracket", true});
    }
    if (in.highest_pass) c.vlines.push_back({*in.highest_pass, fmt::format("capacity {}", format_number(*in.highest_pass)), "#1d232a"});
  }

  /// One marker per point at its offered load, with the spread across trials as whiskers.
  Series value_series(std::string name, const char* col, bool dashed, const std::vector<Spread>& sp, double scale,
                      const std::string& what, const std::string& u) const {
    Series s = make_series(std::move(name), col, dashed, true);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      s.x.push_back(in.offered[i]);
      s.y.push_back(sp[i].median * scale);
      set_whisker(s, sp[i], false, scale);
      s.tips.push_back(fmt::format("{}: {} {}{}{}", point_tip(i), what, format_number(sp[i].median * scale), u, range_tip(sp[i], scale)));
    }
    return s;
  }

  /// An offered-load chart's last steps: the stopped-early crosses over `over`, the capacity, the notes.
  void finish(Chart& c, Series over, std::vector<Series> others) const {
    Series stopped = stopped_series(sums, over);
    c.series.push_back(std::move(over));
    for (auto& s : others) c.series.push_back(std::move(s));
    if (!stopped.x.empty()) c.series.push_back(std::move(stopped));
  }
};

/// The SLO bound of `key` of any point (or trial), in ms.
std::optional<double> sweep_slo_bound(const ReportInput& in, const std::string& key) {
  std::optional<double> bound;
  for (const auto& r : in.runs) {
    if (auto b = slo_bound(r.result, key)) bound = b;
    for (const auto& t : r.trials) {
      if (auto b = slo_bound(t.result, key)) bound = b;
    }
  }
  return bound;
}

/// p50 and p99 of one metric versus the achieved throughput, with the SLO line and the capacity point.
Chart latency_throughput_chart(const SweepChartContext& x, const char* key, const char* label) {
  const auto& sums = x.sums;
  std::vector<double> tput;
  std::vector<Spread> p99, p50;
  double mx = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    tput.push_back(sums[i].request_throughput);
    p99.push_back(point_latency(x.in.runs[i], sums[i], key, "p99_ms"));
    p50.push_back(point_latency(x.in.runs[i], sums[i], key, "p50_ms"));
    for (double v : {p99.back().median, p99.back().max}) {
      if (std::isfinite(v)) mx = std::max(mx, v);
    }
  }
  const std::optional<double> bound = sweep_slo_bound(x.in, key);
  const auto [div, u] = latency_unit(std::max(mx, bound.value_or(0)));
  Chart c;
  c.key = std::string("latency-throughput-") + key;
  c.title = fmt::format("{} versus throughput", label);
  c.x_label = x.any_trials ? "request throughput (req/s, median across trials)" : "request throughput (req/s)";
  c.y_label = fmt::format("{} ({})", label, u);
  c.pad_x = true;
  Series s99 = make_series("p99", color::kVermillion, false, true);
  Series s50 = make_series("p50", color::kBlue, true, true);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    s99.x.push_back(tput[i]);
    s50.x.push_back(tput[i]);
    s99.y.push_back(p99[i].median / div);
    s50.y.push_back(p50[i].median / div);
    set_whisker(s99, p99[i], false, 1 / div);
    set_whisker(s50, p50[i], false, 1 / div);
    set_whisker(s99, x.thr[i], true);
    set_whisker(s50, x.thr[i], true);
    s99.tips.push_back(fmt::format("{}: {} req/s{}, p99 {} {}{}", x.point_tip(i), format_number(tput[i]), range_tip(x.thr[i]),
                                   format_number(s99.y[i]), u, range_tip(p99[i], 1 / div)));
    s50.tips.push_back(fmt::format("{}: {} req/s, p50 {} {}{}", x.point_tip(i), format_number(tput[i]), format_number(s50.y[i]), u,
                                   range_tip(p50[i], 1 / div)));
  }
  if (bound) c.hlines.push_back({*bound / div, fmt::format("SLO {} {}", format_number(*bound / div), u), color::kRed});
  if (x.cap && std::isfinite(tput[*x.cap]) && std::isfinite(s99.y[*x.cap])) {
    c.callouts.push_back({tput[*x.cap], s99.y[*x.cap], fmt::format("capacity ({})", load_text(x.in.offered[*x.cap], x.in.load_kind))});
  }
  Series stopped = stopped_series(sums, s99);
  c.series.push_back(std::move(s50));
  c.series.push_back(std::move(s99));
  if (!stopped.x.empty()) c.series.push_back(std::move(stopped));
  const bool view_rt = !sums.empty() && sums.front().slo_view == "response" && (std::string_view(key) != "tpot");
  c.note = x.with_notes(view_rt ? "measured from t_intended (the view the SLO is judged in)" : "measured from t_send");
  return c;
}

Chart goodput_chart(const SweepChartContext& x) {
  Chart c;
  c.key = "goodput";
  c.title = "Throughput and goodput versus offered load";
  c.x_label = x.xl_offered;
  c.y_label = "requests/s";
  c.pad_x = true;
  Series thr = x.value_series("throughput", color::kBlue, false, x.thr, 1, "throughput", " req/s");
  Series good = x.value_series("goodput", color::kGreen, true, x.good, 1, "goodput", " req/s");
  if (x.in.load_kind == "rate") {
    Series off = make_series("offered", color::kGray, true, false);
    for (double v : x.in.offered) {
      off.x.push_back(v);
      off.y.push_back(v);
    }
    c.series.push_back(std::move(off));
  }
  x.finish(c, std::move(thr), {std::move(good)});
  x.capacity_marks(c);
  c.note = x.with_notes("");
  return c;
}

Chart token_goodput_chart(const SweepChartContext& x) {
  Chart c;
  c.key = "goodput-tokens";
  c.title = "Output tokens/s and token goodput versus offered load";
  c.x_label = x.xl_offered;
  c.y_label = "tokens/s";
  c.pad_x = true;
  Series thr = x.value_series("output tokens/s", color::kBlue, false, x.out, 1, "", " tokens/s");
  Series good = x.value_series("token goodput", color::kGreen, true, x.tgood, 1, "token goodput", " tokens/s");
  x.finish(c, std::move(thr), {std::move(good)});
  x.capacity_marks(c);
  c.note = x.with_notes("");
  return c;
}

Chart attainment_chart(const SweepChartContext& x) {
  Chart c;
  c.key = "attainment";
  c.title = "SLO attainment versus offered load";
  c.x_label = x.xl_offered;
  c.y_label = "good requests (%)";
  c.pad_x = true;
  c.y_max = 100;
  Series att = x.value_series("attainment", color::kGreen, false, x.att, 100, "", "% good");
  for (std::size_t i = 0; i < x.sums.size() && i < att.tips.size(); ++i) {
    att.tips[i] += fmt::format(" ({})", x.sums[i].slo_verdict.empty() ? "no verdict" : x.sums[i].slo_verdict);
  }
  x.finish(c, std::move(att), {});
  c.hlines.push_back({99, "99%", color::kRed});
  x.capacity_marks(c);
  c.note = x.with_notes("");
  return c;
}

/// "accuracy:0.85" in an SLO spec ("ttft:50ms,accuracy:0.85,p99").
std::optional<double> spec_min_accuracy(const std::string& spec) {
  const auto at = spec.find("accuracy:");
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = spec.substr(at + 9);
  char* end = nullptr;
  const double v = std::strtod(rest.c_str(), &end);
  if (end == rest.c_str() || !std::isfinite(v)) return std::nullopt;
  return *end == '%' ? v / 100 : v;
}

/// The accuracy SLO's bound of the sweep: a point's (or a trial's) accuracy verdict, else the SLO spec.
std::optional<double> sweep_min_accuracy(const ReportInput& in, const std::vector<RunSummary>& sums) {
  for (const auto& s : sums) {
    if (std::isfinite(s.accuracy.min_accuracy)) return s.accuracy.min_accuracy;
    for (const auto& t : s.trial_sums) {
      if (std::isfinite(t.accuracy.min_accuracy)) return t.accuracy.min_accuracy;
    }
  }
  if (auto v = spec_min_accuracy(sweep_slo_text(in))) return v;
  for (const auto& s : sums) {
    if (auto v = spec_min_accuracy(s.slo_spec)) return v;
  }
  return std::nullopt;
}

/// One point per sweep point with a known rate, its 95% interval as a whisker.
Series rate_series(const SweepChartContext& x, std::string name, const char* col, bool dashed, RateCI (*pick)(const RunSummary&),
                   const char* count_word) {
  Series s = make_series(std::move(name), col, dashed, true);
  for (std::size_t i = 0; i < x.sums.size(); ++i) {
    const RateCI r = pick(x.sums[i]);
    s.x.push_back(r.known() ? x.in.offered[i] : kNaN);
    s.y.push_back(r.rate * 100);
    s.y_lo.push_back(r.lo * 100);
    s.y_hi.push_back(r.hi * 100);
    s.tips.push_back(fmt::format("{}: {} {}{}{}", x.point_tip(i), s.name, rate_text(r),
                                 r.has_ci() ? " (95% CI " + rate_ci_text(r) + ")" : "",
                                 std::isfinite(r.n) ? fmt::format(", {} {}", format_number(r.n), count_word) : ""));
  }
  return s;
}

/// Accuracy and the identical (exact-match) rate of each point with their 95% intervals; the
/// accuracy SLO's bound. Empty (not drawn) when no point has either.
Chart correctness_by_load_chart(const SweepChartContext& x) {
  Chart c;
  c.key = "correctness-by-load";
  c.title = "Accuracy and consistency versus offered load";
  c.x_label = x.xl_offered;
  c.y_label = "rate (%)";
  c.pad_x = true;
  c.y_max = 100;
  Series acc = rate_series(x, "accuracy", color::kGreen, false, [](const RunSummary& s) { return s.accuracy.all.accuracy; },
                           "graded");
  Series em = rate_series(x, "identical (exact match)", color::kPurple, true,
                          [](const RunSummary& s) { return s.consistency.exact_match; }, "compared");
  const std::optional<double> bound = sweep_min_accuracy(x.in, x.sums);
  if (bound) c.hlines.push_back({*bound * 100, "accuracy SLO " + percent(*bound), color::kRed});
  for (Series* s : {&acc, &em}) {
    if (std::any_of(s->x.begin(), s->x.end(), [](double v) { return std::isfinite(v); })) c.series.push_back(std::move(*s));
  }
  x.capacity_marks(c);
  c.note = "Whiskers: the 95% interval (Wilson) of each rate; a point with trials pools its trials' requests. Identical: "
           "answers equal to the reference's (concurrency 1 or a saved run).";
  return c;
}

/// A point's histogram of `key`: the run's, or a trials point's trials pooled.
std::optional<HdrHistogram> point_histogram(const RunArtifact& r, const std::string& key) {
  std::optional<HdrHistogram> h;
  auto take = [&](const RunArtifact& x) {
    auto it = x.histograms.find(key);
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
  return h;
}

/// The percentile distributions of every point overlaid, dark to light with increasing load.
Chart pct_by_load_chart(const ReportInput& in, bool any_trials, const char* key, const char* label) {
  Chart c;
  c.key = std::string("pct-by-load-") + key;
  c.title = fmt::format("{} percentile distribution by offered load", label);
  c.x_label = "percentile (log scale toward the tail)";
  c.percentile_x = true;
  std::vector<std::optional<HdrHistogram>> hists;
  double mx = 0;
  for (const auto& r : in.runs) {
    hists.push_back(point_histogram(r, key));
    if (hists.back()) mx = std::max(mx, static_cast<double>(hists.back()->max()) / 1e3);
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
  if (const auto bound = sweep_slo_bound(in, key)) {
    c.hlines.push_back({*bound / div, fmt::format("SLO {} {}", format_number(*bound / div), u), color::kRed});
  }
  c.note = any_trials ? "from t_send; a point with trials: the requests of all its trials pooled" : "from t_send";
  return c;
}

}  // namespace

std::vector<Chart> sweep_charts(const ReportInput& in, const std::vector<RunSummary>& sums) {
  const SweepChartContext x(in, sums);
  constexpr std::pair<const char*, const char*> kMetrics[] = {{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"e2e", "E2E"}};
  std::vector<Chart> charts;
  for (const auto& [key, label] : kMetrics) charts.push_back(latency_throughput_chart(x, key, label));
  charts.push_back(correctness_by_load_chart(x));
  charts.push_back(goodput_chart(x));
  charts.push_back(token_goodput_chart(x));
  charts.push_back(attainment_chart(x));
  for (const auto& [key, label] : kMetrics) charts.push_back(pct_by_load_chart(in, x.any_trials, key, label));
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

/// An INVALID point's validity cell: the badge and every reason (code and message), as in the
/// header of the point's own section.
static std::string invalid_cell(const RunSummary& s) {
  std::string o = fmt::format("<span class=\"badge invalid\" title=\"{}\">INVALID</span>", html_escape(s.reasons_text()));
  if (s.reasons.empty()) {
    if (!s.validity_reason.empty()) o += "<br><span class=\"note\">" + html_escape(s.validity_reason) + "</span>";
    return o;
  }
  o += "<ul class=\"reasons point-reasons\">";
  for (const auto& r : s.reasons) {
    o += fmt::format("<li data-code=\"{}\">{}{}</li>", html_escape(r.code), r.code.empty() ? "" : "<code>" + html_escape(r.code) + "</code> ",
                     html_escape(reason_text(r)));
  }
  return o + "</ul>";
}

/// A point's accuracy or identical rate, its 95% interval small under it.
static std::string rate_cell(const RateCI& r, const char* key) {
  if (!r.known()) return fmt::format("<td data-key=\"{}\">–</td>", key);
  return fmt::format("<td data-key=\"{}\">{}{}</td>", key, rate_text(r),
                     r.has_ci() ? fmt::format("<br><span class=\"rng\">[{:.1f}–{:.1f}]</span>", r.lo * 100, r.hi * 100) : "");
}

std::string sweep_table_html(const ReportInput& in, const std::vector<RunSummary>& sums) {
  const bool any_trials = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.trials; });
  const bool any_stopped = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.stopped_early.has_value(); });
  const bool any_accuracy = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.accuracy.all.accuracy.known(); });
  const bool any_identical =
      std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.consistency.exact_match.known(); });
  // Issue 19: p99 TTFO when some point reasoned first, the prefix-cache hit rate when some point has it.
  std::vector<bool> ttfo_at(sums.size());
  std::vector<Spread> cache_at(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) {
    ttfo_at[i] = shows_ttfo(in.runs[i]);
    cache_at[i] = point_cache_hit(in.runs[i]);
  }
  const bool any_ttfo = std::find(ttfo_at.begin(), ttfo_at.end(), true) != ttfo_at.end();
  const bool any_cache = std::any_of(cache_at.begin(), cache_at.end(), [](const Spread& sp) { return sp.n > 0; });
  // With the correctness columns the table is set tighter, so that the verdicts stay in view.
  std::string o = fmt::format("<div class=\"scroll\"><table id=\"sweep-table\"{}><thead><tr><th class=\"l\">point</th>"
                              "<th>offered</th>",
                              any_accuracy || any_identical ? " class=\"compact\"" : "");
  if (any_trials) o += "<th>trials</th>";
  o += "<th>throughput (req/s)</th><th>goodput (req/s)</th><th>output tokens/s</th><th>attainment</th><th>p99 TTFT (ms)</th>"
       "<th>p99 TPOT (ms)</th><th>p99 E2E (ms)</th><th>failed</th>";
  if (any_ttfo) o += "<th>p99 TTFO (ms)</th>";
  if (any_cache) o += "<th>prefix cache hit</th>";
  if (any_accuracy) o += "<th>accuracy</th>";
  if (any_identical) o += "<th>identical</th>";
  o += "<th class=\"l\">SLO</th><th class=\"l\">validity</th>";
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
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        spread_cell(point_value(a, s.request_throughput, "request_throughput", trial_request_throughput)),
        spread_cell(point_value(a, s.request_goodput, "request_goodput", trial_request_goodput)),
        spread_cell(point_value(a, s.output_throughput, "output_throughput", trial_output_throughput)), att_text,
        spread_cell(point_latency(a, s, "ttft", "p99_ms")), spread_cell(point_latency(a, s, "tpot", "p99_ms")),
        spread_cell(point_latency(a, s, "e2e", "p99_ms")), format_number(s.failed));
    if (any_ttfo) {
      o += fmt::format("<td data-key=\"p99_ttfo_ms\">{}</td>", ttfo_at[i] ? spread_cell(point_latency(a, s, "ttfo", "p99_ms")) : "–");
    }
    if (any_cache) {
      const Spread& c = cache_at[i];
      std::string text = percent(c.median);
      if (c.has_range() && c.max > c.min) text += fmt::format("<br><span class=\"rng\">[{}–{}]</span>", percent(c.min), percent(c.max));
      o += fmt::format("<td data-key=\"prefix_cache_hit_rate\">{}</td>", text);
    }
    if (any_accuracy) o += rate_cell(s.accuracy.all.accuracy, "accuracy");
    if (any_identical) o += rate_cell(s.consistency.exact_match, "identical");
    o += fmt::format(
        "<td class=\"l\">{}</td><td class=\"l\">{}</td>",
        s.slo_verdict.empty() ? "–" : fmt::format("<span class=\"badge {}\">{}</span>", verdict_class(s.slo_verdict), s.slo_verdict),
        s.validity == "INVALID" ? invalid_cell(s) : html_escape(s.validity.empty() ? "–" : s.validity));
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
  if (any_accuracy || any_identical) {
    o += "<p class=\"chart-note\">Accuracy: graded correct; identical: answers equal to the reference's; each with its "
         "95% interval (a point with trials pools its trials' requests).</p>\n";
  }
  return o;
}

}  // namespace llmload::analysis::report_html
