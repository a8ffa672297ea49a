#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "llmload/loadgen/net/asio_transport.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <limits>
#include <set>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/net/io_error.hpp"

namespace llmload::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using analysis::ErrorClass;

namespace {

// One TCP connection; kept in the pool between requests (keep-alive).
struct Connection {
  explicit Connection(asio::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;  // bytes read past the end of a response stay here for the next
  bool reused = false;
};

}  // namespace

struct Exchange;

struct AsioTransport::Impl : std::enable_shared_from_this<AsioTransport::Impl> {
  Impl(asio::io_context& c, const Clock& cl, BaseUrl u, TransportOptions o)
      : ioc(c), clock(cl), url(std::move(u)), options(o) {}

  asio::io_context& ioc;
  const Clock& clock;
  BaseUrl url;
  TransportOptions options;
  tcp::resolver::results_type endpoints;
  std::vector<std::unique_ptr<Connection>> idle;
  std::set<Exchange*> active;
  std::size_t opened = 0;
};

// One request/response exchange. Owns its connection while in flight. Each step re-arms the
// idle timeout (tcp_stream expiry); a separate timer bounds the whole request.
struct Exchange : std::enable_shared_from_this<Exchange> {
  Exchange(std::shared_ptr<AsioTransport::Impl> t, const HttpRequest& r, ResponseObserver& o)
      : transport(std::move(t)), observer(o), total_timer(transport->ioc) {
    req.method_string(r.method);
    req.target(r.target);
    req.version(11);
    for (const auto& [k, v] : r.headers) req.set(k, v);
    req.keep_alive(true);
    req.body() = r.body;
    req.prepare_payload();
  }

  std::shared_ptr<AsioTransport::Impl> transport;
  ResponseObserver& observer;
  http::request<http::string_body> req;
  std::unique_ptr<Connection> conn;
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::array<char, 16384> body_buf{};
  asio::steady_timer total_timer;
  bool finished = false;
  bool timed_out = false;
  bool canceled = false;
  bool retried = false;

  TimePoint now() const { return transport->clock.now(); }

  void begin() {
    transport->active.insert(this);
    total_timer.expires_after(transport->options.timeout);
    total_timer.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->finished) return;
      self->timed_out = true;
      if (self->conn) self->conn->stream.socket().close(ec);
    });
    acquire();
  }

  // True when an idle pooled connection is still usable: the server has not closed it (or
  // reset it, or sent stray bytes) while it sat in the pool.
  static bool still_open(Connection& c) {
    if (c.buffer.size() > 0) return false;  // bytes after the last response: not HTTP we expect
    char byte;
    const ssize_t n = ::recv(c.stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  void acquire() {
    auto& pool = transport->idle;
    while (!pool.empty()) {
      conn = std::move(pool.back());
      pool.pop_back();
      if (!still_open(*conn)) {
        beast::error_code ignored;
        conn->stream.socket().close(ignored);
        conn.reset();
        continue;
      }
      conn->reused = true;
      write();
      return;
    }
    conn = std::make_unique<Connection>(transport->ioc);
    ++transport->opened;
    conn->stream.expires_after(transport->options.idle_timeout);
    conn->stream.async_connect(transport->endpoints,
                               [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                                 if (ec) return self->fail(ErrorClass::kConnect, "connect", ec);
                                 self->conn->stream.socket().set_option(tcp::no_delay(true), ec);
                                 self->write();
                               });
  }

  void write() {
    parser.emplace();
    // Streams may be long; the size of one event is capped by the SSE parser instead. (Not
    // boost::none: Boost 1.74 compares Content-Length against the empty optional and fails.)
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser->header_limit(64 * 1024);
    conn->stream.expires_after(transport->options.idle_timeout);
    observer.on_sent(now());
    http::async_write(conn->stream, req, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->fail_or_retry("write request", ec, true);
      self->read_header();
    });
  }

  void read_header() {
    conn->stream.expires_after(transport->options.idle_timeout);
    http::async_read_header(conn->stream, conn->buffer, *parser,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->fail_or_retry("read response header", ec, false);
                              const auto& h = self->parser->get();
                              if (auto it = h.find(http::field::retry_after); it != h.end()) {
                                const auto v = it->value();
                                self->observer.on_header_field("Retry-After", std::string_view(v.data(), v.size()));
                              }
                              const auto ct = h[http::field::content_type];
                              self->observer.on_headers(self->now(), static_cast<int>(h.result_int()),
                                                        std::string_view(ct.data(), ct.size()));
                              self->read_body();
                            });
  }

  void read_body() {
    if (parser->is_done()) return done();
    parser->get().body().data = body_buf.data();
    parser->get().body().size = body_buf.size();
    conn->stream.expires_after(transport->options.idle_timeout);
    http::async_read_some(conn->stream, conn->buffer, *parser,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            const std::size_t n = self->body_buf.size() - self->parser->get().body().size;
                            if (ec == http::error::need_buffer) ec = {};
                            if (n > 0 && !self->finished) {
                              if (!self->observer.on_body(self->now(), std::string_view(self->body_buf.data(), n))) {
                                self->canceled = true;
                                return self->finish(ErrorClass::kCanceled, "aborted by the client", false);
                              }
                            }
                            if (ec) return self->fail(ErrorClass::kIncomplete, "read response body", ec);
                            self->read_body();
                          });
  }

  void done() {
    const bool keep = parser->keep_alive();
    finish(ErrorClass::kNone, {}, keep);
  }

  // Pooled connections are checked before reuse (still_open), which catches a server that closed
  // a keep-alive connection between requests. What remains is the race where it closes just as
  // the request goes out. As Go's net/http does, the request is retried once on a fresh
  // connection when a reused connection fails on the write, or is closed cleanly (FIN, no byte
  // of response): the server closed an idle connection and never took the request. A reset
  // after the write, or any failure on a fresh connection, is an error (the server may have
  // started generating).
  void fail_or_retry(const char* what, beast::error_code ec, bool during_write) {
    const bool write_failed =
        during_write && (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    const bool closed_idle = !during_write && ec == http::error::end_of_stream;
    const bool stale = (write_failed || closed_idle) && conn && conn->reused && !retried && !timed_out && !canceled;
    if (stale) {
      retried = true;
      beast::error_code ignored;
      conn->stream.socket().close(ignored);
      conn.reset();
      transport->idle.clear();  // the others are probably stale too
      acquire();
      return;
    }
    fail(ErrorClass::kProtocol, what, ec);
  }

  void fail(ErrorClass cls, const char* what, beast::error_code ec) {
    if (timed_out) {
      return finish(ErrorClass::kTimeout,
                    fmt::format("request exceeded the total timeout ({} s)",
                                std::chrono::duration<double>(transport->options.timeout).count()),
                    false);
    }
    if (canceled || ec == asio::error::operation_aborted) return finish(ErrorClass::kCanceled, "canceled", false);
    if (ec == beast::error::timeout) {
      return finish(ErrorClass::kIdleTimeout,
                    fmt::format("{}: no data for {} s (idle timeout)", what,
                                std::chrono::duration<double>(transport->options.idle_timeout).count()),
                    false);
    }
    cls = classify_io_error(cls, ec);
    const std::string target = cls == ErrorClass::kConnect ? " " + transport->url.host_header() : "";
    finish(cls, fmt::format("{}{}: {}", what, target, ec.message()), false);
  }

  void finish(ErrorClass cls, std::string message, bool keep_alive) {
    if (finished) return;
    finished = true;
    transport->active.erase(this);
    total_timer.cancel();
    if (conn) {
      if (keep_alive && cls == ErrorClass::kNone) {
        conn->stream.expires_never();
        transport->idle.push_back(std::move(conn));
      } else {
        beast::error_code ignored;
        conn->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
        conn->stream.socket().close(ignored);
        conn.reset();
      }
    }
    observer.on_complete(now(), TransportError{cls, std::move(message)});
  }

  void cancel() {
    canceled = true;
    beast::error_code ignored;
    if (conn) conn->stream.socket().close(ignored);
  }
};

ErrorClass classify_io_error(ErrorClass stage, const boost::system::error_code& ec) {
  if (stage == ErrorClass::kProtocol) {
    // Connection-level failures while waiting for the response are "incomplete", parse errors "protocol".
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::broken_pipe) {
      return ErrorClass::kIncomplete;
    }
  } else if (stage == ErrorClass::kIncomplete && ec.category() == beast::error_code(http::error::end_of_stream).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return ErrorClass::kProtocol;  // a malformed HTTP body (bad chunk encoding, ...)
  }
  return stage;
}

AsioTransport::AsioTransport(asio::io_context& ioc, const Clock& clock, BaseUrl url, TransportOptions options)
    : impl_(std::make_shared<Impl>(ioc, clock, std::move(url), options)) {
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  impl_->endpoints = resolver.resolve(impl_->url.host, impl_->url.port, ec);
  if (ec) {
    throw ConfigError(fmt::format("cannot resolve host '{}' of --base-url {}: {}", impl_->url.host, impl_->url.to_string(),
                                  ec.message()));
  }
}

AsioTransport::~AsioTransport() = default;

void AsioTransport::start(const HttpRequest& request, ResponseObserver& observer) {
  auto ex = std::make_shared<Exchange>(impl_, request, observer);
  ex->begin();
}

void AsioTransport::cancel_all() {
  auto active = impl_->active;  // cancel() may complete synchronously later; copy first
  for (auto* a : active) a->cancel();
}

std::size_t AsioTransport::connections_opened() const { return impl_->opened; }

}  // namespace llmload::net
