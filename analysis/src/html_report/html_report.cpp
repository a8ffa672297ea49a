// The top of the report (docs/report.md): render_html assembles the page of a run, a trials artifact or a
// sweep from the sections in the other files; run_body is one run's sections in page order;
// write_report writes report.html, summary.md and summary.csv. Map of the files: internal.hpp.
#include "html_report/internal.hpp"
#include "html_report/probe.hpp"

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
#include "llmload/analysis/jsonl_records.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis::report_html {

/// Everything about one run (the whole page for a run; a point's details in a sweep). A trials
/// artifact: the spread across trials, each trial's distributions, and trial 1 over time.
static std::string run_body(const RunArtifact& a, const RunSummary& s, const HtmlReportOptions& options,
                            const std::string& prefix, int h) {
  std::string o;
  o += badges_html(s, prefix);
  o += notes_html(a.notes);
  o += scorecard_html(s, prefix, h);
  if (s.trials) {
    o += fmt::format("<h{0}>Key metrics, median across trials</h{0}>\n", h);
    o += kv_html(a, s, prefix);
    o += trials_html(a, s, options, prefix, h);
    o += latency_table_html(s, prefix + "latency-table");
    o += prefix_cache_html(a.result, prefix);
    o += structured_output_html(a.result, prefix);
    o += errors_html(a.result);
    o += probe_html(a.result, prefix, h);
    o += reasoning_html(a.result, prefix, h);
    o += by_model_html(a.result, shows_ttfo(a), prefix, h);
    o += correctness_html(a, s, prefix, h);
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
    o += prefix_cache_html(a.result, prefix);
    o += structured_output_html(a.result, prefix);
    o += slo_table_html(a.result);
    o += errors_html(a.result);
    o += probe_html(a.result, prefix, h);
    o += reasoning_html(a.result, prefix, h);
    o += by_model_html(a.result, shows_ttfo(a), prefix, h);
    o += correctness_html(a, s, prefix, h);
    o += stages_html(a.result, prefix, h);
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

/// The capacity badge: green (pass) only when the points bounding it are VALID and the search does
/// not say otherwise; else in the warning style with what is wrong, listed below it.
static std::string capacity_badge_html(const ReportInput& in, const std::vector<RunSummary>& sums) {
  const CapacityValidity v = capacity_validity(in, sums);
  std::string cls = in.highest_pass ? "pass" : (in.lowest_fail ? "fail" : "neutral");
  std::string text = capacity_text(in);
  if (!v.ok()) {
    cls = "warn";
    text += " (" + capacity_validity_text(v) + ")";
  }
  std::string o = fmt::format("<span class=\"badge {}\" id=\"verdict-capacity\"{}>{}</span>", cls,
                              v.ok() ? "" : " data-valid=\"false\"", html_escape(text));
  o += "</div>\n";
  if (v.ok()) return o;
  o += "<ul class=\"reasons\" id=\"capacity-validity\">";
  for (const auto& p : v.invalid_points) {
    o += fmt::format("<li data-point=\"{}\">{}, {}, is INVALID{}: the capacity rests on it</li>", p.index, html_escape(p.name),
                     html_escape(p.role), p.reasons.empty() ? "" : " (" + html_escape(p.reasons) + ")");
  }
  if (v.search_invalid) {
    o += "<li data-search=\"invalid\">the capacity search says its answer is not valid";
    for (std::size_t k = 0; k < v.search_reasons.size(); ++k) o += (k ? "; " : ": ") + html_escape(v.search_reasons[k]);
    o += "</li>";
  }
  return o + "</ul>\n";
}

static void write_file(const fs::path& p, const std::string& text) {
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

}  // namespace llmload::analysis::report_html

namespace llmload::analysis {

using namespace report_html;

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
    if (const json* c = find_path(a.result, {"conditions"}); c != nullptr) {
      if (const std::string m = models_text(*c); !m.empty()) {
        sub += (m.find(',') == std::string::npos ? " · model " : " · models ") + m;
      }
    }
    body += "<p class=\"sub\">" + html_escape(sub) + "</p></header>\n";
    body += run_body(a, sums.front(), options, "", 2);
    return page("llmload report: " + a.name, body);
  }
  body += "<header id=\"report-header\"><h1>llmload sweep report</h1>\n";
  body += fmt::format("<p class=\"sub\">{} · {} points{}</p>\n", html_escape(in.dir), in.runs.size(),
                      in.load_kind.empty() ? "" : html_escape(" · offered " + load_unit(in.load_kind)));
  body += "<div class=\"badges\">";
  body += capacity_badge_html(in, sums);
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

ReportFiles write_report(const std::string& dir, const HtmlReportOptions& options) {
  if (options.interval_s < 0 || !std::isfinite(options.interval_s)) {
    throw ReportError(fmt::format("--interval {}: must be a positive number of seconds (0: automatic)", options.interval_s));
  }
  const ReportInput in = read_report_input(dir, options.run_records, options.keep_records);
  const fs::path out = options.output_dir.empty() ? fs::path(dir) : fs::path(options.output_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ReportWriteError(fmt::format("cannot create {}: {}", out.string(), ec.message()));
  ReportFiles files;
  files.html = (out / "report.html").string();
  files.markdown = (out / "summary.md").string();
  files.csv = (out / "summary.csv").string();
  std::string html, markdown, csv;
  try {
    html = render_html(in, options);
    markdown = render_markdown(in);
    csv = render_csv(in);
  } catch (const RecordFileError& e) {
    // A pass over requests.jsonl (read a record at a time) found it changed or gone since it was
    // read, or its kept records could not be read back; the message names the file. Any other
    // error is the program's own, not bad input.
    throw ReportError(e.what());
  }
  write_file(files.html, html);
  write_file(files.markdown, markdown);
  write_file(files.csv, csv);
  files.notes = in.notes;
  for (const auto& r : in.runs) {
    for (const auto& n : r.notes) files.notes.push_back(in.sweep ? r.name + ": " + n : n);
  }
  return files;
}

}  // namespace llmload::analysis
