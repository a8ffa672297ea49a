#pragma once
// Internal to the report (docs/report.md); the public API is llmload/analysis/html_report.hpp.
//
// Where things are (analysis/src/html_report/):
//   html_report.cpp     the top: render_html assembles the page (a run, trials or a sweep), run_body
//                       one run's sections in order, write_report writes the three files
//   read.cpp            reading an artifact directory into RunArtifact / ReportInput
//   model.cpp           the page's model: RunSummary (summarize) and the spread across trials
//   text.cpp            JSON access, escaping (HTML, CSV, Markdown) and number formatting
//   svg.cpp             the chart model (Chart, Series, ...) rendered as inline SVG
//   run_charts.cpp      one run's charts: percentile distributions, time series, per-trial spread
//   page.cpp            the page frame: <head>, the inline style sheet and script, the footer
//   summary.cpp         a run's headline sections: badges, key numbers, latency/SLO/error tables,
//                       conditions
//   window.cpp          the measurement window section (HTML and Markdown)
//   server_metrics.cpp  the server cross-checks section (HTML and Markdown)
//   trials.cpp          a trials artifact's sections (HTML and Markdown)
//   stages.cpp          a multi-stage run's Stages section (HTML and Markdown)
//   correctness.cpp     the Scorecard block and the Correctness section (accuracy, consistency; HTML
//                       and Markdown)
//   breakdowns.cpp      issue 19's sections: reasoning phases, per-model table, prefix-cache hit rate
//                       (HTML and Markdown)
//   sweep.cpp           a sweep's charts, capacity and points table
//   markdown.cpp        summary.md
//   csv.cpp             summary.csv
//   probe.cpp           the probe stream's section and summary.csv columns (probe.hpp)

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/html_report.hpp"
#include "../numeric.hpp"
#include "llmload/common/duration.hpp"

namespace llmload::analysis::report_html {

namespace fs = std::filesystem;
using nlohmann::json;


inline double ms_of(Nanos d) { return static_cast<double>(d.count()) / 1e6; }

// ---------------------------------------------------------------------------------------------
// The model: what the page shows of one run (model.cpp), and the charts (svg.cpp)
struct Spread {
  std::size_t n = 0;
  double median = kNaN, min = kNaN, max = kNaN, mean = kNaN, cv = kNaN;
  double ci_low = kNaN, ci_high = kNaN;
  std::string ci_method, ci_note;
  bool noisy = false;
  std::string noisy_reason;
  bool has_range() const { return n > 1 && std::isfinite(min) && std::isfinite(max); }
};

struct Reason {
  std::string code;     // "schedule_lag", "error_rate", ... ("" in the old shape)
  std::string message;
  std::optional<int> trial;
};

struct Load {
  double value = kNaN;
  std::string kind;
};

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

inline constexpr MetricDef kMetricDefs[] = {
    {"ttft", "TTFT", "latency", "ttft"},
    {"ttfo", "TTFO", "latency", "ttfo"},  // shown only when the run reasoned first (shows_ttfo)
    {"tpot", "TPOT", "latency", "tpot"},
    {"itl", "ITL", "latency", "itl"},
    {"e2e", "E2E", "latency", "e2e"},
    {"ttft_rt", "TTFT from t_intended", "response_time", "ttft"},
    {"ttfo_rt", "TTFO from t_intended", "response_time", "ttfo"},
    {"e2e_rt", "E2E from t_intended", "response_time", "e2e"},
    {"schedule_lag", "schedule lag", "schedule_lag", nullptr},
};

// ---------------------------------------------------------------------------------------------
// Correctness (result.json "accuracy", "consistency", "scorecard"; read by model.cpp, shown by
// correctness.cpp)

/// A rate with its 95% interval and the count it is over (NaN where unknown).
struct RateCI {
  double rate = kNaN, lo = kNaN, hi = kNaN, n = kNaN;
  bool known() const { return std::isfinite(rate); }
  bool has_ci() const { return std::isfinite(lo) && std::isfinite(hi); }
};

/// Graded counts of a run, or of one grader or subset.
struct GradedCounts {
  std::string name;  // the grader or subset ("" for the run)
  double graded = kNaN, correct = kNaN, incorrect = kNaN, unparsed = kNaN, unparsed_rate = kNaN;
  RateCI accuracy;  // n: graded
};

struct AccuracySummary {
  bool present = false;  // result.json "accuracy" is an object (or a sweep.json point's "accuracy")
  GradedCounts all;
  double confidence = kNaN, failed_requests = kNaN;
  std::vector<GradedCounts> by_grader, by_subset;
  double correct_goodput_requests = kNaN, correct_goodput_rate = kNaN;
  std::string correct_goodput_meaning;
  // The accuracy SLO (accuracy.slo, else slo.accuracy): present when min_accuracy or a verdict is.
  double min_accuracy = kNaN;
  std::string slo_verdict, slo_method, slo_reason;
  std::string from;  // how the numbers were pooled (a trials artifact), or "sweep.json"
  bool has_slo() const { return std::isfinite(min_accuracy) || !slo_verdict.empty(); }
};

struct DivergenceBin {
  double from = kNaN, to = kNaN, count = kNaN;
};

struct DivergedRequest {
  double item = kNaN, position = kNaN;
  std::string reference, output;  // excerpts
};

struct ConsistencySummary {
  bool present = false;  // result.json "consistency" is an object (or a sweep.json point's)
  std::string method;    // "words" or "tokenizer"
  RateCI exact_match;    // n: compared
  double identical = kNaN, confidence = kNaN, tested_requests = kNaN;
  bool has_divergence = false;  // first_divergence is an object
  double div_count = kNaN, div_min = kNaN, div_p50 = kNaN, div_p90 = kNaN, div_max = kNaN, div_mean = kNaN;
  std::vector<DivergenceBin> histogram;
  std::vector<DivergedRequest> diverged;
  std::string reference_kind, reference_dir, reference_load;  // reference.kind ("pass", "run"), dir, load
  std::string from;
};

/// result.json "scorecard": NaN / "" / nullopt where the artifact has null.
struct Scorecard {
  bool present = false;
  RateCI accuracy, exact_match;
  double unparsed_rate = kNaN;
  double request_goodput = kNaN, correct_goodput = kNaN, request_throughput = kNaN;
  double p99_ttft_ms = kNaN, p99_tpot_ms = kNaN, p99_e2el_ms = kNaN;
  std::string slo_verdict;
  double cost_per_million = kNaN, energy_per_token_j = kNaN;
  double error_rate = kNaN;
  std::optional<std::vector<std::pair<std::string, double>>> errors_by_class;
  std::optional<bool> valid;
};

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
  std::string slo_latency_verdict;  // slo.latency_verdict (beside slo.accuracy), "" when absent
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
  AccuracySummary accuracy;
  ConsistencySummary consistency;
  Scorecard scorecard;
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
  bool bars = false;  // a histogram: per point a bar over [x_lo, x_hi] from 0 up to y (no whiskers, line or markers)
};

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
inline constexpr const char* kBlue = "#0072B2";
inline constexpr const char* kVermillion = "#D55E00";
inline constexpr const char* kGreen = "#009E73";
inline constexpr const char* kPurple = "#CC79A7";
inline constexpr const char* kGray = "#7a7a7a";
inline constexpr const char* kRed = "#c0392b";
}  // namespace color

// ---------------------------------------------------------------------------------------------
// Functions shared between the files, by the file that defines them

// ---- text.cpp

const json* find_path(const json& j, std::initializer_list<std::string_view> path);
std::optional<double> num_at(const json& j, std::initializer_list<std::string_view> path);
double nan_at(const json& j, std::initializer_list<std::string_view> path);
/// A boolean member; `def` when absent or not a boolean (a hand-edited artifact never throws).
bool flag(const json& j, const char* key, bool def);
std::string str_at(const json& j, std::initializer_list<std::string_view> path);
/// A scalar JSON value as text ("" for null, objects and arrays).
std::string scalar_text(const json& v);
std::string html_escape(std::string_view s);
std::string csv_field(const std::string& s);
/// Markdown table cell: pipes escaped, line breaks removed.
std::string md_cell(std::string_view s);
/// Exact (round-trip) number for the CSV; empty when unknown.
std::string csv_number(double v);
std::string shell_join(const json& argv);
std::string percent(double fraction);
/// A signed percentage ("+3.2%", "-12.0%").
std::string signed_percent(double fraction);

// ---- model.cpp

/// Median (the mean of the two middle values for an even count), min and max of the finite values.
Spread spread_of_values(std::vector<double> v);
/// result.json "trial_summary"[key] (analysis::to_json(TrialSummary)), when there.
std::optional<Spread> summary_spread(const json& result, const std::string& key);
/// "70.5 [69–72]" (the median and the min–max across trials), or the value alone.
std::string spread_text(const Spread& s);
/// spread_text for a table cell: the median, and the [min–max] small on a second line.
std::string spread_cell(const Spread& s);
/// The CI as "[a, b]" ("–" without one).
std::string ci_text(const Spread& s);
/// validity.reasons (the current shape), else validity.reason (older artifacts) when invalid.
std::vector<Reason> validity_reasons(const json& result);
/// A stopped_early value (null, false, a reason string, true, or {"reason": ...}) as its reason;
/// nullopt when not stopped early.
std::optional<std::string> stopped_reason(const json* v);
/// A point's SLO verdict: its result.json's, else its sweep.json entry's ("" when none).
std::string point_verdict(const json& result, const json& entry);
/// A trials artifact's offered load: its own result.json, else its first trial's.
Load offered_of_artifact(const RunArtifact& a);
std::string load_unit(const std::string& kind);
std::string load_text(double v, const std::string& kind);
const char* vllm_name(std::string_view metric);
/// The spread of one headline number across a trials artifact's trials: result.json
/// "trial_summary"[key], else the values in result.json "trials"[][key], else `from_trial` of each
/// trial read from its directory. n = 0 when none of these has it.
Spread trial_spread(const RunArtifact& a, const std::string& key, double (*from_trial)(const json& trial_result) = nullptr);
double trial_token_goodput(const json& r);
double trial_attainment(const json& r);
double trial_request_goodput(const json& r);
std::vector<RunSummary> summaries(const ReportInput& in);
/// Whether TTFO is shown beside TTFT: some measured request's first token was reasoning
/// (result.json requests.reasoning_first, else the records; a trials artifact: any trial's).
bool shows_ttfo(const RunArtifact& a);

// ---- correctness.cpp

/// A rate as a percentage ("88.0%"; "—" when unknown).
std::string rate_text(const RateCI& r);
/// Its 95% interval ("82.8–91.8%"; "" without one).
std::string rate_ci_text(const RateCI& r);
/// The "Scorecard" block (id <prefix>scorecard) from result.json "scorecard": correctness,
/// performance, cost, reliability, "—" for null. "" when the artifact has no scorecard.
std::string scorecard_html(const RunSummary& s, const std::string& prefix, int h);
void scorecard_md(std::string& o, const RunSummary& s, const std::string& h);
/// The "Correctness" section (id <prefix>correctness): accuracy (per grader, per subset, correct
/// goodput, the accuracy SLO) and consistency (exact-match rate, the first-divergence histogram, the
/// diverged requests). "" when the run has neither.
std::string correctness_html(const RunArtifact& a, const RunSummary& s, const std::string& prefix, int h);
void correctness_md(std::string& o, const RunSummary& s, const std::string& h);

// ---- breakdowns.cpp

/// The "Reasoning" section (id <prefix>reasoning) from result.json `reasoning`; "" when null.
std::string reasoning_html(const json& result, const std::string& prefix, int h);
void reasoning_md(std::string& o, const json& result, const std::string& h);
/// The "Per model" table (id <prefix>by-model) from result.json `by_model`; "" when null. The TTFO
/// column with `ttfo`.
std::string by_model_html(const json& result, bool ttfo, const std::string& prefix, int h);
void by_model_md(std::string& o, const json& result, bool ttfo, const std::string& h);
/// The prefix-cache line (id <prefix>prefix-cache) from result.json `prefix_cache`; "" when null.
std::string prefix_cache_html(const json& result, const std::string& prefix);
void prefix_cache_md(std::string& o, const json& result);
/// The tool-call / structured-output validity line (id <prefix>structured-output) from result.json
/// `structured_output`, with the first invalid examples; "" when null.
std::string structured_output_html(const json& result, const std::string& prefix);
void structured_output_md(std::string& o, const json& result);

// ---- read.cpp

std::string name_of(const fs::path& dir);

// ---- svg.cpp

Series make_series(std::string name, const char* col, bool dashed, bool markers);
/// i-th of n colors along a viridis-like ramp (dark purple to green), readable on white.
std::string ramp_color(std::size_t i, std::size_t n);
/// x position of percentile p (in %) on a percentile axis: log10(1/(1-p)); 100% (the maximum)
/// goes to the end of the curve, as percentile_curve() samples it.
double percentile_x(double p, std::int64_t count);
bool chart_has_data(const Chart& c);
std::string render_chart(const Chart& c, const std::string& id);
/// Unit for a latency axis: ms, or s when the values reach 10 s.
std::pair<double, std::string> latency_unit(double max_ms);

// ---- run_charts.cpp

std::optional<double> slo_bound(const json& result, const std::string& metric);
std::vector<Chart> percentile_charts(const RunArtifact& a);
std::vector<Chart> time_series_charts(const RunArtifact& a, double interval_s, const std::string& which = {});
/// Per-trial spread: result.json "trials", an array of objects carrying the headline numbers
/// (directly, or under "result" or "metrics"), numbered by their "trial" (else 1, 2, ...). The
/// median line, and the 95% CI from "trial_summary" when there; invalid and stopped-early trials
/// are marked.
std::vector<Chart> trial_charts(const json& result);
/// A trials artifact's percentile distributions: one curve per trial (from t_send), overlaid.
std::vector<Chart> trial_percentile_charts(const RunArtifact& a);

// ---- page.cpp

std::string page(const std::string& title, const std::string& body);

// ---- summary.cpp

std::string verdict_class(const std::string& v);
/// "2 of 3 trials PASS" (trial verdicts of a trials artifact).
std::string trial_verdicts_text(const RunSummary& s);
std::string reason_text(const Reason& r);
/// The parts of an SLO verdict with an accuracy bound: "; latency PASS, accuracy ≥ 85.0% FAIL" ("" without one).
std::string slo_parts_text(const RunSummary& s);
std::string badges_html(const RunSummary& s, const std::string& prefix);
std::string notes_html(const std::vector<std::string>& notes);
std::string cost_text(const RunSummary& s);
std::string kv_html(const RunArtifact& a, const RunSummary& s, const std::string& prefix);
std::string latency_table_html(const RunSummary& s, const std::string& id);
std::string slo_table_html(const json& result);
std::string errors_html(const json& result);
std::vector<std::pair<std::string, std::string>> condition_rows(const json& result);
/// The models a run's requests went to: every model of `--model a,b,c` ("a,b,c", from
/// conditions.scenario.model_mix), else conditions.model ("" when neither is there).
std::string models_text(const json& conditions);
std::string conditions_html(const json& result, const std::string& id);
std::string charts_html(const std::vector<Chart>& charts, const std::string& prefix);

// ---- window.cpp

std::string yes_no_badge(bool ok, const std::string& yes, const std::string& no);
/// How the measurement window was chosen: the window, the warmup (and its automatic detection),
/// the cooldown, and the minimums.
std::string window_html(const RunArtifact& a, const RunSummary& s, const std::string& prefix, int h);
void window_md(std::string& o, const RunArtifact& a, const RunSummary& s, const std::string& h);

// ---- server_metrics.cpp

/// The server-metrics cross-checks: client vs server TTFT, and Little's law.
std::string cross_checks_html(const json& r, const std::string& prefix, int h);
void cross_checks_md(std::string& o, const json& r, const std::string& h);

// ---- trials.cpp

/// A trials artifact: the spread of every headline number, one row per trial, and each trial's
/// cross-checks.
std::string trials_html(const RunArtifact& a, const RunSummary& s, const HtmlReportOptions& options, const std::string& prefix,
                        int h);
void trials_md(std::string& o, const RunArtifact& a, const RunSummary& s, const std::string& h);

// ---- stages.cpp

/// The "Stages" section of a multi-stage run (result.json "stages"; id <prefix>stages): one row per
/// stage. "" when the run has no stages.
std::string stages_html(const json& result, const std::string& prefix, int h);
/// The same as a summary.md table (nothing without stages).
void stages_md(std::string& o, const json& result, const std::string& h);

// ---- sweep.cpp

/// A sweep point's latency: a run's value (n = 1), or for a trials artifact the median with
/// min–max of its trials' values (each in the SLO's view), else of result.json's vLLM-style keys.
Spread point_latency(const RunArtifact& a, const RunSummary& s, const std::string& metric, const char* field);
/// A sweep point's prefix-cache hit rate (result.json prefix_cache.hit_rate, else server_hit_rate):
/// the run's, or the median with min–max of its trials'; n = 0 when none has it.
Spread point_cache_hit(const RunArtifact& a);
double trial_request_throughput(const json& r);
double trial_output_throughput(const json& r);
/// A sweep point's headline number: the run's value, or for a trials artifact its median (the
/// headline) with the trials' min–max.
Spread point_value(const RunArtifact& a, double value, const std::string& key, double (*from_trial)(const json&));
/// The point at the capacity (the highest passing load), when there is one.
std::optional<std::size_t> capacity_index(const ReportInput& in);
/// Whether the capacity can be taken at face value: no point bounding it (the highest passing or
/// the lowest failing load) is INVALID, and sweep.json's "capacity" does not say "valid": false.
struct CapacityValidity {
  struct Point {
    std::size_t index = 0;
    std::string name;
    std::string role;     // "the highest passing load" / "the lowest failing load"
    std::string reasons;  // its reason codes, ", "-separated (the message where there is no code)
  };
  std::vector<Point> invalid_points;
  bool search_invalid = false;              // sweep.json capacity.valid false
  std::vector<std::string> search_reasons;  // sweep.json capacity.invalid_reasons
  bool ok() const { return invalid_points.empty() && !search_invalid; }
};
CapacityValidity capacity_validity(const ReportInput& in, const std::vector<RunSummary>& sums);
/// "INVALID points: rate-20 (error_rate); capacity search not valid: ..." ("" when ok()).
std::string capacity_validity_text(const CapacityValidity& v);
std::vector<Chart> sweep_charts(const ReportInput& in, const std::vector<RunSummary>& sums);
std::string capacity_text(const ReportInput& in);
/// sweep.json's "slo": a spec string, or an object holding one.
std::string sweep_slo_text(const ReportInput& in);
/// The capacity search's details from sweep.json "capacity" (analysis::to_json(CapacityResult)):
/// why it stopped, the goodput and throughput at capacity, the tolerance and bracket width.
std::string capacity_details(const ReportInput& in);
std::string sweep_table_html(const ReportInput& in, const std::vector<RunSummary>& sums);

}  // namespace llmload::analysis::report_html
