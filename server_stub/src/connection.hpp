#pragma once
// Private to llmload-server's HTTP layer (http_server.cpp, connection.cpp): the state shared by
// all connections, and the coroutine that serves one connection. Includes Asio; keep it out of
// public headers.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "llmload/server/api_error.hpp"
#include "llmload/server/engine/server_engine.hpp"
#include "llmload/server/fault.hpp"
#include "llmload/server/latency_model.hpp"
#include "llmload/server/metrics.hpp"
#include "llmload/server/router.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

/// --max-num-seqs with the fixed latency model: at most `limit` requests generate at once; the
/// others wait for a slot in arrival order (FIFO), as a batch-limited engine queues them. Their
/// time waiting is queue time (TTFT grows with the queue). Thread-safe; limit 0: no limit.
class FixedSlots {
 public:
  FixedSlots(std::int64_t limit, ServerMetrics& metrics) : limit_(limit), metrics_(metrics) {}
  bool limited() const { return limit_ > 0; }
  /// Returns once the caller holds a slot (at once when one is free). Each acquire needs one release().
  boost::asio::awaitable<void> acquire();
  /// Hands the slot to the longest waiter, or frees it.
  void release();

 private:
  struct Waiter {
    explicit Waiter(const boost::asio::any_io_executor& ex) : timer(ex) {}
    boost::asio::steady_timer timer;
    bool granted = false;  // under mu_
  };
  void publish();  // the gauges (under mu_)
  const std::int64_t limit_;
  ServerMetrics& metrics_;
  std::mutex mu_;
  std::int64_t running_ = 0;
  std::deque<std::shared_ptr<Waiter>> waiters_;
};

/// What every connection of one server shares. It outlives every coroutine frame (the io_context
/// that owns the frames is destroyed first).
/// Threading: read from all io threads at once. Everything is immutable after construction
/// except the atomics, the metrics (thread-safe) and the engine (thread-safe submit/cancel);
/// Router::route, LatencyModel::start and FaultInjector::choose are const and thread-safe.
struct SharedState {
  /// With config.latency.model == "engine", `model_in` is null and the engine is built here
  /// (throws std::runtime_error for --device cuda without a usable GPU).
  SharedState(ServerConfig config_in, std::unique_ptr<LatencyModel> model_in, std::int64_t started_unix);

  const ServerConfig config;
  const std::unique_ptr<const LatencyModel> model;  ///< null: the engine times tokens
  const Router router;
  ServerMetrics metrics;
  const FaultInjector faults;
  ServerEngine engine;  ///< engine.runtime null unless the engine model is used
  std::atomic<std::uint64_t> next_sequence{0};  ///< request sequence numbers (ids, jitter streams)
  /// Generation requests' arrival order: the output model's draws (output_sequence.hpp).
  std::atomic<std::uint64_t> next_generation{0};
  /// Fixed model: requests generating now (the output model's batch).
  std::atomic<std::int64_t> fixed_generating{0};
  /// Connections being served. Incremented only by the accept loop (before it spawns the
  /// connection), decremented by the connection when it ends, from any io thread.
  std::atomic<std::int64_t> open_connections{0};
  FixedSlots fixed_slots;  ///< the fixed model's --max-num-seqs
};

/// A whole HTTP/1.1 error response with the OpenAI body and `Connection: close`, as bytes.
std::string error_response_bytes(const ApiError& error);

/// Serves one accepted connection until it closes: reads requests under the header, body and
/// keep-alive deadlines, answers them (streams included), answers malformed or timed-out requests
/// with an OpenAI error and closes. Decrements shared.open_connections when it ends (the caller
/// has counted it in). Never throws: unexpected exceptions are logged.
/// Runs on the socket's executor, which must serialize the connection's handlers (an io_context
/// run by one thread: http_server.cpp). Takes the socket by value: it owns it.
boost::asio::awaitable<void> serve_connection(boost::asio::ip::tcp::socket socket, SharedState& shared);

}  // namespace llmload::server
