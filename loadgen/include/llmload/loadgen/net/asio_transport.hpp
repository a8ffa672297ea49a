#pragma once
// The real transport: HTTP/1.1 over TCP (Asio sockets and our own response parser,
// http1_parser.hpp), or over TLS (OpenSSL) for https:// base URLs with Boost.Beast, a keep-alive
// connection pool, per-request total and idle timeouts, a connect timeout, and the observer's
// progress deadlines (transport.hpp). The only loadgen code (with
// driver.hpp) that uses Asio.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/transport.hpp"
#include "llmload/loadgen/url.hpp"

namespace boost::asio {
class io_context;
}

namespace llmload::net {

struct TransportOptions {
  Nanos timeout = std::chrono::minutes(10);      // whole request, from start() (kTimeout)
  Nanos idle_timeout = std::chrono::seconds(60);  // longest silence while writing or reading (kIdleTimeout)
  /// Establishing a new connection: TCP connect plus, for https, the TLS handshake
  /// (kConnectTimeout). 0 = none: then idle_timeout bounds it, as silence.
  Nanos connect_timeout = std::chrono::seconds(30);
  /// https only. A PEM file of CA certificates to trust instead of the system's; empty = the
  /// system's. Checked when the transport is built (ConfigError naming the file).
  std::string ca_cert;
  /// https only. Skip certificate and host name verification.
  bool insecure = false;
  /// Plain TCP: time each read by the kernel's receive timestamp (SO_TIMESTAMPING, software),
  /// so the client's own event-loop delay stays out of TTFT and ITL. Only with the real
  /// SteadyClock; where the socket refuses the option, reads are timed when the loop gets to them.
  bool kernel_timestamps = true;
};

/// What the plain-TCP receive path did (tests and benchmarks: reads per token, not time).
struct TransportStats {
  std::uint64_t reads = 0;        // recvmsg calls on response bytes
  std::uint64_t empty_reads = 0;  // of which found nothing (EAGAIN)
  std::uint64_t wakeups = 0;      // times the transport's epoll set was collected (one epoll_wait each)
  std::uint64_t poll_waits = 0;   // waits started on the set (each one epoll_ctl in Asio's reactor)
  std::uint64_t registrations = 0;  // sockets added to the set (once per connection)
  std::uint64_t idle_checks = 0;    // pooled connections looked at (MSG_PEEK) before reuse
  std::uint64_t stale = 0;          // of which were found closed (or sent bytes) and replaced
};

/// Plain TCP reads every socket found ready by one wake-up in one handler. The driver sets this
/// (on the event loop's thread, for the length of a run) to say that something else is due now:
/// then the sockets left are handled as handlers of their own, one event-loop turn each, so the
/// due work runs between two of them. Empty: never.
void set_dispatch_yield(std::function<bool()> yield);

/// Threading: every call and every observer callback on the io_context's (single) thread.
class AsioTransport final : public Transport {
 public:
  /// Resolves the host now (blocking), and for https sets up TLS (loads the CA certificates);
  /// throws ConfigError when the host cannot be resolved or options.ca_cert cannot be loaded.
  AsioTransport(boost::asio::io_context& ioc, const Clock& clock, BaseUrl url, TransportOptions options);
  ~AsioTransport() override;
  void start(const HttpRequest& request, ResponseObserver& observer) override;
  void cancel_all() override;
  /// Connections opened so far (for the artifact and tests).
  std::size_t connections_opened() const;
  /// Counters of the plain-TCP receive path so far.
  TransportStats stats() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmload::net
