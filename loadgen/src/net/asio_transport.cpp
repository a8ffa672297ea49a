#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "llmload/loadgen/net/asio_transport.hpp"

#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <system_error>
#include <type_traits>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/net/io_error.hpp"
#include "transport_impl.hpp"

namespace llmload::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using analysis::ErrorClass;
using transport_detail::ExchangeBase;

namespace transport_detail {

bool out_of_descriptors(const boost::system::error_code& ec) {
  // Compared by category and value, with no virtual call into the category (none is needed, and
  // with no descriptor left even UBSan's own checks fail: see test.sh's asan_skip).
  return ec == asio::error::no_descriptors ||
         (ec.category() == asio::error::get_system_category() && ec.value() == ENFILE);
}

bool no_descriptor_left() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == EMFILE || errno == ENFILE;
}

std::string descriptors_message(const char* what, const boost::system::error_code& ec) {
  return fmt::format("{}: {} (the client's open-file limit: raise it with ulimit -n, or cap the requests in flight "
                     "with --max-inflight)",
                     what, ec.message());
}

}  // namespace transport_detail

namespace {

using transport_detail::descriptors_message;
using transport_detail::no_descriptor_left;
using transport_detail::out_of_descriptors;
using transport_detail::seconds;

// The TLS connection's stream (plain TCP has its own lean exchange, PlainExchange). The Beast
// exchange stays a template on the stream type.
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection; kept in the pool between requests (keep-alive).
template <class Stream>
struct Connection {
  template <class... Args>
  explicit Connection(Args&&... args) : stream(std::forward<Args>(args)...) {}
  Stream stream;
  beast::flat_buffer buffer;  // bytes read past the end of a response stay here for the next
  bool reused = false;

  // The TCP layer (the stream itself for plain TCP): timeouts, the socket.
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream); }
  // Closes the socket without a TLS close_notify: nothing waits on the peer. Pending operations
  // complete with an error.
  void close() {
    beast::error_code ignored;
    tcp().socket().close(ignored);
  }
};


// What a failed TLS handshake says (not a certificate problem: those are reported apart).
std::string describe_handshake_error(const beast::error_code& ec) {
  if (ec == ssl::error::stream_truncated || ec == asio::error::eof) {
    return "the server closed the connection during the handshake";
  }
  if (ec.category() == asio::error::get_ssl_category()) {
    const char* reason = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    std::string r = reason != nullptr ? reason : ec.message();
    if (r == "wrong version number" || r == "packet length too long" || r == "record layer failure") {
      r += " (the server does not seem to speak TLS on this port; use http:// for a plain HTTP server)";
    }
    return r;
  }
  return ec.message();
}

}  // namespace

// The idle TLS connections (keep-alive), kept by the transport between requests.
struct transport_detail::TlsPool {
  std::vector<std::unique_ptr<Connection<TlsStream>>> idle;
};

AsioTransport::Impl::Impl(asio::io_context& c, const Clock& cl, BaseUrl u, TransportOptions o)
    : ioc(c), clock(cl), url(std::move(u)), options(std::move(o)) {}

AsioTransport::Impl::~Impl() {
  idle_plain.clear();  // deregistered from the set before it closes
  if (timestamp_keeper >= 0) ::close(timestamp_keeper);
}

namespace {

template <class Stream>
std::vector<std::unique_ptr<Connection<Stream>>>& idle_pool(AsioTransport::Impl& t) {
  return t.tls_pool->idle;
}

// One request/response exchange. Owns its connection while in flight. Each step re-arms the
// idle timeout (tcp_stream expiry); establishing a connection is bounded by the connect timeout
// instead; a separate timer bounds the whole request, and another the observer's deadline.
//
// Invariant: from begin() until finish(), exactly one asynchronous operation on the connection
// (connect, handshake, write or read) is pending, and only its handler ends the exchange. The
// timers and cancel() never finish it themselves: they record why (abort_error, canceled) and
// close the socket, so that the pending operation completes and its handler reports the reason.
template <class Stream>
struct Exchange final : ExchangeBase, std::enable_shared_from_this<Exchange<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  using Conn = Connection<Stream>;

  Exchange(std::shared_ptr<AsioTransport::Impl> t, const HttpRequest& r, ResponseObserver& o)
      : transport(std::move(t)), observer(o), total_timer(transport->ioc), deadline_timer(transport->ioc) {
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
  std::unique_ptr<Conn> conn;
  std::optional<http::response_parser<http::buffer_body>> parser;
  // 4 KiB per exchange: a token chunk is a few hundred bytes, and a larger body just takes more
  // reads; with 10,000 streams open this buffer is most of the client's memory per stream.
  std::array<char, 4096> body_buf;  // not zero-filled: only bytes read are used
  asio::steady_timer total_timer;
  asio::steady_timer deadline_timer;
  // Set by the total timeout or the observer's deadline (the first wins): the exchange ends with it.
  std::optional<TransportError> abort_error;
  std::optional<TimePoint> deadline;  // the observer's latest answer
  TimePoint deadline_armed{};         // when the pending deadline wait expires
  bool deadline_waiting = false;      // a deadline wait is pending
  unsigned deadline_gen = 0;          // tells a superseded wait's completion from the current one
  bool finished = false;
  bool canceled = false;
  bool retried = false;
  bool connecting = false;  // TCP connect or TLS handshake in progress

  TimePoint now() const { return transport->clock.now(); }
  bool stopping() const { return abort_error.has_value() || canceled; }

  void begin() {
    transport->link(this);
    total_timer.expires_after(transport->options.timeout);
    total_timer.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (ec || self->finished) return;
      self->abort(TransportError{ErrorClass::kTimeout, fmt::format("request exceeded the total timeout ({} s)",
                                                                   seconds(self->transport->options.timeout))});
    });
    acquire();
  }

  void abort(TransportError error) {
    if (stopping() || finished) return;
    abort_error = std::move(error);
    if (conn) conn->close();
  }

  // True when an idle pooled connection is still usable: the server has not closed it (or
  // reset it, or sent stray bytes) while it sat in the pool. For TLS the socket check works the
  // same: a close_notify, a FIN or anything else the server sent after the response waits there
  // until read. Bytes already handed to OpenSSL and not used by the response are stray too.
  // (Bytes Asio read from the socket but has not yet handed to OpenSSL cannot be seen here; if
  // they are a close_notify, the request fails as on a connection closed just as it went out,
  // and is retried.)
  static bool still_open(Conn& c) {
    if (c.buffer.size() > 0) return false;  // bytes after the last response: not HTTP we expect
    if constexpr (kTls) {
      SSL* ssl = c.stream.native_handle();
      if (SSL_has_pending(ssl) != 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0) return false;
    }
    char byte;
    const ssize_t n = ::recv(c.tcp().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  void acquire() {
    auto& pool = idle_pool<Stream>(*transport);
    while (!pool.empty()) {
      conn = std::move(pool.back());
      pool.pop_back();
      if (!still_open(*conn)) {
        conn->close();
        conn.reset();
        continue;
      }
      conn->reused = true;
      write();
      return;
    }
    if constexpr (kTls) {
      conn = std::make_unique<Conn>(transport->ioc, *transport->tls);
    } else {
      conn = std::make_unique<Conn>(transport->ioc);
    }
    ++transport->opened;
    connecting = true;
    // One deadline for TCP connect and TLS handshake together (the stream's expiry covers every
    // operation until it is changed).
    const auto& o = transport->options;
    conn->tcp().expires_after(o.connect_timeout > Nanos::zero() ? o.connect_timeout : o.idle_timeout);
    conn->tcp().async_connect(transport->endpoints,
                              [self = this->shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                                if (ec || self->stopping()) return self->fail(ErrorClass::kConnect, "connect", ec);
                                self->conn->tcp().socket().set_option(tcp::no_delay(true), ec);
                                if constexpr (kTls) {
                                  self->handshake();
                                } else {
                                  self->connected();
                                }
                              });
  }

  // TLS: SNI (host names only, never IP literals: RFC 6066), then the handshake. Certificate and
  // host name checks are set on the context (AsioTransport's constructor) and run inside it.
  void handshake() {
    if (!transport->host_is_ip) {
      // SSL_set_tlsext_host_name without its C cast.
      SSL_ctrl(conn->stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(transport->url.host.c_str()));
    }
    conn->stream.async_handshake(ssl::stream_base::client, [self = this->shared_from_this()](beast::error_code ec) {
      if (ec || self->stopping()) return self->fail_handshake(ec);
      self->connected();
    });
  }

  void connected() {
    connecting = false;
    write();
  }

  void write() {
    parser.emplace();
    // Streams may be long; the size of one event is capped by the SSE parser instead. (Not
    // boost::none: Boost 1.74 compares Content-Length against the empty optional and fails.)
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser->header_limit(64 * 1024);
    conn->tcp().expires_after(transport->options.idle_timeout);
    observer.on_sent(now());
    update_deadline();
    http::async_write(conn->stream, req, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || self->stopping()) return self->fail_or_retry("write request", ec, true);
      self->read_header();
    });
  }

  void read_header() {
    conn->tcp().expires_after(transport->options.idle_timeout);
    http::async_read_header(conn->stream, conn->buffer, *parser,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec || self->stopping()) return self->fail_or_retry("read response header", ec, false);
                              const auto& h = self->parser->get();
                              for (const auto& [field, name] :
                                   {std::pair{http::field::retry_after, "Retry-After"},
                                    std::pair{http::field::location, "Location"},
                                    std::pair{http::field::content_encoding, "Content-Encoding"}}) {
                                if (auto it = h.find(field); it != h.end()) {
                                  const auto v = it->value();
                                  self->observer.on_header_field(name, std::string_view(v.data(), v.size()));
                                }
                              }
                              if (self->observer.wants_raw_head()) {
                                std::string head = fmt::format("HTTP/1.{} {} ", h.version() % 10, h.result_int());
                                head.append(h.reason().data(), h.reason().size());
                                head += "\r\n";
                                for (const auto& f : h) {
                                  head.append(f.name_string().data(), f.name_string().size());
                                  head += ": ";
                                  head.append(f.value().data(), f.value().size());
                                  head += "\r\n";
                                }
                                self->observer.on_raw_head(head + "\r\n");
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
    conn->tcp().expires_after(transport->options.idle_timeout);
    http::async_read_some(conn->stream, conn->buffer, *parser,
                          [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                            const std::size_t n = self->body_buf.size() - self->parser->get().body().size;
                            if (ec == http::error::need_buffer) ec = {};
                            if (self->stopping()) return self->fail(ErrorClass::kIncomplete, "read response body", ec);
                            if (n > 0) {
                              if (!self->observer.on_body(self->now(), std::string_view(self->body_buf.data(), n))) {
                                self->canceled = true;
                                return self->finish(ErrorClass::kCanceled, "aborted by the client", false);
                              }
                              self->update_deadline();
                            }
                            if (ec) return self->fail(ErrorClass::kIncomplete, "read response body", ec);
                            self->read_body();
                          });
  }

  void done() {
    const bool keep = parser->keep_alive();
    finish(ErrorClass::kNone, {}, keep);
  }

  // The observer's progress deadline. One timer per exchange, re-armed only when the deadline
  // comes earlier than the pending wait: when it moves later (the usual case, e.g. each token
  // pushes the inter-token deadline on), the pending wait fires at the old moment, sees the new
  // deadline and waits again. So a stream of tokens costs no timer operation per token.
  void update_deadline() {
    deadline = observer.deadline();
    if (!deadline || finished) return;  // none: a pending wait finds none and stops
    if (deadline_waiting && *deadline >= deadline_armed) return;
    arm_deadline(*deadline);
  }

  void arm_deadline(TimePoint d) {
    deadline_armed = d;
    deadline_waiting = true;
    const unsigned gen = ++deadline_gen;
    // Relative to the transport's clock, so the timer agrees with the observer's time.
    deadline_timer.expires_after(d - now());  // cancels a pending wait (its completion is ignored)
    deadline_timer.async_wait([self = this->shared_from_this(), gen](beast::error_code ec) {
      self->on_deadline_timer(gen, ec);
    });
  }

  void on_deadline_timer(unsigned gen, beast::error_code ec) {
    if (ec || gen != deadline_gen || finished) return;
    deadline_waiting = false;
    if (!deadline || stopping()) return;
    const TimePoint t = now();
    if (t < *deadline) return arm_deadline(*deadline);
    TransportError e = observer.on_deadline(t);
    if (e.ok()) e = TransportError{ErrorClass::kTimeout, "deadline passed"};
    abort(std::move(e));
  }

  // Pooled connections are checked before reuse (still_open), which catches a server that closed
  // a keep-alive connection between requests. What remains is the race where it closes just as
  // the request goes out. As Go's net/http does, the request is retried once on a fresh
  // connection when a reused connection fails on the write, or is closed cleanly (FIN, no byte
  // of response): the server closed an idle connection and never took the request. A reset
  // after the write, or any failure on a fresh connection, is an error (the server may have
  // started generating). Over TLS a FIN without close_notify reads as stream_truncated.
  void fail_or_retry(const char* what, beast::error_code ec, bool during_write) {
    const bool write_failed =
        during_write && (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    bool closed_idle = !during_write && ec == http::error::end_of_stream;
    if constexpr (kTls) {
      closed_idle = closed_idle || (!during_write && ec == ssl::error::stream_truncated && !parser->got_some() &&
                                    conn->buffer.size() == 0);
    }
    const bool stale = (write_failed || closed_idle) && conn && conn->reused && !retried && !stopping();
    if (stale) {
      retried = true;
      conn->close();
      conn.reset();
      idle_pool<Stream>(*transport).clear();  // the others are probably stale too
      acquire();
      return;
    }
    fail(ErrorClass::kProtocol, what, ec);
  }

  // A failed TLS handshake: kConnect, saying why. A certificate that could not be verified gets
  // OpenSSL's reason and the two ways out.
  void fail_handshake(beast::error_code ec) {
    if (stopping() || ec == beast::error::timeout || ec == asio::error::operation_aborted) {
      return fail(ErrorClass::kConnect, "TLS handshake", ec);
    }
    if constexpr (kTls) {
      const long verify = SSL_get_verify_result(conn->stream.native_handle());
      if (!transport->options.insecure && verify != X509_V_OK) {
        const bool wrong_name = verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH;
        const std::string fix =
            wrong_name ? fmt::format("the server's certificate is not for '{}': use a --base-url host that the "
                                     "certificate names, or --insecure to skip verification",
                                     transport->url.host)
                       : std::string("the server's certificate could not be verified: pass --ca-cert FILE with the "
                                     "CA certificate that signed it, or --insecure to skip verification");
        return finish(ErrorClass::kConnect,
                      fmt::format("TLS handshake with {}: certificate verify failed ({}); {}", transport->host_port,
                                  X509_verify_cert_error_string(verify), fix),
                      false);
      }
    }
    finish(ErrorClass::kConnect,
           fmt::format("TLS handshake with {} failed: {}", transport->host_port, describe_handshake_error(ec)), false);
  }

  void fail(ErrorClass cls, const char* what, beast::error_code ec) {
    if (abort_error) {
      TransportError e = std::move(*abort_error);
      return finish(e.cls, std::move(e.message), false);
    }
    if (out_of_descriptors(ec) || (connecting && !canceled && ec == asio::error::operation_aborted &&
                                   no_descriptor_left())) {
      return finish(ErrorClass::kConnect, descriptors_message(what, asio::error::no_descriptors), false);
    }
    if (canceled || ec == asio::error::operation_aborted) return finish(ErrorClass::kCanceled, "canceled", false);
    if (ec == beast::error::timeout) {
      const auto& o = transport->options;
      if (connecting && o.connect_timeout > Nanos::zero()) {
        return finish(ErrorClass::kConnectTimeout,
                      fmt::format("connect to {} timed out after {} s (--connect-timeout)", transport->host_port,
                                  seconds(o.connect_timeout)),
                      false);
      }
      return finish(ErrorClass::kIdleTimeout,
                    fmt::format("{}: no data for {} s (idle timeout)", what, seconds(o.idle_timeout)), false);
    }
    cls = classify_io_error(cls, ec);
    const std::string target = cls == ErrorClass::kConnect ? " " + transport->url.host_header() : "";
    finish(cls, fmt::format("{}{}: {}", what, target, ec.message()), false);
  }

  void finish(ErrorClass cls, std::string message, bool keep_alive) {
    if (finished) return;
    finished = true;
    transport->unlink(this);
    total_timer.cancel();
    if (deadline_waiting) deadline_timer.cancel();
    if (conn) {
      if (keep_alive && cls == ErrorClass::kNone) {
        conn->tcp().expires_never();
        idle_pool<Stream>(*transport).push_back(std::move(conn));
      } else {
        // No TLS close_notify: nothing waits for the server, which sees the FIN.
        beast::error_code ignored;
        conn->tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
        conn->close();
        conn.reset();
      }
    }
    observer.on_complete(now(), TransportError{cls, std::move(message)});
  }

  void cancel() override {
    canceled = true;
    if (conn) conn->close();
  }
};

}  // namespace

namespace {

// https: the TLS context every connection of the transport shares. Verification is on unless
// `insecure`: the chain against the system's CAs (or only those in ca_cert), and the certificate
// against the URL's host (a DNS name, or an IP address, which must be in the certificate as one).
void setup_tls(AsioTransport::Impl& t) {
  const TransportOptions& o = t.options;
  beast::error_code ec;
  (void)asio::ip::make_address(t.url.host, ec);
  t.host_is_ip = !ec;
  ssl::context& ctx = t.tls.emplace(ssl::context::tls_client);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_compression);
  if (!o.ca_cert.empty()) {
    if (::access(o.ca_cert.c_str(), R_OK) != 0) {
      throw ConfigError(fmt::format("cannot read --ca-cert file '{}': {}", o.ca_cert, std::strerror(errno)));
    }
    ctx.load_verify_file(o.ca_cert, ec);
    if (ec) {
      throw ConfigError(fmt::format("bad --ca-cert file '{}': no CA certificate could be loaded from it ({}); it "
                                    "must hold one or more PEM certificates (-----BEGIN CERTIFICATE-----)",
                                    o.ca_cert, ec.message()));
    }
  } else if (!o.insecure) {
    ctx.set_default_verify_paths(ec);
    if (ec) {
      throw ConfigError(fmt::format("cannot load the system's CA certificates ({}); pass --ca-cert FILE", ec.message()));
    }
  }
  if (o.insecure) {
    ctx.set_verify_mode(ssl::verify_none);
    return;
  }
  ctx.set_verify_mode(ssl::verify_peer);
  // Inherited by every connection (SSL_new copies the context's parameters).
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx.native_handle());
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const int ok = t.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, t.url.host.c_str())
                              : X509_VERIFY_PARAM_set1_host(param, t.url.host.c_str(), t.url.host.size());
  if (ok != 1) throw ConfigError(fmt::format("cannot verify certificates for host '{}'", t.url.host));
}

}  // namespace

ErrorClass classify_io_error(ErrorClass stage, const boost::system::error_code& ec) {
  if (stage == ErrorClass::kProtocol) {
    // Connection-level failures while waiting for the response are "incomplete", parse errors
    // "protocol". Over TLS, a connection closed without close_notify is stream_truncated.
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::broken_pipe || ec == ssl::error::stream_truncated) {
      return ErrorClass::kIncomplete;
    }
  } else if (stage == ErrorClass::kIncomplete && ec.category() == beast::error_code(http::error::end_of_stream).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return ErrorClass::kProtocol;  // a malformed HTTP body (bad chunk encoding, ...)
  }
  // Anything else in the body (reset, TLS stream_truncated, a TLS record error) stays incomplete.
  return stage;
}

AsioTransport::AsioTransport(asio::io_context& ioc, const Clock& clock, BaseUrl url, TransportOptions options)
    : impl_(std::make_shared<Impl>(ioc, clock, std::move(url), std::move(options))) {
  Impl& t = *impl_;
  const std::string host = t.url.host.find(':') != std::string::npos ? "[" + t.url.host + "]" : t.url.host;
  t.host_port = host + ":" + t.url.port;
  if (t.url.scheme == "https") {
    setup_tls(t);
    t.tls_pool = std::make_unique<transport_detail::TlsPool>();
  }
  // The sweep period: a sixteenth of the shortest timeout, between 1 and 10 ms.
  Nanos shortest = std::min(t.options.timeout, t.options.idle_timeout);
  if (t.options.connect_timeout > Nanos::zero()) shortest = std::min(shortest, t.options.connect_timeout);
  t.tick = std::clamp<Nanos>(shortest / 16, std::chrono::milliseconds(1), std::chrono::milliseconds(10));
  t.kernel_timestamps = t.options.kernel_timestamps && dynamic_cast<const SteadyClock*>(&clock) != nullptr;
  if (t.kernel_timestamps && !t.tls) {
    t.timestamp_keeper = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    if (t.timestamp_keeper >= 0) {
      (void)::setsockopt(t.timestamp_keeper, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags);
    }
  }
  if (!t.tls) {
    t.poll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (t.poll_fd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    t.poll.emplace(ioc, t.poll_fd);  // owns the descriptor from here
  }
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  t.endpoints = resolver.resolve(t.url.host, t.url.port, ec);
  if (ec) {
    throw ConfigError(
        fmt::format("cannot resolve host '{}' of --base-url {}: {}", t.url.host, t.url.to_string(), ec.message()));
  }
}

AsioTransport::~AsioTransport() = default;

void AsioTransport::start(const HttpRequest& request, ResponseObserver& observer) {
  if (impl_->tls) {
    std::make_shared<Exchange<TlsStream>>(impl_, request, observer)->begin();
  } else {
    transport_detail::start_plain_exchange(impl_, request, observer);
  }
}

void AsioTransport::cancel_all() {
  for (ExchangeBase* a : impl_->snapshot()) a->cancel();
}

std::size_t AsioTransport::connections_opened() const { return impl_->opened; }

TransportStats AsioTransport::stats() const { return impl_->stats; }

}  // namespace llmload::net
