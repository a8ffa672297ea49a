#pragma once
// Runs a RunController on an io_context: a timer for scheduled releases, re-polling after every
// completion, and signal handling (first SIGINT/SIGTERM: stop issuing and drain in-flight
// requests for at most `drain_timeout`; second: abort at once).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace llmload::net {

struct DriveOptions {
  Nanos drain_timeout = std::chrono::seconds(30);
  bool handle_signals = true;
  /// Called on the event loop every `tick_interval` while the run lasts (0: never): the live
  /// progress line, the over-saturation watch. It may stop the controller (interrupt, stop_early).
  Nanos tick_interval{0};
  std::function<void()> on_tick;
  /// Scheduled releases (open loop): the timer wakes this long before a release is due and the
  /// loop then spins on the clock until the due time, so the timer's wake-up latency (tens of µs
  /// on a VM, more under load) does not add to the schedule lag. Costs up to this much CPU per
  /// scheduled release. 0: sleep until the due time (the timer alone).
  Nanos spin_lead{0};
  /// --max-duration: the load's hard bound from its start (warmup included). The pacer stops
  /// releasing there; what is still in flight then is canceled at once (RunController::stop_now),
  /// so a stalled server cannot hold the run past it.
  std::optional<Nanos> hard_limit;
  /// A signal that arrived before the load (during calibration, the start wait): checked when the
  /// load begins, which then stops at once like an interrupted run. Unset: none.
  std::function<bool()> stop_requested;
  /// Told of each SIGINT/SIGTERM the load receives (so the command's later phases see it).
  std::function<void(int)> on_signal;
};

/// Runs until the controller has finished. Returns normally also when interrupted (see
/// controller.interrupted()).
void drive(boost::asio::io_context& ioc, RunController& controller, const DriveOptions& options);

/// What GET /v1/models said.
struct ModelsInfo {
  std::vector<std::string> ids;
  std::string raw;      // the response body
  std::string problem;  // with the model given: what the probe saw instead of a model list (empty: none)
};

/// Fetches {base}/v1/models through `transport` (blocking: runs the io_context until done).
/// Throws ConfigError saying what was tried when the endpoint is unreachable. An answer that is
/// not a model list (an error status, a redirect, another body) is an error only when the model
/// is not given (`model_given` false: the list is where it comes from); with the model given it
/// is a probe, not a gate (many gateways have no /v1/models, and the official SDK never asks):
/// what it saw is returned in `problem`.
/// `headers`: the run's extra request headers (--header), sent here too.
ModelsInfo probe_models(boost::asio::io_context& ioc, Transport& transport, const std::string& base_url,
                        const std::string& base_path, const std::string& host_header, const std::string& api_key,
                        const std::vector<std::pair<std::string, std::string>>& headers = {},
                        bool model_given = false);

/// Where and how to reach the server's /tokenize (vLLM, SGLang, llmload-server).
struct TokenizeTarget {
  std::string base_path;
  std::string host_header;
  std::string api_key;
  std::string model;
  bool chat = false;  // count as a chat message (with the chat template), not a raw prompt
  std::vector<std::pair<std::string, std::string>> headers;  // --header
};

/// Counts the tokens of `prompt` with the server's POST /tokenize (blocking). Returns nullopt when
/// the server has no /tokenize (an HTTP 404/405, or an answer without "count"); throws
/// ConfigError when the server cannot be reached.
std::optional<std::int64_t> tokenize_count(boost::asio::io_context& ioc, Transport& transport,
                                           const TokenizeTarget& target, const std::string& prompt);

}  // namespace llmload::net
