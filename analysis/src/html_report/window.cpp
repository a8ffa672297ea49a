// The "Measurement window" section (id window): window, warmup and its detection, cooldown,
// minimums; in HTML and in summary.md.
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

/// "k: v, k: v" of an object's scalar members (numbers for people), skipping `skip`.
static std::string scalars_text(const json& obj, std::initializer_list<std::string_view> skip) {
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

}  // namespace llmload::analysis::report_html
