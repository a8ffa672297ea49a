#pragma once
// Scrapes the server's Prometheus /metrics (vLLM, SGLang, llmload-server) before, during (every
// `interval`) and after a run, and keeps the standard series (running and waiting requests,
// KV-cache usage, preemptions, tokens) and the server's own TTFT / E2E / queue / ITL histograms
// for the result artifact (docs/server-metrics.md). Never fails a run: a server without /metrics,
// or one that stops answering, is recorded, not thrown.
//
// The scraper owns its thread, io_context and connection (the run's AsioTransport settings: TLS,
// CA file, --insecure, the API key and --header), so it never touches the driver's event loop.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/prometheus.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/url.hpp"

namespace llmload::net {

struct ScraperOptions {
  BaseUrl url;               // the run's --base-url
  std::string path;          // target of the GET; empty: url.path + "/metrics"
  std::string api_key;       // sent as "Authorization: Bearer KEY" when set
  std::vector<std::pair<std::string, std::string>> headers;  // the run's --header, sent too
  std::string ca_cert;       // https: as TransportOptions::ca_cert
  bool insecure = false;     // https: as TransportOptions::insecure
  /// Period of the scrapes during the run (fixed rate; a slow scrape skips slots, never piles up).
  /// 0: only the before and after snapshots.
  Nanos interval = std::chrono::seconds(1);
  /// One scrape, all included (connect, TLS, the whole response). A scrape over it is an error.
  Nanos timeout = std::chrono::seconds(5);
  /// stop(): scrape again every 50 ms, for at most this long, until the server is settled (no
  /// request running or waiting, finished-request and token counters unchanged since the
  /// previous scrape) before taking the "after" snapshot, so that requests the client has
  /// finished are finished in the server's counters too. 0: take it at once.
  Nanos settle_timeout = std::chrono::seconds(1);
  /// The run's start on the steady clock: times in the artifact are seconds from it. Unset: the
  /// moment start() is called. Can also be set later with set_t0().
  std::optional<TimePoint> t0;
  /// The server's /v1/models owned_by ("vllm", "sglang", "llmload"): tells llmload-server, which
  /// serves vLLM's names, from vLLM.
  std::string server_hint;
  std::size_t max_points = 100000;        // series length bound (then "truncated": true)
  std::size_t max_body_bytes = 64u << 20;  // a larger response is an error
};

class MetricsScraper {
 public:
  explicit MetricsScraper(ScraperOptions options);
  /// Stops the scrapes (without the "after" snapshot) if stop() was not called.
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  /// One GET (blocking, at most `timeout`): true when /metrics answers 200 with a body in the
  /// Prometheus text format holding at least one sample. Otherwise the artifact says
  /// "not available: <reason>" and start()/stop() do nothing. Never throws.
  bool probe();
  bool available() const;
  /// "not available: <reason>", or "" while available.
  std::string reason() const;

  /// Probes if probe() was not called; then takes the "before" snapshot (blocking) and starts
  /// the interval scrapes on the scraper's thread. Never throws. Call at most once.
  void start();
  /// Stops the interval scrapes and takes the "after" snapshot (blocking: at most about
  /// settle_timeout + timeout). Idempotent. Never throws.
  void stop();

  /// The origin of the artifact's times (the run's start); may be called at any time.
  void set_t0(TimePoint t0);

  /// The artifact's "server_metrics" object (docs/server-metrics.md). Thread-safe.
  nlohmann::json to_json() const;
  /// The raw bodies of the before and after snapshots ("" when missing), e.g. to save beside
  /// the artifact.
  std::string before_text() const;
  std::string after_text() const;
  /// The scraped URL, e.g. "http://127.0.0.1:8000/metrics".
  std::string url() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Client-side vs server-side TTFT (see analysis::prom::cross_check_ttft), re-exported here
/// for the run command.
using analysis::prom::cross_check_ttft;

}  // namespace llmload::net
