// A trials artifact's sections: the trial summary (id trial-summary), the per-trial table
// (id trials-table) and each trial's cross-checks; in HTML and in summary.md.
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
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis::report_html {

/// A trial_summary key for people: "p99_ttft_ms" -> "p99 TTFT (ms)".
static std::string metric_label(const std::string& key) {
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
static std::vector<std::string> summary_keys(const json& ts) {
  std::vector<std::string> order = {"request_throughput", "output_throughput", "total_token_throughput", "request_goodput",
                                    "token_goodput", "attainment"};
  for (const char* m : {"ttft", "ttfo", "tpot", "itl", "e2el"}) {
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
static std::string report_link(const std::string& target_dir, const HtmlReportOptions& options) {
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

}  // namespace llmload::analysis::report_html
