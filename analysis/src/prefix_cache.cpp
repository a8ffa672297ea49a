#include "llmload/analysis/prefix_cache.hpp"

#include <cmath>

#include <fmt/format.h>

namespace llmload::analysis {

using nlohmann::json;

std::optional<double> PrefixCacheSummary::hit_rate() const {
  if (prompt_tokens <= 0) return std::nullopt;
  return static_cast<double>(cached_tokens) / static_cast<double>(prompt_tokens);
}

bool reports_cached_tokens(const RequestRecord& r) {
  return !r.warmup && r.in_window && r.ok() && r.cached_tokens.has_value();
}

std::optional<PrefixCacheSummary> summarize_prefix_cache(RecordRange records) {
  PrefixCacheSummary s;
  for (const auto& r : records) {
    if (r.warmup || !r.in_window || !r.ok()) continue;
    ++s.requests;
    s.prompt_tokens += r.input_tokens;
    if (!reports_cached_tokens(r)) continue;  // none cached (see PrefixCacheSummary)
    ++s.requests_reporting;
    s.cached_tokens += *r.cached_tokens;
  }
  if (s.requests_reporting == 0) return std::nullopt;
  return s;
}

namespace {

std::optional<double> number_at(const json& j, const char* a, const char* b) {
  if (!j.is_object() || !j.contains(a) || !j[a].is_object() || !j[a].contains(b) || !j[a][b].is_number()) {
    return std::nullopt;
  }
  const double v = j[a][b].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

}  // namespace

std::optional<ServerPrefixCache> server_prefix_cache(const json& sm) {
  if (!sm.is_object() || !sm.value("available", false)) return std::nullopt;
  const auto hits = number_at(sm, "delta", "prefix_cache_hits");
  const auto queries = number_at(sm, "delta", "prefix_cache_queries");
  if (hits && queries && *queries > 0 && *hits >= 0) return ServerPrefixCache{*hits / *queries, "counters"};
  const json* series = sm.contains("series") ? &sm["series"] : nullptr;
  if (series != nullptr && series->is_object() && series->contains("prefix_cache_hit_rate") &&
      (*series)["prefix_cache_hit_rate"].is_array()) {
    double sum = 0;
    int n = 0;
    for (const auto& v : (*series)["prefix_cache_hit_rate"]) {
      if (v.is_number() && std::isfinite(v.get<double>())) {
        sum += v.get<double>();
        ++n;
      }
    }
    if (n > 0) return ServerPrefixCache{sum / n, "gauge"};
  }
  return std::nullopt;
}

json prefix_cache_json(const std::optional<PrefixCacheSummary>& p, const std::optional<ServerPrefixCache>& server) {
  if (!p && !server) return nullptr;
  json j;
  if (p) {
    const auto rate = p->hit_rate();
    j = {{"cached_tokens", p->cached_tokens},
         {"prompt_tokens", p->prompt_tokens},
         {"hit_rate", rate ? json(*rate) : json(nullptr)},
         {"requests", p->requests},
         {"requests_reporting", p->requests_reporting},
         {"source", "usage"}};
  } else {
    j = {{"cached_tokens", nullptr},
         {"prompt_tokens", nullptr},
         {"hit_rate", nullptr},
         {"requests", nullptr},
         {"requests_reporting", 0},
         {"source", "server_metrics"}};
  }
  if (server) {
    j["server_hit_rate"] = server->hit_rate;
    j["server_source"] = server->source == "counters"
                             ? "the server's prefix-cache hit and query counters, their change over the run "
                               "(every request it served then: warmup and other clients included)"
                             : "the mean of the server's prefix-cache hit-rate gauge over the run's scrapes";
  }
  return j;
}

void add_server_prefix_cache(json& result) {
  const auto server = server_prefix_cache(result.value("server_metrics", json()));
  if (!server) return;
  json& pc = result["prefix_cache"];
  if (!pc.is_object()) {
    pc = prefix_cache_json(std::nullopt, server);
    return;
  }
  const json with = prefix_cache_json(std::nullopt, server);
  pc["server_hit_rate"] = with["server_hit_rate"];
  pc["server_source"] = with["server_source"];
}

std::string prefix_cache_console(const std::optional<PrefixCacheSummary>& p) {
  if (!p) return {};
  const auto rate = p->hit_rate();
  return fmt::format("{:<40}{:>12} ({} of {} prompt tokens cached; {} of {} requests reported some)\n",
                     "Prefix cache hit rate:", rate ? fmt::format("{:.2f}%", 100.0 * *rate) : std::string("-"),
                     p->cached_tokens, p->prompt_tokens, p->requests_reporting, p->requests);
}

}  // namespace llmload::analysis
