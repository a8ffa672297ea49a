// The "Server cross-checks" section (id cross-checks): client vs server TTFT and Little's law; in
// HTML and in summary.md.
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

/// The server-metrics cross-checks: client vs server TTFT, and Little's law.
std::string cross_checks_html(const json& r, const std::string& prefix, int h) {
  const json* tc = find_path(r, {"ttft_cross_check"});
  const json* ll = find_path(r, {"littles_law"});
  const json* sm = find_path(r, {"server_metrics"});
  const bool has_tc = tc != nullptr && tc->is_object();
  const bool has_ll = ll != nullptr && ll->is_object();
  if (!has_tc && !has_ll) {
    if (sm != nullptr && sm->is_object() && !flag(*sm, "available", true) && !str_at(*sm, {"reason"}).empty()) {
      return fmt::format("<h{0}>Server cross-checks</h{0}>\n<p class=\"sub\" id=\"{1}cross-checks\">Server metrics: {2}</p>\n", h,
                         prefix, html_escape(str_at(*sm, {"reason"})));
    }
    return {};
  }
  std::string o = fmt::format("<h{0}>Server cross-checks</h{0}>\n<div class=\"checks\" id=\"{1}cross-checks\">\n", h, prefix);
  // Client vs server TTFT.
  o += "<h4>Client vs server TTFT</h4>\n";
  if (has_tc && flag(*tc, "available", false)) {
    const double diff = nan_at(*tc, {"mean_diff_ms"});
    const json* cm = find_path(*tc, {"count_matches"});
    const bool counts_differ = cm != nullptr && cm->is_boolean() && !cm->get<bool>();
    std::string bucket;
    if (const json* b = find_path(*tc, {"server_p50_bucket_ms"}); b != nullptr && b->is_array() && b->size() == 2 &&
                                                                (*b)[0].is_number() && (*b)[1].is_number()) {
      bucket = fmt::format(" <span class=\"u\" title=\"the histogram bucket holding the server's p50: its resolution\">"
                           "(bucket {}–{})</span>",
                           format_number((*b)[0].get<double>()), format_number((*b)[1].get<double>()));
    }
    o += fmt::format(
        "<table class=\"cross\" id=\"{}ttft-cross-check\"><thead><tr><th class=\"l\">TTFT</th><th>client (ms)</th>"
        "<th>server (ms)</th><th>client − server (ms)</th></tr></thead><tbody>\n"
        "<tr data-stat=\"mean\"><td class=\"l\">mean</td><td>{}</td><td>{}</td><td>{}</td></tr>\n"
        "<tr data-stat=\"p50\"><td class=\"l\">p50</td><td>{}</td><td>{}{}</td><td>{}</td></tr>\n"
        "<tr data-stat=\"count\"><td class=\"l\">requests</td><td>{}</td><td>{}</td><td>{}</td></tr>\n</tbody></table>\n",
        prefix, format_number(nan_at(*tc, {"client_mean_ms"})), format_number(nan_at(*tc, {"server_mean_ms"})),
        format_number(diff), format_number(nan_at(*tc, {"client_p50_ms"})), format_number(nan_at(*tc, {"server_p50_ms"})),
        bucket, format_number(nan_at(*tc, {"p50_diff_ms"})), format_number(nan_at(*tc, {"client_count"})),
        format_number(nan_at(*tc, {"server_count"})), counts_differ ? "differ" : (cm != nullptr ? "match" : "–"));
    std::string verdict;
    std::string cls = "valid";
    if (!std::isfinite(diff)) {
      verdict = "no difference computed";
      cls = "neutral";
    } else if (diff < 0) {
      // Per request the client's TTFT contains the server's (llmload-server's clock starts at the
      // kernel's receive time of the request): a negative difference of the means comes from the
      // populations (the server's histogram counts warmup and other clients' requests too).
      verdict = fmt::format("client below server by {} ms: the two cover different requests",
                            format_number(-diff));
      cls = "warn";
    } else if (counts_differ) {
      verdict = fmt::format("network + client overhead ≈ {} ms (populations differ: see the counts)", format_number(diff));
      cls = "warn";
    } else {
      verdict = fmt::format("network + client overhead ≈ {} ms", format_number(diff));
    }
    o += fmt::format("<p class=\"verdict\" id=\"{}ttft-cross-check-verdict\"><span class=\"badge {}\">{}</span> The difference of "
                     "the means estimates the network round trip, HTTP/TLS and the client's own parsing (plus whatever the "
                     "server does before its clock starts); it should be small and positive.</p>\n",
                     prefix, cls, html_escape(verdict));
    if (const json* notes = find_path(*tc, {"notes"}); notes != nullptr && notes->is_array() && !notes->empty()) {
      std::vector<std::string> n;
      for (const auto& x : *notes) {
        if (x.is_string()) n.push_back(x.get<std::string>());
      }
      o += notes_html(n);
    }
    if (auto cav = str_at(*tc, {"caveat"}); !cav.empty()) {
      o += "<details><summary>how to read it</summary><p class=\"chart-note\">" + html_escape(cav) + "</p></details>\n";
    }
  } else {
    const std::string why = has_tc ? str_at(*tc, {"reason"}) : "not computed";
    o += fmt::format("<p class=\"sub\" id=\"{}ttft-cross-check\">Not available: {}</p>\n", prefix, html_escape(why));
  }
  // Little's law.
  o += "<h4>Little's law: in flight = throughput × time in system</h4>\n";
  if (has_ll && flag(*ll, "available", false)) {
    const json* ag = find_path(*ll, {"agrees"});
    const bool agrees = ag != nullptr && ag->is_boolean() && ag->get<bool>();
    o += fmt::format("<p class=\"verdict\" id=\"{}littles-law-verdict\" data-agrees=\"{}\">{} deviation {} against a tolerance of "
                     "±{}</p>\n",
                     prefix, agrees ? "true" : "false",
                     yes_no_badge(agrees, "agrees: consistent", "does NOT agree: inconsistent"),
                     html_escape(signed_percent(nan_at(*ll, {"relative_deviation"}))),
                     html_escape(percent(nan_at(*ll, {"tolerance"}))));
    o += fmt::format(
        "<table class=\"cross\" id=\"{}littles-law\"><tbody>\n"
        "<tr data-key=\"server_mean_in_system\"><th class=\"l\">server's mean requests in system, L (running + waiting, its "
        "/metrics)</th><td>{}</td></tr>\n"
        "<tr data-key=\"client_throughput_x_mean_e2e\"><th class=\"l\">client's request throughput × mean E2E, X·W</th><td>{}</td></tr>\n"
        "<tr data-key=\"relative_deviation\"><th class=\"l\">deviation (L − X·W) / X·W</th><td>{}</td></tr>\n"
        "<tr data-key=\"tolerance\"><th class=\"l\">tolerance</th><td>±{}</td></tr>\n"
        "<tr data-key=\"samples\"><th class=\"l\">server samples in the window</th><td>{}</td></tr>\n</tbody></table>\n",
        prefix, format_number(nan_at(*ll, {"server_mean_in_system"})),
        format_number(nan_at(*ll, {"client_throughput_x_mean_e2e"})), signed_percent(nan_at(*ll, {"relative_deviation"})),
        percent(nan_at(*ll, {"tolerance"})), format_number(nan_at(*ll, {"samples"})));
    if (auto e = str_at(*ll, {"explanation"}); !e.empty()) o += "<p class=\"chart-note\">" + html_escape(e) + "</p>\n";
    if (auto cav = str_at(*ll, {"caveat"}); !cav.empty()) o += "<p class=\"chart-note\">Caveat: " + html_escape(cav) + ".</p>\n";
  } else {
    const std::string why = has_ll ? str_at(*ll, {"reason"}) : "not computed (no server series)";
    o += fmt::format("<p class=\"sub\" id=\"{}littles-law\">Not available: {}</p>\n", prefix, html_escape(why));
  }
  return o + "</div>\n";
}

void cross_checks_md(std::string& o, const json& r, const std::string& h) {
  const json* tc = find_path(r, {"ttft_cross_check"});
  const json* ll = find_path(r, {"littles_law"});
  const bool has_tc = tc != nullptr && tc->is_object();
  const bool has_ll = ll != nullptr && ll->is_object();
  if (!has_tc && !has_ll) return;
  o += fmt::format("\n{} Server cross-checks\n\n", h);
  if (has_tc && flag(*tc, "available", false)) {
    o += fmt::format("- **Client vs server TTFT**: mean {} ms (client) vs {} ms (server): client − server {} ms, the network + "
                     "client overhead; p50 {} vs {} ms; requests {} vs {}\n",
                     format_number(nan_at(*tc, {"client_mean_ms"})), format_number(nan_at(*tc, {"server_mean_ms"})),
                     format_number(nan_at(*tc, {"mean_diff_ms"})), format_number(nan_at(*tc, {"client_p50_ms"})),
                     format_number(nan_at(*tc, {"server_p50_ms"})), format_number(nan_at(*tc, {"client_count"})),
                     format_number(nan_at(*tc, {"server_count"})));
    if (const json* notes = find_path(*tc, {"notes"}); notes != nullptr && notes->is_array()) {
      for (const auto& n : *notes) {
        if (n.is_string()) o += "  - " + n.get<std::string>() + "\n";
      }
    }
  } else {
    o += fmt::format("- **Client vs server TTFT**: not available: {}\n", has_tc ? str_at(*tc, {"reason"}) : "not computed");
  }
  if (has_ll && flag(*ll, "available", false)) {
    const json* ag = find_path(*ll, {"agrees"});
    const bool agrees = ag != nullptr && ag->is_boolean() && ag->get<bool>();
    o += fmt::format("- **Little's law**: {}: server mean in system {} vs client throughput × mean E2E {}; deviation {} "
                     "(tolerance ±{}, {} server samples)\n",
                     agrees ? "agrees" : "does NOT agree", format_number(nan_at(*ll, {"server_mean_in_system"})),
                     format_number(nan_at(*ll, {"client_throughput_x_mean_e2e"})), signed_percent(nan_at(*ll, {"relative_deviation"})),
                     percent(nan_at(*ll, {"tolerance"})), format_number(nan_at(*ll, {"samples"})));
  } else {
    o += fmt::format("- **Little's law**: not available: {}\n", has_ll ? str_at(*ll, {"reason"}) : "not computed");
  }
}

}  // namespace llmload::analysis::report_html
