// One run's charts: percentile distributions, the time series (and compute_time_series), a trials
// artifact's per-trial spread and overlaid distributions.
#include "html_report/internal.hpp"
#include "bounded_samples.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <memory>
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
// Charts of one run

std::optional<double> slo_bound(const json& result, const std::string& metric) {
  return num_at(result, {"slo", "bounds_ms", metric});
}

std::vector<Chart> percentile_charts(const RunArtifact& a) {
  std::vector<Chart> charts;
  const std::pair<const char*, const char*> metrics[] = {
      {"ttft", "TTFT"}, {"ttfo", "TTFO"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2e", "E2E"}};
  const bool ttfo = shows_ttfo(a);
  for (const auto& [key, label] : metrics) {
    if (!ttfo && std::string_view(key) == "ttfo") continue;
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
static std::string warmup_words(const json& result) {
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

namespace {

// The shaded bands of a run's time series: the discarded warmup (when something before the
// window was discarded: warmup requests, or requests intended before the window's start;
// `--warmup none` leaves only the idle start) and the drain.
std::vector<Band> window_bands(const RunArtifact& a, const TimeSeries& ts) {
  std::vector<Band> bands;
  const bool discarded_start =
      ts.window_start_s && *ts.window_start_s > 0 &&
      std::any_of(a.records().begin(), a.records().end(),
                  [&](const RequestRecord& r) { return r.warmup || to_seconds(r.t_intended) < *ts.window_start_s - 1e-9; });
  const bool auto_warmup = str_at(a.result, {"window", "warmup", "method"}) == "auto";
  if (discarded_start) {
    bands.push_back({0, *ts.window_start_s, auto_warmup ? "auto warmup (discarded)" : "warmup (discarded)", false});
  }
  if (ts.window_end_s && *ts.window_end_s < ts.end_s) bands.push_back({*ts.window_end_s, ts.end_s, "drain (discarded)", false});
  return bands;
}

// What every time-series chart of one run shares: the axis, the bands and the note, and the
// series over the intervals' midpoints.
struct SeriesFrame {
  const TimeSeries& ts;
  std::vector<Band> bands;
  std::string how;    // how the warmup was chosen
  std::string which;  // which run of a trials artifact
  std::vector<double> mid;

  Chart chart(std::string key, std::string title, std::string y_label) const {
    Chart c;
    c.key = std::move(key);
    c.title = std::move(title);
    c.x_label = "time since the run's start (s)";
    c.y_label = std::move(y_label);
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
  }
  Series series(std::string name, const std::vector<double>& y, const char* col, bool dashed = false) const {
    Series s;
    s.name = std::move(name);
    s.x = mid;
    s.y = y;
    s.color = col;
    s.dashed = dashed;
    return s;
  }
};

// TTFT p50 and p99 per interval, with the SLO's bound.
Chart ttft_chart(const SeriesFrame& f, const json& result) {
  double mx = 0;
  for (double v : f.ts.ttft_p99_ms) {
    if (std::isfinite(v)) mx = std::max(mx, v);
  }
  const auto [div, unit] = latency_unit(mx);
  std::vector<double> p50 = f.ts.ttft_p50_ms, p99 = f.ts.ttft_p99_ms;
  for (double& v : p50) v /= div;
  for (double& v : p99) v /= div;
  Chart c = f.chart("ts-ttft", "TTFT per interval", fmt::format("TTFT ({})", unit));
  c.series.push_back(f.series("p50", p50, color::kBlue));
  c.series.push_back(f.series("p99", p99, color::kVermillion));
  if (auto b = slo_bound(result, "ttft")) {
    c.hlines.push_back({*b / div, fmt::format("SLO {} {}", format_number(*b / div), unit), color::kRed});
  }
  c.note += " (by first-token time; from t_send; p99 of an interval with few requests is close to its max)";
  return c;
}

// The server's own view (its /metrics, scraped during the run), against the client's in-flight;
// nullopt without a series.
std::optional<Chart> server_chart(const SeriesFrame& f, const json& result) {
  const json* sr = find_path(result, {"server_metrics", "series"});
  if (sr == nullptr || !sr->is_object()) return std::nullopt;
  const json* t = find_path(*sr, {"t_s"});
  if (t == nullptr || !t->is_array() || t->size() < 2) return std::nullopt;
  Chart c = f.chart("ts-server", "Server: requests running and waiting", "requests");
  auto from = [&](const char* key, std::string name, const char* col, bool dashed) {
    Series s = make_series(std::move(name), col, dashed, false);
    const json* v = find_path(*sr, {key});
    if (v == nullptr || !v->is_array()) return s;
    for (std::size_t i = 0; i < t->size() && i < v->size(); ++i) {
      const double x = (*t)[i].is_number() ? (*t)[i].get<double>() : kNaN;
      s.x.push_back(x >= 0 && x <= f.ts.end_s ? x : kNaN);  // the before and after snapshots lie just outside
      s.y.push_back((*v)[i].is_number() ? (*v)[i].get<double>() : kNaN);
    }
    return s;
  };
  c.series.push_back(from("running", "running (server)", color::kBlue, false));
  c.series.push_back(from("waiting", "waiting (server)", color::kVermillion, false));
  c.series.push_back(f.series("in flight (client)", f.ts.in_flight, color::kGray, true));
  c.note += "; the server's gauges from its /metrics, one point per scrape; the client's in-flight, dashed, "
            "for comparison (the server also counts other clients)";
  return c;
}

}  // namespace

std::vector<Chart> time_series_charts(const RunArtifact& a, double interval_s, const std::string& which) {
  std::vector<Chart> charts;
  if (!a.has_records || a.records().empty()) return charts;
  const TimeSeries ts = compute_time_series(a.records(), a.result, interval_s);
  SeriesFrame f{ts, window_bands(a, ts), warmup_words(a.result), which, {}};
  for (double s : ts.start_s) f.mid.push_back(std::min(s + ts.interval_s / 2, ts.end_s));
  {
    Chart c = f.chart("ts-requests", "Requests per second", "requests/s");
    c.series.push_back(f.series("sent", ts.sends_per_s, color::kGray, true));
    c.series.push_back(f.series("completed", ts.completions_per_s, color::kBlue));
    if (std::any_of(ts.errors_per_s.begin(), ts.errors_per_s.end(), [](double v) { return v > 0; })) {
      c.series.push_back(f.series("failed", ts.errors_per_s, color::kRed));
    }
    charts.push_back(std::move(c));
  }
  {
    Chart c = f.chart("ts-tokens", "Output tokens per second", "tokens/s");
    c.series.push_back(f.series("output tokens/s", ts.tokens_per_s, color::kGreen));
    c.note += "; each request's tokens spread evenly between its first and last token";
    charts.push_back(std::move(c));
  }
  {
    Chart c = f.chart("ts-inflight", "Requests in flight", "requests (time-averaged)");
    c.series.push_back(f.series("in flight", ts.in_flight, color::kPurple));
    charts.push_back(std::move(c));
  }
  charts.push_back(ttft_chart(f, a.result));
  if (auto c = server_chart(f, a.result)) charts.push_back(std::move(*c));
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
  const std::pair<const char*, const char*> metrics[] = {
      {"ttft", "TTFT"}, {"ttfo", "TTFO"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2e", "E2E"}};
  const bool ttfo = shows_ttfo(a);
  for (const auto& [key, label] : metrics) {
    if (!ttfo && std::string_view(key) == "ttfo") continue;
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

}  // namespace llmload::analysis::report_html

namespace llmload::analysis {

using namespace report_html;

double choose_interval(double run_length_s) {
  static constexpr double kNice[] = {0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600};
  for (double v : kNice) {
    if (run_length_s / v <= 60) return v;
  }
  return std::ceil(run_length_s / 60 / 3600) * 3600;
}

TimeSeries compute_time_series(RecordRange records, const json& result, double interval_s) {
  TimeSeries ts;
  double end = 0;
  for (const auto& r : records) {
    end = std::max(end, to_seconds(r.t_intended));
    for (const auto* t : {&r.t_send, &r.t_first, &r.t_last, &r.t_done}) {
      if (*t) end = std::max(end, to_seconds(**t));
    }
  }
  ts.end_s = end;
  if (auto w0 = num_at(result, {"window", "start_s"})) ts.window_start_s = *w0;
  if (auto w1 = num_at(result, {"window", "end_s"})) ts.window_end_s = *w1;
  if (!ts.window_start_s || !ts.window_end_s) {
    std::optional<double> w0, w1;
    for (const auto& r : records) {
      if (r.warmup) continue;
      const double ti = to_seconds(r.t_intended);
      if (!w0 || ti < *w0) w0 = ti;
      if (r.t_done && (!w1 || to_seconds(*r.t_done) > *w1)) w1 = to_seconds(*r.t_done);
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
  std::vector<BoundedSamples> ttft(n);
  for (const auto& r : records) {
    if (r.t_send) ++sends[bin(to_seconds(*r.t_send))];
    if (r.t_done) ++(r.ok() ? done : errs)[bin(to_seconds(*r.t_done))];
    if (r.t_first) {
      const std::int64_t n_tok = r.output_tokens > 0 ? r.output_tokens : r.output_events;
      const double first = to_seconds(*r.t_first);
      if (n_tok > 0) {
        tokens[bin(first)] += 1;
        if (n_tok > 1) spread(tokens, static_cast<double>(n_tok - 1), first, r.t_last ? to_seconds(*r.t_last) : first);
      }
      if (r.ok()) {
        if (auto t = r.ttft()) ttft[bin(first)].add(ms_of(*t));
      }
    }
    if (r.t_send) {
      const double a = to_seconds(*r.t_send);
      const double b = r.t_done ? to_seconds(*r.t_done) : (r.t_last ? to_seconds(*r.t_last) : end);
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
      ts.ttft_p50_ms.push_back(v.percentile(50));
      ts.ttft_p99_ms.push_back(v.percentile(99));
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

}  // namespace llmload::analysis
