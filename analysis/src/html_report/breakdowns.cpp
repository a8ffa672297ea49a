// Issue 19's sections of a run (docs/report.md): the reasoning phases (result.json `reasoning`),
// the per-model table (`by_model`) and the prefix-cache hit rate (`prefix_cache`), in HTML and
// Markdown. Each is absent when its key is null.
#include "html_report/internal.hpp"

#include <fmt/format.h>

namespace llmload::analysis::report_html {

namespace {

const json* object_at(const json& result, const char* key) {
  const json* j = find_path(result, {key});
  return j != nullptr && j->is_object() ? j : nullptr;
}

// "12,345 (45.2% of output tokens)".
std::string reasoning_tokens_text(const json& r) {
  std::string o = format_number(nan_at(r, {"reasoning_tokens"}));
  if (auto share = num_at(r, {"share_of_output_tokens"})) o += " (" + percent(*share) + " of output tokens)";
  return o;
}

std::string reasoning_requests_text(const json& r) {
  return fmt::format("{} ({} reasoning first, {} reasoning only)", format_number(nan_at(r, {"requests"})),
                     format_number(nan_at(r, {"reasoning_first"})), format_number(nan_at(r, {"reasoning_only"})));
}

std::string sources_text(const json& r) {
  std::string o;
  if (const json* s = find_path(r, {"sources"}); s != nullptr && s->is_object()) {
    for (const auto& [k, v] : s->items()) {
      o += fmt::format("{}{} {}", o.empty() ? "" : ", ", k, v.is_number() ? format_number(v.get<double>()) : "–");
    }
  }
  return o.empty() ? "–" : o;
}

// The distributions of the reasoning section, by key and label.
constexpr std::pair<const char*, const char*> kReasoningDists[] = {{"duration", "reasoning duration"},
                                                                   {"answer_tpot", "answer TPOT"}};

// A p99 cell of a by_model latency ("–" without samples).
std::string model_p(const json& m, const char* metric, const char* p) { return format_number(nan_at(m, {"latency", metric, p})); }

// "30.0% of prompt tokens (1200 of 4000 from usage; 40 of 40 requests reported some)".
std::string usage_rate_text(const json& pc) {
  const auto rate = num_at(pc, {"hit_rate"});
  if (!rate) return "not reported in the responses' usage";
  return fmt::format("{} of prompt tokens ({} of {} from usage; {} of {} requests reported some)", percent(*rate),
                     format_number(nan_at(pc, {"cached_tokens"})), format_number(nan_at(pc, {"prompt_tokens"})),
                     format_number(nan_at(pc, {"requests_reporting"})), format_number(nan_at(pc, {"requests"})));
}

std::string server_rate_text(const json& pc) {
  const auto rate = num_at(pc, {"server_hit_rate"});
  if (!rate) return {};
  return fmt::format("server {} ({})", percent(*rate), str_at(pc, {"server_source"}).starts_with("the mean") ? "its hit-rate gauge"
                                                                                                       : "its counters");
}

}  // namespace

std::string reasoning_html(const json& result, const std::string& prefix, int h) {
  const json* r = object_at(result, "reasoning");
  if (r == nullptr) return {};
  std::string o = fmt::format("<h{0}>Reasoning</h{0}>\n", h);
  o += fmt::format("<table class=\"conditions\" id=\"{}reasoning\"><tbody>\n", prefix);
  o += fmt::format("<tr><th class=\"l\">reasoning tokens</th><td data-key=\"reasoning_tokens\">{}</td></tr>\n",
                   html_escape(reasoning_tokens_text(*r)));
  o += fmt::format("<tr><th class=\"l\">requests with reasoning</th><td data-key=\"requests\">{}</td></tr>\n",
                   html_escape(reasoning_requests_text(*r)));
  o += fmt::format("<tr><th class=\"l\">counted from</th><td data-key=\"sources\">{}</td></tr>\n",
                   html_escape(sources_text(*r)));
  o += "</tbody></table>\n";
  o += fmt::format("<table id=\"{}reasoning-phases\"><thead><tr><th class=\"l\">phase (ms)</th><th>n</th><th>mean</th>"
                   "<th>p50</th><th>p90</th><th>p99</th></tr></thead><tbody>\n",
                   prefix);
  for (const auto& [key, label] : kReasoningDists) {
    const json* d = find_path(*r, {key});
    const bool any = d != nullptr && d->is_object();
    o += fmt::format("<tr data-metric=\"{}\"><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     key, label, any ? format_number(nan_at(*d, {"count"})) : "0",
                     format_number(any ? nan_at(*d, {"mean_ms"}) : kNaN), format_number(any ? nan_at(*d, {"p50_ms"}) : kNaN),
                     format_number(any ? nan_at(*d, {"p90_ms"}) : kNaN), format_number(any ? nan_at(*d, {"p99_ms"}) : kNaN));
  }
  o += "</tbody></table>\n<p class=\"chart-note\">Reasoning duration: from the first reasoning token to the first output "
       "token, of the requests that reasoned first. Answer TPOT: the time per output token after the first output token "
       "(reasoning tokens left out), of every request with at least 2 answer tokens.</p>\n";
  return o;
}

void reasoning_md(std::string& o, const json& result, const std::string& h) {
  const json* r = object_at(result, "reasoning");
  if (r == nullptr) return;
  o += fmt::format("\n{} Reasoning\n\n| | |\n| --- | --- |\n", h);
  o += fmt::format("| reasoning tokens | {} |\n", md_cell(reasoning_tokens_text(*r)));
  o += fmt::format("| requests with reasoning | {} |\n", md_cell(reasoning_requests_text(*r)));
  o += fmt::format("| counted from | {} |\n", md_cell(sources_text(*r)));
  o += "\n| phase (ms) | n | mean | p50 | p90 | p99 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& [key, label] : kReasoningDists) {
    const json* d = find_path(*r, {key});
    const json& dj = d != nullptr ? *d : json();
    o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", label,
                     dj.is_object() ? format_number(nan_at(dj, {"count"})) : "0", format_number(nan_at(dj, {"mean_ms"})),
                     format_number(nan_at(dj, {"p50_ms"})), format_number(nan_at(dj, {"p90_ms"})),
                     format_number(nan_at(dj, {"p99_ms"})));
  }
}

std::string by_model_html(const json& result, bool ttfo, const std::string& prefix, int h) {
  const json* by = object_at(result, "by_model");
  if (by == nullptr || by->empty()) return {};
  std::string o = fmt::format("<h{0}>Per model</h{0}>\n", h);
  o += fmt::format("<table id=\"{}by-model\"><thead><tr><th class=\"l\">model</th><th>requests</th><th>completed</th>"
                   "<th>failed</th><th>req/s</th><th>output tokens/s</th><th>TTFT p50</th><th>TTFT p99</th>{}"
                   "<th>TPOT p99</th><th>E2E p99</th><th>attainment</th><th>goodput (req/s)</th><th class=\"l\">SLO</th>"
                   "</tr></thead><tbody>\n",
                   prefix, ttfo ? "<th>TTFO p99</th>" : "");
  for (const auto& [model, m] : by->items()) {
    const std::string verdict = str_at(m, {"slo", "verdict"});
    o += fmt::format(
        "<tr data-model=\"{0}\"><td class=\"l\">{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td>"
        "<td>{6}</td><td>{7}</td>{8}<td>{9}</td><td>{10}</td><td>{11}</td><td>{12}</td><td class=\"l\">{13}</td></tr>\n",
        html_escape(model), format_number(nan_at(m, {"requests"})), format_number(nan_at(m, {"completed"})),
        format_number(nan_at(m, {"failed"})), format_number(nan_at(m, {"request_throughput"})),
        format_number(nan_at(m, {"output_throughput"})), model_p(m, "ttft", "p50_ms"), model_p(m, "ttft", "p99_ms"),
        ttfo ? "<td>" + model_p(m, "ttfo", "p99_ms") + "</td>" : "", model_p(m, "tpot", "p99_ms"),
        model_p(m, "e2e", "p99_ms"), percent(nan_at(m, {"slo", "attainment"})),
        format_number(nan_at(m, {"slo", "request_goodput"})),
        verdict.empty() ? "–" : fmt::format("<span class=\"badge {}\">{}</span>", verdict_class(verdict), html_escape(verdict)));
  }
  return o + "</tbody></table>\n<p class=\"chart-note\">Latencies in ms from t_send, each model's measured requests; the "
             "SLO verdict is the run's SLO judged on that model's requests alone (the same early-stopping rule).</p>\n";
}

void by_model_md(std::string& o, const json& result, bool ttfo, const std::string& h) {
  const json* by = object_at(result, "by_model");
  if (by == nullptr || by->empty()) return;
  o += fmt::format("\n{} Per model\n\n| model | requests | failed | req/s | output tokens/s | TTFT p99 (ms) |{} TPOT p99 (ms) "
                   "| E2E p99 (ms) | attainment | SLO |\n| --- | ---: | ---: | ---: | ---: | ---: |{} ---: | ---: | ---: | --- |\n",
                   h, ttfo ? " TTFO p99 (ms) |" : "", ttfo ? " ---: |" : "");
  for (const auto& [model, m] : by->items()) {
    const std::string verdict = str_at(m, {"slo", "verdict"});
    o += fmt::format("| {} | {} | {} | {} | {} | {} |{} {} | {} | {} | {} |\n", md_cell(model),
                     format_number(nan_at(m, {"requests"})), format_number(nan_at(m, {"failed"})),
                     format_number(nan_at(m, {"request_throughput"})), format_number(nan_at(m, {"output_throughput"})),
                     model_p(m, "ttft", "p99_ms"), ttfo ? " " + model_p(m, "ttfo", "p99_ms") + " |" : "",
                     model_p(m, "tpot", "p99_ms"), model_p(m, "e2e", "p99_ms"), percent(nan_at(m, {"slo", "attainment"})),
                     verdict.empty() ? "–" : md_cell(verdict));
  }
}

std::string prefix_cache_html(const json& result, const std::string& prefix) {
  const json* pc = object_at(result, "prefix_cache");
  if (pc == nullptr) return {};
  std::string text = "Prefix cache hit rate: " + usage_rate_text(*pc);
  if (const std::string server = server_rate_text(*pc); !server.empty()) text += "; " + server;
  return fmt::format("<p class=\"sub\" id=\"{}prefix-cache\">{}.</p>\n", prefix, html_escape(text));
}

void prefix_cache_md(std::string& o, const json& result) {
  const json* pc = object_at(result, "prefix_cache");
  if (pc == nullptr) return;
  std::string text = "- **Prefix cache hit rate**: " + md_cell(usage_rate_text(*pc));
  if (const std::string server = server_rate_text(*pc); !server.empty()) text += "; " + server;
  o += "\n" + text + "\n";
}

namespace {
// "12 of 400 invalid (3.00%): 7 invalid_json, 5 schema_violation; 380 tool calls in 380 responses"
std::string structured_output_text(const json& so) {
  std::string text = fmt::format("{} of {} judged invalid ({})", format_number(nan_at(so, {"invalid"})),
                                 format_number(nan_at(so, {"valid"}) + nan_at(so, {"invalid"})),
                                 percent(nan_at(so, {"invalid_rate"})));
  std::string reasons;
  if (const json* v = object_at(so, "by_verdict")) {
    for (const auto& [verdict, n] : v->items()) {
      if (verdict == "valid" || verdict == "text_answer") continue;
      reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", n.dump(), verdict);
    }
  }
  if (!reasons.empty()) text += ": " + reasons;
  const double calls = nan_at(so, {"tool_calls"});
  if (calls > 0) {
    text += fmt::format("; {} tool calls in {} responses", format_number(calls),
                        format_number(nan_at(so, {"tool_call_requests"})));
  }
  const double text_answers = nan_at(so, {"text_answers"});
  if (text_answers > 0) text += fmt::format("; {} answered in text (tool_choice auto)", format_number(text_answers));
  return text;
}
}  // namespace

std::string structured_output_html(const json& result, const std::string& prefix) {
  const json* so = object_at(result, "structured_output");
  if (so == nullptr) return {};
  std::string o = fmt::format("<p class=\"sub\" id=\"{}structured-output\">Tool calls and structured output: {}.</p>\n",
                              prefix, html_escape(structured_output_text(*so)));
  if (const json* ex = so->contains("examples") && (*so)["examples"].is_array() ? &(*so)["examples"] : nullptr;
      ex != nullptr && !ex->empty()) {
    o += "<ul class=\"sub\">";
    for (const auto& e : *ex) o += "<li>" + html_escape(e.is_string() ? e.get<std::string>() : e.dump()) + "</li>";
    o += "</ul>\n";
  }
  return o;
}

void structured_output_md(std::string& o, const json& result) {
  const json* so = object_at(result, "structured_output");
  if (so == nullptr) return;
  o += "\n- **Tool calls and structured output**: " + md_cell(structured_output_text(*so)) + "\n";
}

}  // namespace llmload::analysis::report_html
