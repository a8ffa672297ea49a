#pragma once
// The prefix-cache hit rate of a run (issue 19; docs/metrics.md "Prefix-cache hit rate"): prompt
// tokens the server served from its cache, from the records' usage (cached_tokens) and, when the
// run scraped the server's /metrics, from its prefix-cache counters.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// Over the measured successful requests, once any of them reported cached_tokens: vLLM (and
/// llmload-server) send usage.prompt_tokens_details only when some prompt tokens were cached, so a
/// request of such a run without cached_tokens had none cached (counting only the requests that
/// reported would leave out every miss).
struct PrefixCacheSummary {
  std::int64_t requests_reporting = 0;  // requests that carried cached_tokens
  std::int64_t cached_tokens = 0;
  std::int64_t prompt_tokens = 0;  // input_tokens of every measured successful request
  std::int64_t requests = 0;       // measured successful requests
  /// cached_tokens / prompt_tokens; nullopt without prompt tokens.
  std::optional<double> hit_rate() const;
};

/// Whether a record reports its cached prompt tokens: a measured (not warmup, in the window)
/// successful request that carried cached_tokens.
bool reports_cached_tokens(const RequestRecord& r);

/// nullopt when no record reports_cached_tokens.
std::optional<PrefixCacheSummary> summarize_prefix_cache(RecordRange records);

/// The server's own hit rate over the run from the artifact's `server_metrics`
/// (prom::ServerMetricsRecording::to_json): delta.prefix_cache_hits / delta.prefix_cache_queries
/// (vLLM's counters, SGLang's cached and prompt token counters); else the mean of the
/// prefix_cache_hit_rate gauge's series (vLLM V0, SGLang). nullopt when neither is there.
struct ServerPrefixCache {
  double hit_rate = 0;
  std::string source;  // "counters" or "gauge"
};
std::optional<ServerPrefixCache> server_prefix_cache(const nlohmann::json& server_metrics);

/// result.json `prefix_cache`: {"cached_tokens", "prompt_tokens", "hit_rate", "requests",
/// "requests_reporting", "source": "usage"}, null for nullopt. With the server's rate (a run that scraped /metrics) also
/// "server_hit_rate" and "server_source"; a run whose responses carried no cached_tokens but whose
/// server counted gets the object with nulls, requests_reporting 0 and "source": "server_metrics".
nlohmann::json prefix_cache_json(const std::optional<PrefixCacheSummary>& p,
                                 const std::optional<ServerPrefixCache>& server = std::nullopt);

/// Adds the server's rate to result["prefix_cache"] from result["server_metrics"] (llmload run,
/// after the server's metrics are in the result).
void add_server_prefix_cache(nlohmann::json& result);

/// The console line ("" for nullopt).
std::string prefix_cache_console(const std::optional<PrefixCacheSummary>& p);

}  // namespace llmload::analysis
