// The report's probe-stream section: see probe.hpp.
#include "html_report/probe.hpp"

#include "html_report/internal.hpp"

namespace llmload::analysis::report_html {
namespace {

// A run's section has distributions ("ttft": {...}); a trials artifact's has medians
// ("ttft_p50_ms").
bool trials_form(const json& p) { return p.contains("trials"); }

std::string ms(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "–"; }

struct ProbeRow {
  std::string label;
  double count = kNaN, mean = kNaN, p50 = kNaN, p90 = kNaN, p99 = kNaN;
};

std::vector<ProbeRow> rows_of(const json& p) {
  std::vector<ProbeRow> rows;
  auto dist = [&](const char* label, const json& d) {
    if (!d.is_object()) return;
    rows.push_back({label, nan_at(d, {"count"}), nan_at(d, {"mean_ms"}), nan_at(d, {"p50_ms"}), nan_at(d, {"p90_ms"}),
                    nan_at(d, {"p99_ms"})});
  };
  for (const auto& [key, label] : {std::pair{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2e", "E2E"}}) {
    if (p.contains(key)) dist(label, p[key]);
  }
  if (const json* b = find_path(p, {"baseline", "ttft"})) dist("TTFT, unloaded (before the load)", *b);
  return rows;
}

std::string settings_text(const json& result, const json& p) {
  const json* s = find_path(p, {"settings"});
  if (s == nullptr) s = find_path(result, {"conditions", "scenario", "probe"});
  if (s == nullptr) return "";
  return fmt::format("{} probes/s ({}), {} input / {} output tokens", format_number(nan_at(*s, {"rate_per_s"})),
                     str_at(*s, {"process"}), format_number(nan_at(*s, {"input_tokens"})),
                     format_number(nan_at(*s, {"output_tokens"})));
}

}  // namespace

std::string probe_html(const json& result, const std::string& prefix, int h) {
  const json* p = find_path(result, {"probe"});
  if (p == nullptr || !p->is_object()) return "";
  std::string o = fmt::format("<h{0} id=\"{1}probe\">Probe stream</h{0}>\n", h, prefix);
  o += fmt::format("<p class=\"sub\">Single small requests sent beside the load ({}), measured apart: the latency an "
                   "unrelated user sees under this load. They are in none of the other numbers.</p>\n",
                   html_escape(settings_text(result, *p)));
  if (trials_form(*p)) {
    o += "<table><tr><th>trials</th><th>probes</th><th>failed</th><th>TTFT p50 ms</th><th>TTFT p99 ms</th>"
         "<th>unloaded TTFT p50 ms</th><th>p50 vs unloaded</th></tr>\n";
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>\n",
                     format_number(nan_at(*p, {"trials"})), format_number(nan_at(*p, {"measured"})),
                     format_number(nan_at(*p, {"failed"})), ms(nan_at(*p, {"ttft_p50_ms"})),
                     ms(nan_at(*p, {"ttft_p99_ms"})), ms(nan_at(*p, {"baseline_ttft_p50_ms"})),
                     std::isfinite(nan_at(*p, {"ttft_p50_vs_baseline"}))
                         ? fmt::format("×{:.2f}", nan_at(*p, {"ttft_p50_vs_baseline"}))
                         : "–");
    o += "<p class=\"chart-note\">Medians across trials; each trial's own probe section is in its report.</p>\n";
    return o;
  }
  o += fmt::format("<p class=\"sub\">{} probes in the measurement window, {} failed{}.</p>\n",
                   format_number(nan_at(*p, {"measured"})), format_number(nan_at(*p, {"failed"})),
                   std::isfinite(nan_at(*p, {"ttft_p50_vs_baseline"}))
                       ? fmt::format("; p50 TTFT ×{:.2f} the unloaded reference", nan_at(*p, {"ttft_p50_vs_baseline"}))
                       : "");
  o += "<table><tr><th>metric</th><th>count</th><th>mean ms</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th></tr>\n";
  for (const auto& r : rows_of(*p)) {
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     html_escape(r.label), format_number(r.count), ms(r.mean), ms(r.p50), ms(r.p90), ms(r.p99));
  }
  o += "</table>\n";
  return o;
}

void probe_md(std::string& o, const json& result, const std::string& h) {
  const json* p = find_path(result, {"probe"});
  if (p == nullptr || !p->is_object()) return;
  o += fmt::format("\n{} Probe stream\n\n{}; measured apart from the load, in none of the other numbers.\n\n", h,
                   md_cell(settings_text(result, *p)));
  if (trials_form(*p)) {
    o += fmt::format("- medians across {} trials: TTFT p50 {} ms, p99 {} ms; unloaded p50 {} ms\n",
                     format_number(nan_at(*p, {"trials"})), ms(nan_at(*p, {"ttft_p50_ms"})),
                     ms(nan_at(*p, {"ttft_p99_ms"})), ms(nan_at(*p, {"baseline_ttft_p50_ms"})));
    return;
  }
  o += "| metric | count | mean ms | p50 ms | p90 ms | p99 ms |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& r : rows_of(*p)) {
    o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_cell(r.label), format_number(r.count), ms(r.mean),
                     ms(r.p50), ms(r.p90), ms(r.p99));
  }
}

std::vector<std::string> probe_csv_columns() {
  return {"probe_measured", "probe_failed", "probe_ttft_p50_ms", "probe_ttft_p99_ms", "probe_e2e_p50_ms",
          "probe_baseline_ttft_p50_ms"};
}

std::vector<double> probe_csv_values(const json& result) {
  const json* p = find_path(result, {"probe"});
  if (p == nullptr || !p->is_object()) return std::vector<double>(probe_csv_columns().size(), kNaN);
  if (trials_form(*p)) {
    return {nan_at(*p, {"measured"}), nan_at(*p, {"failed"}), nan_at(*p, {"ttft_p50_ms"}), nan_at(*p, {"ttft_p99_ms"}),
            kNaN, nan_at(*p, {"baseline_ttft_p50_ms"})};
  }
  return {nan_at(*p, {"measured"}),          nan_at(*p, {"failed"}),
          nan_at(*p, {"ttft", "p50_ms"}),    nan_at(*p, {"ttft", "p99_ms"}),
          nan_at(*p, {"e2e", "p50_ms"}),     nan_at(*p, {"baseline", "ttft", "p50_ms"})};
}

}  // namespace llmload::analysis::report_html
