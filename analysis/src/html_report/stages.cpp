// The Stages section (docs/report.md): per-stage results of a multi-stage run (--scenario stages),
// from result.json "stages" (analysis::stages_json), as an HTML table and in summary.md.
#include "html_report/internal.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace llmload::analysis::report_html {

namespace {

/// The stages of a run: result.json "stages" when it is a non-empty array of objects.
std::vector<const json*> stage_entries(const json& result) {
  std::vector<const json*> out;
  const json* st = find_path(result, {"stages"});
  if (st == nullptr || !st->is_array()) return out;
  for (const auto& e : *st) {
    if (e.is_object()) out.push_back(&e);
  }
  return out;
}

struct StageRow {
  std::string stage, load, span, requests, completed, failed, throughput, tokens, attainment;
  std::vector<std::string> latency;  // TTFT p50, p99, TPOT p50, p99, E2E p50, p99 (ms)
};

StageRow stage_row(const json& e) {
  StageRow r;
  r.stage = format_number(nan_at(e, {"stage"}));
  r.load = str_at(e, {"load"});
  if (r.load.empty()) r.load = "–";
  r.span = fmt::format("{}–{}", format_number(nan_at(e, {"start_s"})), format_number(nan_at(e, {"end_s"})));
  r.requests = format_number(nan_at(e, {"requests"}));
  r.completed = format_number(nan_at(e, {"completed"}));
  r.failed = format_number(nan_at(e, {"failed"}));
  r.throughput = format_number(nan_at(e, {"request_throughput"}));
  r.tokens = format_number(nan_at(e, {"output_throughput"}));
  r.attainment = percent(nan_at(e, {"slo_attainment"}));
  for (const char* m : {"ttft_ms", "tpot_ms", "e2e_ms"}) {
    for (const char* p : {"p50", "p99"}) r.latency.push_back(format_number(nan_at(e, {m, p})));
  }
  return r;
}

constexpr const char* kLatencyHeads[] = {"TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99"};

}  // namespace

std::string stages_html(const json& result, const std::string& prefix, int h) {
  const auto entries = stage_entries(result);
  if (entries.empty()) return {};
  std::string o = fmt::format("<h{0}>Stages</h{0}>\n<div class=\"scroll\"><table id=\"{1}stages\"><thead><tr><th>stage</th>"
                              "<th class=\"l\">load</th><th>span (s)</th><th>requests</th><th>completed</th><th>failed</th>"
                              "<th>throughput (req/s)</th><th>output tokens/s</th>",
                              h, prefix);
  for (const char* head : kLatencyHeads) o += fmt::format("<th>{} (ms)</th>", head);
  o += "<th>SLO attainment</th></tr></thead><tbody>\n";
  for (const json* e : entries) {
    const StageRow r = stage_row(*e);
    o += fmt::format("<tr data-stage=\"{}\"><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td>",
                     html_escape(r.stage), html_escape(r.stage), html_escape(r.load), html_escape(r.span), r.requests,
                     r.completed, r.failed, r.throughput, r.tokens);
    for (const auto& v : r.latency) o += "<td>" + v + "</td>";
    o += "<td>" + r.attainment + "</td></tr>\n";
  }
  o += "</tbody></table></div>\n";
  o += "<p class=\"chart-note\">Each stage's requests (released in the stage, warmup excluded) and their latency "
       "percentiles; throughput counts the requests completing within the stage's span, per second of it.</p>\n";
  return o;
}

void stages_md(std::string& o, const json& result, const std::string& h) {
  const auto entries = stage_entries(result);
  if (entries.empty()) return;
  o += fmt::format("\n{} Stages\n\n| stage | load | span (s) | requests | completed | failed | throughput (req/s) | "
                   "output tokens/s |",
                   h);
  for (const char* head : kLatencyHeads) o += fmt::format(" {} (ms) |", head);
  o += " SLO attainment |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |";
  for (std::size_t i = 0; i < std::size(kLatencyHeads); ++i) o += " ---: |";
  o += " ---: |\n";
  for (const json* e : entries) {
    const StageRow r = stage_row(*e);
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |", r.stage, md_cell(r.load), r.span, r.requests, r.completed,
                     r.failed, r.throughput, r.tokens);
    for (const auto& v : r.latency) o += " " + v + " |";
    o += " " + r.attainment + " |\n";
  }
}

}  // namespace llmload::analysis::report_html
