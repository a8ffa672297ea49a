// A run's scrapes of the server's /metrics as the artifact's "server_metrics" object
// (ServerMetricsRecording) and the client-vs-server TTFT cross-check; the parser and the standard
// values are in prometheus.cpp.
#include "llmload/analysis/prometheus.hpp"
#include "prometheus_json.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include <fmt/format.h>

namespace llmload::analysis::prom {

// ---------------------------------------------------------------------------------------------

void ServerMetricsRecording::set_unavailable(const std::string& reason) {
  available_ = false;
  reason_ = "not available: " + reason;
}

void ServerMetricsRecording::push_point(const Exposition& e, double t_s) {
  if (t_s_.size() >= max_points_) {
    truncated_ = true;
    return;
  }
  t_s_.push_back(t_s);
  values_.push_back(standard_values(e));
}

void ServerMetricsRecording::set_before(Exposition e, double t_s) {
  ++scrapes_;
  before_t_ = t_s;
  // The before snapshot is the series' first point.
  t_s_.clear();
  values_.clear();
  push_point(e, t_s);
  before_ = std::move(e);
}

void ServerMetricsRecording::add_point(const Exposition& e, double t_s) {
  ++scrapes_;
  push_point(e, t_s);
}

void ServerMetricsRecording::set_after(Exposition e, double t_s) {
  ++scrapes_;
  after_t_ = t_s;
  if (t_s_.size() >= max_points_ && !t_s_.empty()) {
    // Keep the final point even when the series is full.
    t_s_.back() = t_s;
    values_.back() = standard_values(e);
    truncated_ = true;
  } else {
    push_point(e, t_s);
  }
  after_ = std::move(e);
}

void ServerMetricsRecording::add_error(const std::string& message) {
  ++errors_;
  last_error_ = message;
  if (error_messages_.size() < 5 &&
      std::find(error_messages_.begin(), error_messages_.end(), message) == error_messages_.end()) {
    error_messages_.push_back(message);
  }
}

nlohmann::json ServerMetricsRecording::to_json(double t0_s) const {
  using nlohmann::json;
  if (!available_) {
    json j = {{"available", false}, {"reason", reason_}};
    if (!endpoint_.empty()) j["endpoint"] = endpoint_;
    return j;
  }
  json j;
  j["available"] = true;
  if (!endpoint_.empty()) j["endpoint"] = endpoint_;
  const Exposition* any = before_ ? &*before_ : (after_ ? &*after_ : nullptr);
  j["flavor"] = any != nullptr ? to_string(detect_flavor(*any, hint_)) : "unknown";
  j["interval_s"] = interval_s_;
  j["scrapes"] = scrapes_;
  j["errors"] = errors_;
  if (!error_messages_.empty()) {
    j["error_messages"] = error_messages_;
    j["last_error"] = last_error_;
  }
  json notes = json::array();
  auto snapshot = [&](const std::optional<Exposition>& e, double t) -> json {
    if (!e) return nullptr;
    json s = prom::to_json(standard_values(*e));
    s["t_s"] = round_to(t - t0_s, 1e-6);
    return s;
  };
  j["before"] = snapshot(before_, before_t_);
  j["after"] = snapshot(after_, after_t_);
  if (!before_) notes.push_back("no snapshot before the run: server histograms cover the server's whole life");
  if (!after_) notes.push_back("no snapshot after the run (the final scrape failed): no server histograms");

  // Counters as deltas since the first point (the before snapshot when there is one).
  auto base_of = [&](auto member) -> std::optional<double> {
    for (const auto& v : values_) {
      if (v.*member) return v.*member;
    }
    return std::nullopt;
  };
  using Member = std::optional<double> StandardValues::*;
  const Member counters[] = {&StandardValues::preemptions,       &StandardValues::prompt_tokens,
                             &StandardValues::generation_tokens, &StandardValues::requests_finished,
                             &StandardValues::energy_joules,     &StandardValues::prefix_cache_hits,
                             &StandardValues::prefix_cache_queries};
  const char* counter_keys[] = {"preemptions",   "prompt_tokens",     "generation_tokens",   "requests_finished",
                                "energy_joules", "prefix_cache_hits", "prefix_cache_queries"};
  constexpr std::size_t kCounters = std::size(counters);
  json series;
  json ts = json::array();
  for (double t : t_s_) ts.push_back(round_to(t - t0_s, 1e-6));
  series["t_s"] = std::move(ts);
  auto gauge_series = [&](Member m) {
    json a = json::array();
    for (const auto& v : values_) a.push_back(num_or_null(v.*m));
    return a;
  };
  series["running"] = gauge_series(&StandardValues::running);
  series["waiting"] = gauge_series(&StandardValues::waiting);
  series["kv_cache_usage"] = gauge_series(&StandardValues::kv_cache_usage);
  series["power_watts"] = gauge_series(&StandardValues::power_watts);
  series["prefix_cache_hit_rate"] = gauge_series(&StandardValues::prefix_cache_hit_rate);
  for (std::size_t c = 0; c < kCounters; ++c) {
    const auto base = base_of(counters[c]);
    json a = json::array();
    for (const auto& v : values_) {
      const auto& x = v.*counters[c];
      a.push_back(x && base && *x >= *base ? json(*x - *base) : json(nullptr));
    }
    series[counter_keys[c]] = std::move(a);
  }
  series["truncated"] = truncated_;
  j["series"] = std::move(series);

  // Peaks of the gauges over the series; deltas of the counters between before and after.
  json peak;
  for (auto [key, m] : {std::pair<const char*, Member>{"running", &StandardValues::running},
                        {"waiting", &StandardValues::waiting},
                        {"kv_cache_usage", &StandardValues::kv_cache_usage},
                        {"power_watts", &StandardValues::power_watts}}) {
    std::optional<double> best;
    for (const auto& v : values_) {
      if (v.*m && (!best || *(v.*m) > *best)) best = v.*m;
    }
    peak[key] = num_or_null(best);
  }
  j["peak"] = std::move(peak);
  json delta;
  const StandardValues b = before_ ? standard_values(*before_) : StandardValues{};
  const StandardValues a = after_ ? standard_values(*after_) : StandardValues{};
  for (std::size_t c = 0; c < kCounters; ++c) {
    const auto& x = a.*counters[c];
    const auto& y = b.*counters[c];
    delta[counter_keys[c]] = x && y ? num_or_null(*x - *y) : json(nullptr);
  }
  j["delta"] = std::move(delta);

  const Exposition* before_ptr = before_ ? &*before_ : nullptr;
  for (auto [key, which] : {std::pair<const char*, ServerHistogram>{"server_ttft", ServerHistogram::kTtft},
                            {"server_e2e", ServerHistogram::kE2e},
                            {"server_queue", ServerHistogram::kQueue},
                            {"server_itl", ServerHistogram::kItl}}) {
    j[key] = after_ ? histogram_delta_json(before_ptr, *after_, which) : json(nullptr);
    if (j[key].is_object() && j[key].value("reset", false)) {
      notes.push_back(std::string(key) + ": the server's counters went down between the snapshots (restart?): "
                                         "the values cover only the time since the restart");
    }
  }
  if (j["flavor"] == "unknown") {
    notes.push_back("no vLLM or SGLang metric names found: standard series are null");
  }
  j["notes"] = std::move(notes);
  return j;
}

// ---------------------------------------------------------------------------------------------

nlohmann::json cross_check_ttft(double client_mean_ttft_ms, double client_p50_ms, const nlohmann::json& server_metrics,
                                std::optional<std::int64_t> client_count) {
  using nlohmann::json;
  auto unavailable = [](const std::string& why) { return json{{"available", false}, {"reason", why}}; };
  if (!server_metrics.is_object() || !server_metrics.value("available", false)) {
    std::string why = "server metrics not available";
    if (server_metrics.is_object() && server_metrics.contains("reason") && server_metrics["reason"].is_string()) {
      why += " (" + server_metrics["reason"].get<std::string>() + ")";
    }
    return unavailable(why);
  }
  const auto it = server_metrics.find("server_ttft");
  if (it == server_metrics.end() || !it->is_object()) {
    return unavailable("the server exports no TTFT histogram (or none was scraped after the run)");
  }
  const json& st = *it;
  const double server_count = st.value("count", 0.0);
  if (!(server_count > 0) || !st.contains("mean_ms") || !st["mean_ms"].is_number()) {
    return unavailable("the server recorded no TTFT between the before and after snapshots");
  }
  if (!std::isfinite(client_mean_ttft_ms)) return unavailable("no client-side TTFT (no successful streamed request)");
  const double server_mean = st["mean_ms"].get<double>();
  json j;
  j["available"] = true;
  j["metric"] = st.value("metric", "");
  j["client_mean_ms"] = round_to(client_mean_ttft_ms, 1e-6);
  j["server_mean_ms"] = server_mean;
  j["mean_diff_ms"] = round_to(client_mean_ttft_ms - server_mean, 1e-6);
  j["client_p50_ms"] = num_or_null(client_p50_ms);
  const bool server_p50 = st.contains("p50_ms") && st["p50_ms"].is_number();
  j["server_p50_ms"] = server_p50 ? st["p50_ms"] : json(nullptr);
  j["p50_diff_ms"] = server_p50 && std::isfinite(client_p50_ms)
                         ? json(round_to(client_p50_ms - st["p50_ms"].get<double>(), 1e-6))
                         : json(nullptr);
  // The bucket holding the server's p50: its width is the p50's resolution.
  if (server_p50 && st.contains("buckets") && st["buckets"].is_object()) {
    const json& les = st["buckets"]["le"];
    const double p50_s = st["p50_ms"].get<double>() / 1e3;
    double lo = 0;
    for (const auto& le : les) {
      if (!le.is_number()) break;  // "+Inf"
      const double hi = le.get<double>();
      if (p50_s <= hi) {
        j["server_p50_bucket_ms"] = {round_to(lo * 1e3, 1e-6), round_to(hi * 1e3, 1e-6)};
        break;
      }
      lo = hi;
    }
  }
  j["server_count"] = server_count;
  json notes = json::array();
  if (client_count) {
    j["client_count"] = *client_count;
    j["count_matches"] = static_cast<double>(*client_count) == server_count;
    if (static_cast<double>(*client_count) != server_count) {
      notes.push_back(fmt::format("the server counted {} first tokens between the snapshots, the client {}: the "
                                  "populations differ (warmup, other clients, requests outside the window, "
                                  "aborted requests that produced a token)",
                                  server_count, *client_count));
    }
  }
  if (client_mean_ttft_ms < server_mean) {
    notes.push_back("the client's mean TTFT is below the server's: the two cover different requests (see the "
                    "counts), since the server's clock starts after the client's");
  }
  j["notes"] = std::move(notes);
  j["caveat"] =
      "The server measures TTFT from the arrival of the request in its front end to the first token it emits; the "
      "client from writing the request's first byte to receiving the first event that carries output. The "
      "difference (client - server) estimates the network round trip, HTTP/TLS and client-side parsing, plus "
      "whatever the server does before its clock starts. The server's histogram covers every request it saw "
      "between the before and after scrapes (warmup, other clients, requests outside the measurement window), the "
      "client's statistics only the window; server percentiles are interpolated inside buckets (see "
      "server_p50_bucket_ms for the resolution), so compare the means first.";
  return j;
}

}  // namespace llmload::analysis::prom
