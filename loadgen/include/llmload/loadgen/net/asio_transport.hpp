#pragma once
// The real transport: HTTP/1.1 over TCP with Boost.Beast, a keep-alive connection pool, and
// per-request total and idle timeouts. The only loadgen code (with driver.hpp) that uses Asio.

#include <memory>

#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/transport.hpp"
#include "llmload/loadgen/url.hpp"

namespace boost::asio {
class io_context;
}

namespace llmload::net {

struct TransportOptions {
  Nanos timeout = std::chrono::minutes(10);      // whole request, from start()
  Nanos idle_timeout = std::chrono::seconds(60);  // longest silence while connecting, writing or reading
};

/// Threading: every call and every observer callback on the io_context's (single) thread.
class AsioTransport final : public Transport {
 public:
  /// Resolves the host now (blocking); throws ConfigError when it cannot be resolved.
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
