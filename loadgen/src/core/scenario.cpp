#include "llmload/loadgen/scenario.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"

namespace llmload {

std::string_view to_string(ScenarioKind k) {
  switch (k) {
    case ScenarioKind::kSingleStream: return "single-stream";
    case ScenarioKind::kServer: return "server";
    case ScenarioKind::kOffline: return "offline";
    case ScenarioKind::kConcurrency: return "concurrency";
    case ScenarioKind::kStages: return "stages";
  }
  return "unknown";
}

ScenarioKind parse_scenario_kind(std::string_view s) {
  std::string v(s);
  std::replace(v.begin(), v.end(), '_', '-');
  if (v == "single-stream" || v == "singlestream") return ScenarioKind::kSingleStream;
  if (v == "server") return ScenarioKind::kServer;
  if (v == "offline") return ScenarioKind::kOffline;
  if (v == "concurrency") return ScenarioKind::kConcurrency;
  if (v == "stages") return ScenarioKind::kStages;
  throw ConfigError(
      fmt::format("unknown scenario '{}': use one of single-stream, server, offline, concurrency, stages", s));
}

WarmupSpec parse_warmup(std::string_view s) {
  WarmupSpec w;
  if (s.empty() || s == "0") return w;
  if (has_duration_unit(s)) {
    try {
      w.duration = parse_duration(s);
    } catch (const DurationParseError& e) {
      throw ConfigError(fmt::format("bad --warmup '{}': {}", s, e.what()));
    }
    return w;
  }
  std::int64_t n = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size() || n < 0) {
    throw ConfigError(fmt::format(
        "bad --warmup '{}': give a number of requests (e.g. 20) or a duration with a unit (e.g. 5s)", s));
  }
  w.requests = n;
  return w;
}

void ScenarioConfig::validate() {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
  };
  need(base_url.rfind("http://", 0) == 0 || base_url.rfind("https://", 0) == 0,
       fmt::format("bad --base-url '{}': give an http:// URL, e.g. http://127.0.0.1:8000", base_url));
  constexpr std::int64_t kMaxTokens = 10'000'000;  // far beyond any context length; bounds prompt memory
  need(input_tokens >= 1 && input_tokens <= kMaxTokens,
       fmt::format("bad --input-tokens {}: must be between 1 and {}", input_tokens, kMaxTokens));
  need(output_tokens >= 1 && output_tokens <= kMaxTokens,
       fmt::format("bad --output-tokens {}: must be between 1 and {}", output_tokens, kMaxTokens));
  if (num_requests) need(*num_requests >= 1, fmt::format("bad --num-requests {}: must be at least 1", *num_requests));
  if (duration) need(duration->count() > 0, "bad --duration: must be positive, e.g. 30s");
  need(timeout.count() > 0, "bad --timeout: must be positive, e.g. 10m");
  need(idle_timeout.count() > 0, "bad --idle-timeout: must be positive, e.g. 60s");
  switch (kind) {
    case ScenarioKind::kServer:
      need(std::isfinite(request_rate) && request_rate > 0,
           "scenario 'server' needs --request-rate R (requests per second, > 0), e.g. --request-rate 10");
      break;
    case ScenarioKind::kOffline:
      if (max_inflight) need(*max_inflight >= 1, "bad --max-inflight: must be at least 1");
      need(!duration || num_requests,
           "scenario 'offline' releases every request at start, so it needs --num-requests (a --duration alone "
           "does not say how many)");
      break;
    case ScenarioKind::kConcurrency:
      need(concurrency >= 1, fmt::format("bad --concurrency {}: must be at least 1", concurrency));
      break;
    case ScenarioKind::kSingleStream:
      concurrency = 1;
      break;
    case ScenarioKind::kStages:
      need(!arrivals.stages.empty(),
           "scenario 'stages' needs --stages, e.g. --stages rate:5@30s,rate:10@30s,concurrency:16@60s");
      break;
  }
  if (kind != ScenarioKind::kServer && request_rate > 0) {
    throw ConfigError(fmt::format("--request-rate applies only to --scenario server (this run is '{}')", to_string(kind)));
  }
  if (!num_requests && !duration) num_requests = 100;
  // Every request of a run is kept in memory (its record), so the count is bounded.
  constexpr std::int64_t kMaxRequests = 50'000'000;
  if (warmup.requests > kMaxRequests || (num_requests && *num_requests > kMaxRequests - warmup.requests)) {
    throw ConfigError(fmt::format("--num-requests plus --warmup requests must stay below {}: split the run",
                                  kMaxRequests));
  }
  if (kind == ScenarioKind::kOffline && warmup.by_time()) {
    throw ConfigError("scenario 'offline' releases everything at once: give --warmup as a number of requests, not a time");
  }
}

std::uint64_t arrival_seed(std::uint64_t base) { return mix_seed(base ^ 0x6172726976616c73ULL); }  // "arrivals"
std::uint64_t data_seed(std::uint64_t base) { return mix_seed(base ^ 0x646174617365656bULL); }

}  // namespace llmload
