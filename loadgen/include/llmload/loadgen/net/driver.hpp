#pragma once
// Runs a RunController on an io_context: a timer for scheduled releases, re-polling after every
// completion, and signal handling (first SIGINT/SIGTERM: stop issuing and drain in-flight
// requests for at most `drain_timeout`; second: abort at once).

#include <string>
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
};

/// Runs until the controller has finished. Returns normally also when interrupted (see
/// controller.interrupted()).
void drive(boost::asio::io_context& ioc, RunController& controller, const DriveOptions& options);

/// What GET /v1/models said.
struct ModelsInfo {
  std::vector<std::string> ids;
  std::string raw;  // the response body
};

/// Fetches {base}/v1/models through `transport` (blocking: runs the io_context until done).
/// Throws ConfigError saying what was tried when the endpoint is unreachable or does not answer
/// like an OpenAI-compatible server.
ModelsInfo probe_models(boost::asio::io_context& ioc, Transport& transport, const std::string& base_url,
                        const std::string& base_path, const std::string& host_header, const std::string& api_key);

}  // namespace llmload::net
