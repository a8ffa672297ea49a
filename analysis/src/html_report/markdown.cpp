// summary.md: the same headline numbers as the page, as Markdown.
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
#include "llmload/common/version.hpp"

namespace llmload::analysis {

using namespace report_html;

namespace {

/// A sweep point's validity cell: "valid", or "INVALID: `code` message; ..." with every reason.
std::string validity_md(const RunSummary& s) {
  if (s.validity.empty()) return "–";
  if (s.validity != "INVALID") return s.validity;
  std::string o = "INVALID";
  for (std::size_t k = 0; k < s.reasons.size(); ++k) {
    const auto& r = s.reasons[k];
    o += (k ? "; " : ": ") + (r.code.empty() ? "" : "`" + r.code + "` ") + md_cell(reason_text(r));
  }
  if (s.reasons.empty() && !s.validity_reason.empty()) o += ": " + md_cell(s.validity_reason);
  return o;
}

/// The verdicts of one run (or trials artifact): SLO, validity with every reason, trials, early stop,
/// interruption, notes.
void verdicts_md(std::string& o, const RunArtifact& a, const RunSummary& s) {
  if (!s.slo_verdict.empty()) {
    o += fmt::format("- **SLO**: {} ({}{}){}{}\n", s.slo_verdict, s.slo_spec, s.slo_view.empty() ? "" : ", " + s.slo_view + " view",
                     s.trials && !s.trial_verdicts.empty() ? "; " + trial_verdicts_text(s) + ", the majority decides" : "",
                     slo_parts_text(s));
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
}

/// The key numbers (a trials artifact: the median with the trials' [min–max]).
void key_metrics_md(std::string& o, const RunArtifact& a, const RunSummary& s, const std::string& h) {
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
}

/// The latency table (a trials artifact: the medians across trials).
void latency_md(std::string& o, const RunSummary& s, const std::string& h) {
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
}

/// The per-metric SLO table.
void slo_md(std::string& o, const json& result, const std::string& h) {
  if (const json* m = find_path(result, {"slo", "metrics"}); m != nullptr && m->is_array() && !m->empty()) {
    o += fmt::format("\n{} SLO\n\n| metric | bound (ms) | observed (ms) | over the bound | verdict | why |\n"
                     "| --- | ---: | ---: | ---: | --- | --- |\n",
                     h);
    for (const auto& v : *m) {
      o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_cell(str_at(v, {"metric"})), format_number(nan_at(v, {"bound_ms"})),
                       format_number(nan_at(v, {"observed_ms"})), format_number(nan_at(v, {"exceedances"})),
                       md_cell(str_at(v, {"verdict"})), md_cell(str_at(v, {"explanation"})));
    }
  }
}

/// Everything about one run (the whole summary for a run; a point's section in a sweep).
void run_md(std::string& o, const RunArtifact& a, const RunSummary& s, const std::string& h) {
  verdicts_md(o, a, s);
  scorecard_md(o, s, h);
  key_metrics_md(o, a, s, h);
  latency_md(o, s, h);
  prefix_cache_md(o, a.result);
  structured_output_md(o, a.result);
  if (s.trials) trials_md(o, a, s, h);
  slo_md(o, a.result, h);
  reasoning_md(o, a.result, h);
  by_model_md(o, a.result, shows_ttfo(a), h);
  correctness_md(o, s, h);
  probe_md(o, a.result, h);
  if (!s.trials) {
    stages_md(o, a.result, h);
    window_md(o, a, s, h);
    cross_checks_md(o, a.result, h);
  }
  if (const auto rows = condition_rows(a.result); !rows.empty()) {
    o += fmt::format("\n{} Conditions\n\n", h);
    for (const auto& [k, v] : rows) o += fmt::format("- **{}**: {}\n", k, k == "command line" ? "`" + v + "`" : v);
  }
}

/// A point's rate with its 95% interval: "88.0% [82.8–91.8%]" ("–" when unknown).
std::string rate_md(const RateCI& r) {
  if (!r.known()) return "–";
  return r.has_ci() ? rate_text(r) + " [" + rate_ci_text(r) + "]" : rate_text(r);
}

/// The sweep's points table (accuracy and identical columns when any point has them).
void points_md(std::string& o, const ReportInput& in, const std::vector<RunSummary>& sums) {
  const bool any_accuracy = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.accuracy.all.accuracy.known(); });
  const bool any_identical =
      std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.consistency.exact_match.known(); });
  const bool any_ttfo = std::any_of(in.runs.begin(), in.runs.end(), [](const RunArtifact& a) { return shows_ttfo(a); });
  const bool any_cache =
      std::any_of(in.runs.begin(), in.runs.end(), [](const RunArtifact& a) { return point_cache_hit(a).n > 0; });
  o += "\n## Points\n\n| point | offered | throughput (req/s) | goodput (req/s) | output tokens/s | attainment | p99 TTFT (ms) | "
       "p99 TPOT (ms) | p99 E2E (ms) | failed |";
  o += std::string(any_ttfo ? " p99 TTFO (ms) |" : "") + (any_cache ? " prefix cache hit |" : "");
  o += std::string(any_accuracy ? " accuracy |" : "") + (any_identical ? " identical |" : "");
  o += " SLO | validity | trials | stopped early |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";
  o += std::string(any_ttfo ? " ---: |" : "") + (any_cache ? " ---: |" : "");
  o += std::string(any_accuracy ? " ---: |" : "") + (any_identical ? " ---: |" : "");
  o += " --- | --- | ---: | --- |\n";
  const auto cap = capacity_index(in);
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const RunSummary& s = sums[i];
    const RunArtifact& a = in.runs[i];
    o += fmt::format("| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |", md_cell(s.name), cap && *cap == i ? " (capacity)" : "",
                     load_text(in.offered[i], in.load_kind),
                     spread_text(point_value(a, s.request_throughput, "request_throughput", trial_request_throughput)),
                     spread_text(point_value(a, s.request_goodput, "request_goodput", trial_request_goodput)),
                     spread_text(point_value(a, s.output_throughput, "output_throughput", trial_output_throughput)),
                     percent(s.attainment), spread_text(point_latency(a, s, "ttft", "p99_ms")),
                     spread_text(point_latency(a, s, "tpot", "p99_ms")), spread_text(point_latency(a, s, "e2e", "p99_ms")),
                     format_number(s.failed));
    if (any_ttfo) o += " " + (shows_ttfo(a) ? spread_text(point_latency(a, s, "ttfo", "p99_ms")) : std::string("–")) + " |";
    if (any_cache) {
      const Spread c = point_cache_hit(a);
      o += " " + percent(c.median) +
           (c.has_range() && c.max > c.min ? fmt::format(" [{}–{}]", percent(c.min), percent(c.max)) : std::string()) + " |";
    }
    if (any_accuracy) o += " " + rate_md(s.accuracy.all.accuracy) + " |";
    if (any_identical) o += " " + rate_md(s.consistency.exact_match) + " |";
    o += fmt::format(" {} | {} | {} | {} |\n", s.slo_verdict.empty() ? "–" : s.slo_verdict, validity_md(s),
                     s.trials ? std::to_string(s.n_trials) : "1", s.stopped_early ? md_cell(*s.stopped_early) : "–");
  }
}

}  // namespace

std::string render_markdown(const ReportInput& in) {
  const std::vector<RunSummary> sums = summaries(in);
  std::string o;
  if (!in.sweep) {
    o += fmt::format("# llmload {}report: {}\n\n", in.runs.front().is_trials() ? "trials " : "", in.runs.front().name);
    run_md(o, in.runs.front(), sums.front(), "##");
    o += "\nCharts: report.html. Definitions: docs/metrics.md.\n";
    return o;
  }
  o += fmt::format("# llmload sweep report: {}\n\n", name_of(fs::path(in.dir)));
  const CapacityValidity cv = capacity_validity(in, sums);
  o += fmt::format("- **Points**: {}\n- **Capacity**: {}{}{}\n", in.runs.size(), capacity_text(in),
                   in.capacity_source.empty() ? "" : " (from " + in.capacity_source + ")",
                   cv.ok() ? "" : " — **" + capacity_validity_text(cv) + "**");
  if (const std::string d = capacity_details(in); !d.empty()) o += "- **Capacity search**: " + d + "\n";
  if (const std::string slo = sweep_slo_text(in); !slo.empty()) o += "- **SLO**: " + slo + "\n";
  for (const auto& n : in.notes) o += "- Note: " + n + "\n";
  const bool any_trials = std::any_of(sums.begin(), sums.end(), [](const RunSummary& s) { return s.trials; });
  points_md(o, in, sums);
  if (any_trials) o += "\nA point with trials: the median across its trials, [min–max] in brackets.\n";
  if (!sums.empty() && sums.front().slo_view == "response") {
    o += "\np99 TTFT and E2E measured from t_intended, the view the SLO is judged in.\n";
  }
  for (std::size_t i = 0; i < in.runs.size(); ++i) {
    o += fmt::format("\n## {} (offered {})\n\n", in.runs[i].name, load_text(in.offered[i], in.load_kind));
    run_md(o, in.runs[i], sums[i], "###");
  }
  o += "\nCharts: report.html. Definitions: docs/metrics.md.\n";
  return o;
}

}  // namespace llmload::analysis
