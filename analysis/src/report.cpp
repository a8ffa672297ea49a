#include "llmload/analysis/report.hpp"
#include "numeric.hpp"
#include "llmload/common/duration.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/model_breakdown.hpp"
#include "llmload/analysis/record_line.hpp"

namespace llmload::analysis {
namespace {

using nlohmann::json;

double ms(std::int64_t us) { return static_cast<double>(us) / 1e3; }
double ms(Nanos d) { return static_cast<double>(d.count()) / 1e6; }

json stats_json(const LatencyStats& s) {
  json j;
  j["count"] = s.count;
  j["mean_ms"] = s.mean_us / 1e3;
  j["std_ms"] = s.stddev_us / 1e3;
  j["min_ms"] = ms(s.min_us);
  j["max_ms"] = ms(s.max_us);
  for (const auto& [p, v] : s.percentiles) j[fmt::format("p{:g}_ms", p)] = ms(v);
  j["p99_low_confidence"] = s.p99_low_confidence;
  j["p99.9_low_confidence"] = s.p999_low_confidence;
  if (s.p99_ci_us) {
    j["p99_ci95_ms"] = {ms(s.p99_ci_us->first), ms(s.p99_ci_us->second)};
  } else {
    j["p99_ci95_ms"] = nullptr;
  }
  return j;
}

json opt_ms(const std::optional<Nanos>& v) { return v ? json(ms(*v)) : json(nullptr); }

// A distribution that may have no sample (TTFO: a run without t_first_output): null then.
json stats_or_null(const LatencyStats& s) { return s.count > 0 ? stats_json(s) : json(nullptr); }

// window.warmup: how the start of the window was chosen; for auto the detection and the drain.
json warmup_json(const Window& w) {
  json j = {{"method", w.warmup_method}};
  if (w.warmup_method == "requests") j["requests"] = w.warmup_requests;
  if (w.warmup_method == "time") j["duration_s"] = to_seconds(w.warmup_duration);
  if (w.detection) {
    json d = to_json(*w.detection);
    d["applied"] = w.detection->found;
    d["note"] = w.detection->found
                    ? "requests intended before start_s are warmup (requests.jsonl: warmup true, in_window false)"
                    : "no steady state found: the whole run is kept as the window";
    const double last = w.drain_end ? to_seconds(*w.drain_end) : to_seconds(w.end);
    d["cooldown"] = {{"method", "end of issuing"},
                     {"end_s", to_seconds(w.end)},
                     {"last_completion_s", w.drain_end ? json(last) : json(nullptr)},
                     {"discarded_s", std::max(0.0, last - to_seconds(w.end))},
                     {"rule", "the window ends where issuing ended (the last measured request's intended time, or "
                              "the duration's end): the drain, while in-flight requests finish, is not in the "
                              "throughput; those requests' latencies are, by their intended times"}};
    j["detection"] = std::move(d);
  }
  return j;
}

}  // namespace

json metrics_json(const RunMetrics& m) {
  json j;
  const double duration = to_seconds(m.window.length());
  // vLLM `bench serve` compatible headline keys.
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["duration"] = duration;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  j["request_goodput"] = m.slo ? json(m.slo->request_goodput) : json(nullptr);
  const std::pair<Metric, const char*> vllm_names[] = {
      {Metric::kTtft, "ttft"}, {Metric::kTpot, "tpot"}, {Metric::kItl, "itl"}, {Metric::kE2e, "e2el"}};
  for (const auto& [metric, name] : vllm_names) {
    const auto& s = m.latency.at(metric);
    // TPOT and ITL without a sample (a run without streaming: no time between tokens observed)
    // are null, not 0 (which a sweep's table and a compare read as a measured 0 ms).
    const bool none = s.count == 0 && (metric == Metric::kTpot || metric == Metric::kItl);
    auto val = [&](double v) { return none ? json(nullptr) : json(v); };
    j[fmt::format("mean_{}_ms", name)] = val(s.mean_us / 1e3);
    j[fmt::format("median_{}_ms", name)] = val(ms(s.percentile(50)));
    j[fmt::format("std_{}_ms", name)] = val(s.stddev_us / 1e3);
    j[fmt::format("p90_{}_ms", name)] = val(ms(s.percentile(90)));
    j[fmt::format("p95_{}_ms", name)] = val(ms(s.percentile(95)));
    j[fmt::format("p99_{}_ms", name)] = val(ms(s.percentile(99)));
  }
  {
    // TTFO (issue 19) in the same style; null without a sample (no request had t_first_output).
    const auto& s = m.latency.at(Metric::kTtfo);
    const bool any = s.count > 0;
    auto val = [&](double v) { return any ? json(v) : json(nullptr); };
    j["mean_ttfo_ms"] = val(s.mean_us / 1e3);
    j["median_ttfo_ms"] = val(ms(s.percentile(50)));
    j["std_ttfo_ms"] = val(s.stddev_us / 1e3);
    j["p90_ttfo_ms"] = val(ms(s.percentile(90)));
    j["p95_ttfo_ms"] = val(ms(s.percentile(95)));
    j["p99_ttfo_ms"] = val(ms(s.percentile(99)));
  }

  // Richer nested data.
  j["window"] = {{"start_s", to_seconds(m.window.start)}, {"end_s", to_seconds(m.window.end)}, {"length_s", duration},
                 {"method", m.window.method}, {"warmup", warmup_json(m.window)}};
  j["requests"] = {{"issued", m.requests},       {"warmup", m.warmup},   {"in_window", m.in_window},
                   {"completed", m.completed},  {"failed", m.failed},  {"outside_window", m.outside_window},
                   {"completing_in_window", m.completing_in_window}, {"stopped_early", m.stopped_early_requests},
                   {"reasoning_first", m.reasoning_first_requests}};
  j["tokens"] = {{"total_input_tokens", m.total_input_tokens},
                 {"total_output_tokens", m.total_output_tokens},
                 {"output_tokens_arriving_in_window", m.output_tokens_in_window},
                 {"arrival_bin_ms", to_seconds(m.token_bin) * 1e3},
                 {"source", m.tokens_estimated ? "estimated (some responses had no usage: one token per output event; "
                                                 "give --tokenizer PATH to count them exactly)"
                                               : (m.tokens_from_tokenizer ? "server usage, else the generated text "
                                                                            "counted with --tokenizer"
                                                                          : "server usage")}};
  json latency = json::object();
  for (Metric metric : {Metric::kTtft, Metric::kE2e}) {
    latency[std::string(metric_name(metric))] = stats_json(m.latency.at(metric));
  }
  for (Metric metric : {Metric::kTpot, Metric::kItl, Metric::kItlEvent}) {  // null without a sample, as above
    latency[std::string(metric_name(metric))] = stats_or_null(m.latency.at(metric));
  }
  latency["ttfo"] = stats_or_null(m.latency.at(Metric::kTtfo));
  latency["measured_from"] = "t_send";
  j["latency"] = latency;
  j["response_time"] = {{"measured_from", "t_intended"},
                        {"ttft", stats_json(m.latency.at(Metric::kTtftRt))},
                        {"ttfo", stats_or_null(m.latency.at(Metric::kTtfoRt))},
                        {"e2e", stats_json(m.latency.at(Metric::kE2eRt))}};
  j["reasoning"] = to_json(m.reasoning);
  j["by_model"] = by_model_json(m.by_model);
  j["prefix_cache"] = prefix_cache_json(m.prefix_cache);
  j["structured_output"] = structured_output_json(m.structured_output);
  j["schedule_lag"] = stats_json(m.latency.at(Metric::kScheduleLag));
  j["schedule_lag"]["late_over_1ms"] = m.late_over_1ms;
  j["schedule_lag"]["late_fraction"] = m.late_fraction;
  const auto rate_or_null = [](double r) { return r > 0 ? json(r) : json(nullptr); };
  j["load"] = {{"achieved_send_rate", rate_or_null(m.achieved_send_rate)},
               {"intended_send_rate", rate_or_null(m.intended_send_rate)},
               {"realized_interarrival_cv", m.realized_interarrival_cv},
               {"measured_from", "t_send (achieved) and t_intended (intended) of the measured requests, over their "
                                 "sending span (first to last send)"}};
  {
    json reasons = json::array();
    for (const auto& r : m.validity_reasons) reasons.push_back({{"code", r.code}, {"message", r.message}});
    const bool valid = m.validity_reasons.empty();
    j["validity"] = {{"valid", valid},
                     {"verdict", valid ? "VALID" : "INVALID"},
                     {"reasons", std::move(reasons)},
                     {"reason", valid ? json(nullptr) : json(m.validity_reasons.front().message)},
                     // Kept for readers of the first version: true when the schedule-lag check
                     // (open loop) was applied. `checks` lists every check made.
                     {"checked", m.open_loop},
                     {"checks", m.validity_checks},
                     {"max_error_rate", m.max_error_rate}};
  }
  {
    const auto& mn = m.minimums;
    j["minimums"] = {{"min_duration_s", mn.min_duration ? json(to_seconds(*mn.min_duration)) : json(nullptr)},
                     {"min_requests", mn.min_requests ? json(*mn.min_requests) : json(nullptr)},
                     {"max_duration_s", mn.max_duration ? json(to_seconds(*mn.max_duration)) : json(nullptr)},
                     {"max_duration_reached", mn.max_duration_reached},
                     {"percentiles", mn.percentiles},
                     {"required_samples", mn.required_samples},
                     {"checked", mn.checked},
                     {"met", mn.met}};
  }
  j["stopped_early"] = m.stopped_early ? json{{"reason", *m.stopped_early}} : json(nullptr);
  json errors = json::object();
  for (const auto& [cls, e] : m.errors_by_class) errors[cls] = {{"count", e.count}, {"example", e.example}};
  json statuses = json::object();
  for (const auto& [st, e] : m.errors_by_status) statuses[std::to_string(st)] = {{"count", e.count}, {"example", e.example}};
  j["errors"] = {{"by_class", errors}, {"by_http_status", statuses}};
  if (m.slo) {
    const auto& s = *m.slo;
    json metrics = json::array();
    for (const auto& v : s.metrics) {
      metrics.push_back({{"metric", v.metric},
                         {"bound_ms", ms(v.bound)},
                         {"requests", v.n},
                         {"exceedances", v.exceedances},
                         {"required_requests", v.required},
                         {"observed_ms", v.observed_us ? json(ms(*v.observed_us)) : json(nullptr)},
                         {"verdict", to_string(v.verdict)},
                         {"explanation", v.explanation}});
    }
    j["slo"] = {{"spec", s.spec.to_string()},
                {"percentile", s.spec.percentile},
                {"view", to_string(s.view)},
                {"bounds_ms",
                 {{"ttft", opt_ms(s.spec.ttft)},
                  {"ttfo", opt_ms(s.spec.ttfo)},
                  {"tpot", opt_ms(s.spec.tpot)},
                  {"e2e", opt_ms(s.spec.e2e)}}},
                {"good_requests", s.good},
                {"attainment", s.attainment},
                {"request_goodput", s.request_goodput},
                {"token_goodput", s.token_goodput},
                {"metrics", metrics},
                {"verdict", to_string(s.verdict)},
                {"service_view_verdict", to_string(s.service_view_verdict)},
                {"method", "per metric: PASS iff n >= h(t) + t, MLPerf early stopping (one-sided 99%); failed "
                           "requests count as exceedances"}};
  } else {
    j["slo"] = nullptr;
  }
  return j;
}

json record_json(const RequestRecord& r) { return json::parse(record_line(r)); }

void write_latency_hlog(std::ostream& out, const RunMetrics& m, double start_epoch_sec, const std::string& tool) {
  HlogWriter w(out);
  w.write_header(tool, start_epoch_sec);
  w.write_base_time(start_epoch_sec);
  w.write_legend();
  for (Metric metric : kAllMetrics) {
    auto h = m.histograms.at(metric);
    w.write_interval(h, to_seconds(m.window.start), to_seconds(m.window.length()), metric_name(metric));
  }
}

std::string console_report(const RunMetrics& m, const std::string& title, const ConsoleOptions& options) {
  std::string o;
  auto line = [&](const std::string& text) {
    o += text;
    o += '\n';
  };
  const std::string rule(78, '=');
  line(fmt::format("{}", rule));
  line(fmt::format("{:^78}", title));
  line(fmt::format("{}", rule));
  line(fmt::format("{:<40}{:>12}", "Requests in window (completed/failed):", fmt::format("{}/{}", m.completed, m.failed)));
  if (m.stopped_early_requests > 0) {
    line(fmt::format("{:<40}{:>12}", "Canceled by a stop (not failed):", m.stopped_early_requests));
  }
  line(fmt::format("{:<40}{:>12}", "Warmup requests (discarded):", m.warmup));
  line(fmt::format("{:<40}{:>12.3f}", "Measurement window (s):", to_seconds(m.window.length())));
  line(fmt::format("{:<40}{:>12}", "Total input tokens:", m.total_input_tokens));
  line(fmt::format("{:<40}{:>12}", "Total output tokens:", m.total_output_tokens));
  line(fmt::format("{:<40}{:>12.2f}", "Request throughput (req/s):", m.request_throughput));
  line(fmt::format("{:<40}{:>12.2f}", "Output token throughput (tok/s):", m.output_throughput));
  line(fmt::format("{:<40}{:>12.2f}", "Total token throughput (tok/s):", m.total_token_throughput));
  if (m.tokens_estimated) {
    line("  (token counts partly estimated, one token per output event: the server did not always send usage; give "
         "the model's tokenizer with --tokenizer PATH to count them exactly)");
  }
  for (const auto& [cls, e] : m.errors_by_class) line(fmt::format("  errors [{}]: {}  e.g. {}", cls, e.count, e.example));
  for (const auto& [st, e] : m.errors_by_status) line(fmt::format("  HTTP {}: {}", st, e.count));
  if (m.slo) {
    const auto& s = *m.slo;
    line(fmt::format("{:-^78}", fmt::format(" SLO {} ({} view) ", s.spec.to_string(), to_string(s.view))));
    line(fmt::format("{:<40}{:>12.2f}", "Request goodput (req/s):", s.request_goodput));
    line(fmt::format("{:<40}{:>12.2f}", "Token goodput (tok/s):", s.token_goodput));
    line(fmt::format("{:<40}{:>11.2f}%", "SLO attainment:", 100.0 * s.attainment));
    for (const auto& v : s.metrics) line(fmt::format("  {:<6} {:<13} {}", v.metric, to_string(v.verdict), v.explanation));
    line(fmt::format("{:<40}{:>12}", fmt::format("p{:g} verdict:", s.spec.percentile), to_string(s.verdict)));
  }
  if (m.window.detection) {
    const auto& d = *m.window.detection;
    if (d.found) {
      line(fmt::format("Warmup auto (MSER-5, {:g} ms intervals): steady state from {:.3f} s, decided by '{}'",
                       ms(d.interval), to_seconds(d.start), d.summary.deciding_series));
    } else {
      line(fmt::format("Warmup auto (MSER-5, {:g} ms intervals): no steady state found, the whole run is kept ({})",
                       ms(d.interval), d.summary.reason));
    }
  }
  if (m.stopped_early) line(fmt::format("Stopped early: {}", *m.stopped_early));
  line(fmt::format("{:<40}{:>12}", "Validity:", m.validity_reasons.empty() ? "VALID" : "INVALID"));
  for (const auto& r : m.validity_reasons) line(fmt::format("RUN INVALID [{}]: {}", r.code, r.message));
  line(fmt::format("{:-^78}", " Latency (ms) "));
  const std::vector<double> pcts = options.percentiles.empty() ? std::vector<double>{50, 90, 95, 99, 99.9}
                                                                : options.percentiles;
  std::string head = fmt::format("{:<18}{:>8}", "metric", "mean");
  for (double p : pcts) head += fmt::format("{:>9}", fmt::format("p{:g}", p));
  line(head + fmt::format("{:>9}", "max"));
  auto wanted = [&](const char* key) {
    if (options.metrics.empty()) return true;
    for (const auto& w : options.metrics) {
      if (w == key || (w == "e2el" && std::string_view(key) == "e2e")) return true;
    }
    return false;
  };
  auto row = [&](const char* name, Metric metric) {
    if (!wanted(metric_name(metric).data())) return;
    const auto& s = m.latency.at(metric);
    if (s.count == 0) {
      line(fmt::format("{:<18}{:>8}", name, "-"));
      return;
    }
    const auto& h = m.histograms.at(metric);
    std::string r = fmt::format("{:<18}{:>8.2f}", name, s.mean_us / 1e3);
    for (double p : pcts) r += fmt::format("{:>9.2f}", ms(h.value_at_percentile(p)));
    r += fmt::format("{:>9.2f}{}", ms(s.max_us), s.p99_low_confidence ? " (n=" + std::to_string(s.count) + ", p99 low conf.)" : "");
    line(r);
  };
  // TTFO beside TTFT only when some request reasoned first (else it is TTFT again).
  const bool ttfo = m.shows_ttfo();
  row("TTFT", Metric::kTtft);
  if (ttfo) row("TTFO", Metric::kTtfo);
  row("TPOT", Metric::kTpot);
  row("ITL", Metric::kItl);
  row("E2E", Metric::kE2e);
  row("TTFT (from sched)", Metric::kTtftRt);
  if (ttfo) row("TTFO (from sched)", Metric::kTtfoRt);
  row("E2E (from sched)", Metric::kE2eRt);
  row("Schedule lag", Metric::kScheduleLag);
  o += reasoning_console(m.reasoning);
  o += by_model_console(m.by_model, ttfo);
  o += prefix_cache_console(m.prefix_cache);
  o += structured_output_console(m.structured_output);
  line(fmt::format("{}", rule));
  return o;
}

nlohmann::json sequential_json(const SequentialSlo& s) {
  nlohmann::json looks = nlohmann::json::array();
  for (const auto& l : s.looks()) {
    looks.push_back({{"n", l.n}, {"confidence", l.confidence}, {"decision", l.decision}, {"detail", l.detail}});
  }
  return {{"rule", "looks at the first n_k = n_0 * 2^k measured requests (release order); look k judged at "
                   "confidence 1 - 0.01 * 2^-(k+1); stops at a PASS of every bound or a clear FAIL of one"},
          {"conclusive", s.conclusive()},
          {"summary", s.summary()},
          {"looks", std::move(looks)}};
}

}  // namespace llmload::analysis
