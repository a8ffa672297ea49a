// A run's headline sections: verdict badges, notes, key numbers and cost, the latency, SLO and error
// tables, the conditions; charts_html lays out a list of charts.
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

/// The parts of an SLO verdict with an accuracy bound: "; latency PASS, accuracy ≥ 85.0% FAIL" ("" without one).
std::string slo_parts_text(const RunSummary& s) {
  if (!s.accuracy.has_slo()) return {};
  std::string o = "; ";
  if (!s.slo_latency_verdict.empty()) o += "latency " + s.slo_latency_verdict + ", ";
  o += "accuracy";
  if (std::isfinite(s.accuracy.min_accuracy)) o += " ≥ " + percent(s.accuracy.min_accuracy);
  return o + " " + (s.accuracy.slo_verdict.empty() ? "no verdict" : s.accuracy.slo_verdict);
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
    o += fmt::format("<p class=\"sub\" id=\"{}slo-spec\">SLO {}{}{}{}</p>\n", prefix, html_escape(s.slo_spec),
                     s.slo_view.empty() ? "" : html_escape(fmt::format(", judged in the {} view", s.slo_view)),
                     html_escape(trials), html_escape(slo_parts_text(s)));
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

std::string models_text(const json& conditions) {
  if (const json* mix = find_path(conditions, {"scenario", "model_mix", "models"}); mix != nullptr && mix->is_array()) {
    std::string text;
    for (const json& m : *mix) {
      const std::string name = str_at(m, {"model"});
      if (!name.empty()) text += (text.empty() ? "" : ",") + name;
    }
    if (!text.empty()) return text;
  }
  const json* m = find_path(conditions, {"model"});
  return m != nullptr ? scalar_text(*m) : std::string();
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
  if (const std::string m = models_text(cond); !m.empty() || find_path(cond, {"model"}) != nullptr) {
    rows.emplace_back(m.find(',') == std::string::npos ? "model" : "models", m);
  }
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

}  // namespace llmload::analysis::report_html
