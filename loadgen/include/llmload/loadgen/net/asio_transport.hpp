#pragma once
// The real transport: HTTP/1.1 over TCP (Asio sockets and our own response parser,
// http1_parser.hpp), or over TLS (OpenSSL) for https:// base URLs with Boost.Beast, a keep-alive
// connection pool, per-request total and idle timeouts, a connect timeout, and the observer's
// progress deadlines (transport.hpp). The only loadgen code (with
// driver.hpp) that uses Asio.

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

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmload::net
