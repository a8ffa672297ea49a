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
#include "llmload/loadgen/net/http1_parser.hpp"
#include "llmload/loadgen/net/io_error.hpp"

namespace llmload::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using analysis::ErrorClass;

namespace {

// The client out of file descriptors (EMFILE, ENFILE): its own limit, not the server's failure
// (issue 16: it showed as "canceled"). The message names the fix.
bool out_of_descriptors(const beast::error_code& ec) {
  // Compared by category and value, with no virtual call into the category (none is needed, and
  // with no descriptor left even UBSan's own checks fail: see test.sh's asan_skip).
  return ec == asio::error::no_descriptors ||
         (ec.category() == asio::error::get_system_category() && ec.value() == ENFILE);
}
// Asio's range connect reports a socket it could not open (EMFILE) as operation_aborted: a
// connect "aborted" that nobody canceled is told apart by trying to open a socket now.
bool no_descriptor_left() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == EMFILE || errno == ENFILE;
}
std::string descriptors_message(const char* what, const beast::error_code& ec) {
  return fmt::format("{}: {} (the client's open-file limit: raise it with ulimit -n, or cap the requests in flight "
                     "with --max-inflight)",
                     what, ec.message());
}

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

double seconds(Nanos d) { return std::chrono::duration<double>(d).count(); }

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

// An exchange, seen by the transport (cancel_all, the timeout sweep) without knowing its kind.
// Active exchanges form an intrusive list: no allocation to enter or leave it.
struct ExchangeBase {
  virtual ~ExchangeBase() = default;
  virtual void cancel() = 0;
  /// Called by the transport's sweep (plain TCP: the timeouts are checked there).
  virtual void sweep(TimePoint now) { (void)now; }
  ExchangeBase* prev = nullptr;
  ExchangeBase* next = nullptr;
};

struct PlainExchange;

// One plain-TCP connection (the lean path): the socket and its read buffer. Asio connects it;
// then the transport takes the descriptor over (release) and registers it once, edge-triggered,
// in its own epoll set (Impl::poll_fd) for the connection's whole life: a read or a wait costs
// no reactor call (Asio's async_wait re-registers the socket with epoll_ctl every time).
struct PlainConn {
  explicit PlainConn(asio::io_context& ioc) : sock(ioc) {}
  ~PlainConn() { close(); }
  PlainConn(const PlainConn&) = delete;
  PlainConn& operator=(const PlainConn&) = delete;
  tcp::socket sock;  // while connecting; empty once `fd` is ours
  int fd = -1;       // the connected socket, registered in `poll_fd`
  int poll_fd = -1;  // the transport's epoll set while registered
  PlainExchange* owner = nullptr;  // the exchange using the connection (none while pooled)
  std::uint32_t pending = 0;       // epoll events seen while its exchange waited for none of them
  bool want_out = false;           // EPOLLOUT registered (after a write that did not fit)
  bool reused = false;
  bool rx_timestamps = false;  // SO_TIMESTAMPING is on
  // 4 KiB per connection: a token chunk is a few hundred bytes, and a larger body just takes more
  // reads; with 10,000 streams open this buffer is most of the client's memory per stream.
  std::array<char, 4096> buf;  // not zero-filled: only bytes read are used
  void close() {
    beast::error_code ignored;
    sock.close(ignored);
    if (fd >= 0) {
      // Removed from the set explicitly: a copy of the descriptor in a child between fork and
      // exec would keep the registration (and its pointer to this connection) alive.
      if (poll_fd >= 0) (void)::epoll_ctl(poll_fd, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
      fd = -1;
    }
  }
};

}  // namespace

struct AsioTransport::Impl {
  Impl(asio::io_context& c, const Clock& cl, BaseUrl u, TransportOptions o)
      : ioc(c), clock(cl), url(std::move(u)), options(std::move(o)) {}

  asio::io_context& ioc;
  const Clock& clock;
  BaseUrl url;
  TransportOptions options;
  std::string host_port;  // "HOST:PORT" for messages
  tcp::resolver::results_type endpoints;
  std::optional<ssl::context> tls;  // https only; declared before the pools that use it
  bool host_is_ip = false;
  std::vector<std::unique_ptr<Connection<TlsStream>>> idle_tls;
  std::vector<std::unique_ptr<PlainConn>> idle_plain;
  ExchangeBase* active = nullptr;  // intrusive list of the exchanges in flight
  std::size_t active_count = 0;
  std::size_t opened = 0;
  // Plain TCP checks its timeouts (connect, idle, total, the observer's deadlines) in one
  // periodic sweep over the active exchanges instead of re-arming timers per read and per
  // request: `tick` is the sweep period, so a timeout fires up to one tick late.
  asio::steady_timer sweep_timer{ioc};
  bool sweeping = false;
  Nanos tick{std::chrono::milliseconds(10)};
  bool kernel_timestamps = false;  // SO_TIMESTAMPING receive times (real steady clock only)
  // Linux turns receive timestamping on for the whole stack when a first socket asks for it,
  // but deferred (a static key flipped by a work queue): packets arriving in the moments after
  // a connection's setsockopt may carry none. This socket asks at construction and keeps it on
  // for the transport's lifetime, so connections made during the run get timestamps at once.
  int timestamp_keeper = -1;
  // Plain TCP: the epoll set every connected socket is registered in once (edge-triggered), and
  // its descriptor in Asio's reactor. One wait on the set serves every connection: when it fires,
  // one epoll_wait collects the ready sockets and each gets one handler (posted together, so the
  // driver still runs them one at a time). Asio re-registers the set per wait (an epoll_ctl per
  // wake-up, not per read).
  int poll_fd = -1;
  std::optional<asio::posix::stream_descriptor> poll;
  bool poll_armed = false;
  std::size_t waiting = 0;  // exchanges waiting for an event of the set
  std::vector<std::pair<std::shared_ptr<PlainExchange>, std::uint32_t>> ready;  // on_poll's, reused
  TransportStats stats;
  ~Impl() {
    idle_plain.clear();  // deregistered from the set before it closes
    if (timestamp_keeper >= 0) ::close(timestamp_keeper);
  }

  // Wait for the set when someone waits on it (defined after PlainExchange).
  void arm_poll(const std::shared_ptr<Impl>& self);
  void on_poll(const std::shared_ptr<Impl>& self);

  void link(ExchangeBase* e) {
    e->prev = nullptr;
    e->next = active;
    if (active != nullptr) active->prev = e;
    active = e;
    ++active_count;
  }
  void unlink(ExchangeBase* e) {
    if (e->prev != nullptr) {
      e->prev->next = e->next;
    } else if (active == e) {
      active = e->next;
    }
    if (e->next != nullptr) e->next->prev = e->prev;
    e->prev = e->next = nullptr;
    --active_count;
    if (active == nullptr && sweeping) {
      sweeping = false;
      sweep_timer.cancel();
    }
  }
  std::vector<ExchangeBase*> snapshot() const {
    std::vector<ExchangeBase*> v;
    v.reserve(active_count);
    for (ExchangeBase* e = active; e != nullptr; e = e->next) v.push_back(e);
    return v;
  }
  void ensure_sweep(const std::shared_ptr<Impl>& self) {
    if (sweeping) return;
    sweeping = true;
    arm_sweep(self);
  }
  void arm_sweep(const std::shared_ptr<Impl>& self) {
    sweep_timer.expires_after(tick);
    sweep_timer.async_wait([self](beast::error_code ec) {
      if (ec || !self->sweeping) return;
      const TimePoint t = self->clock.now();
      // An exchange may finish (and unlink itself) inside sweep: walk a snapshot of the list.
      for (ExchangeBase* e : self->snapshot()) e->sweep(t);
      if (self->active != nullptr) {
        self->arm_sweep(self);
      } else {
        self->sweeping = false;
      }
    });
  }

  template <class Stream>
  std::vector<std::unique_ptr<Connection<Stream>>>& idle() {
    return idle_tls;
  }
};

namespace {

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
    auto& pool = transport->template idle<Stream>();
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
      transport->template idle<Stream>().clear();  // the others are probably stale too
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
        transport->template idle<Stream>().push_back(std::move(conn));
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

// The plain-TCP exchange: the client's hot path, without Beast. The request goes out as one
// buffer (head and body serialized together), the response is read with recvmsg into the
// connection's 4 KiB buffer and parsed by Http1ResponseParser in place (no copy of body bytes,
// no allocation per read). Timeouts and the observer's deadlines are checked by the transport's
// sweep, so a token costs no timer operation. With kernel receive timestamps (SO_TIMESTAMPING),
// the time of each read is when its last byte reached the socket, not when the event loop got
// to it: the client's own queueing (other streams, request starts) stays out of TTFT and ITL.
//
// The socket is the transport's once connected (PlainConn): registered once in its epoll set,
// edge-triggered, so waiting for the next bytes costs no system call; every wake-up of the set
// hands each ready socket one handler, which reads until a short read (which proves the socket
// empty: the next bytes raise a new edge) or EAGAIN, one recvmsg per read. The request is
// written with send() directly; only a request that does not fit the socket buffer waits.
//
// Same invariant as the Beast exchange: from begin() until finish(), exactly one thing is
// pending: the Asio connect, a wait in the transport's set (`waiting`), or a posted handler (a
// ready event, a continuation of the read loop, an abort's report). The sweep and cancel() never
// finish the exchange themselves: they record why and close the socket; a wait in the set, which
// no closed socket ends, is ended by posting its failure.
struct PlainExchange final : ExchangeBase, std::enable_shared_from_this<PlainExchange> {
  PlainExchange(std::shared_ptr<AsioTransport::Impl> t, const HttpRequest& r, ResponseObserver& o)
      : transport(std::move(t)), observer(o) {
    serialize(r);
  }

  enum class Phase { kConnect, kWrite, kHead, kBody };

  std::shared_ptr<AsioTransport::Impl> transport;
  ResponseObserver& observer;
  std::string wire;  // request head + body; released once written
  const char* bad_request = nullptr;
  std::unique_ptr<PlainConn> conn;
  Http1ResponseParser parser;
  Phase phase = Phase::kConnect;
  TimePoint started{};
  TimePoint phase_started{};  // of the connect (connect timeout)
  TimePoint last_activity{};  // idle timeout
  TimePoint last_rx{};        // the last receive time handed to the observer (kept monotonic)
  std::optional<TransportError> abort_error;
  std::optional<TimePoint> deadline;  // the observer's latest answer
  bool finished = false;
  bool canceled = false;
  bool retried = false;
  enum class Wait { kNone, kReadable, kWritable };
  Wait waiting = Wait::kNone;  // what this exchange waits for in the transport's set
  // The exchange itself while it waits in the set (nothing else holds it then, as an Asio
  // handler would); stop_waiting() hands it to whoever ends the wait.
  std::shared_ptr<PlainExchange> keep;
  std::size_t written = 0;     // bytes of `wire` sent

  TimePoint now() const { return transport->clock.now(); }
  bool stopping() const { return abort_error.has_value() || canceled; }

  // "POST /v1/completions HTTP/1.1", the request's fields, Content-Length, the body.
  void serialize(const HttpRequest& r) {
    std::size_t size = r.method.size() + r.target.size() + r.body.size() + 64;
    for (const auto& [k, v] : r.headers) size += k.size() + v.size() + 4;
    wire.reserve(size);
    wire.append(r.method).append(" ").append(r.target).append(" HTTP/1.1\r\n");
    auto clean = [](std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; };
    if (!clean(r.target) || r.target.find(' ') != std::string::npos) bad_request = "the request target";
    for (const auto& [k, v] : r.headers) {
      if (!clean(k) || !clean(v) || k.empty()) bad_request = "a request header field";
      wire.append(k).append(": ").append(v).append("\r\n");
    }
    fmt::format_to(std::back_inserter(wire), "Content-Length: {}\r\n\r\n", r.body.size());
    wire.append(r.body);
  }

  void begin() {
    started = now();
    last_activity = started;
    transport->link(this);
    transport->ensure_sweep(transport);
    if (bad_request != nullptr) {
      return finish(ErrorClass::kProtocol, fmt::format("cannot send the request: {} contains CR or LF", bad_request),
                    false);
    }
    acquire();
  }

  void abort(TransportError error) {
    if (stopping() || finished) return;
    abort_error = std::move(error);
    interrupt();
  }

  // Closes the socket; a wait in the transport's set ends with a posted failure (fail() reports
  // abort_error or the cancel).
  void interrupt() {
    if (conn) conn->close();
    if (waiting == Wait::kNone) return;
    asio::post(transport->ioc, [self = stop_waiting()] {
      self->fail(ErrorClass::kIncomplete, "read", asio::error::operation_aborted);
    });
  }

  // Ends the wait in the set; returns the exchange, which the caller keeps alive from here.
  std::shared_ptr<PlainExchange> stop_waiting() {
    waiting = Wait::kNone;
    // Nobody waits on the set any more: its wait is canceled, so that the event loop can run out
    // of work (ioc.run() returns once the last exchange is done).
    if (--transport->waiting == 0 && transport->poll_armed) transport->poll->cancel();
    return std::move(keep);
  }

  // Waits for the socket in the transport's set.
  void wait(Wait what) {
    waiting = what;
    keep = shared_from_this();
    ++transport->waiting;
    transport->arm_poll(transport);
  }

  // The set reported `events` for this exchange's socket while it waited (posted by on_poll).
  void on_ready(std::uint32_t events) {
    if (stopping()) return fail(ErrorClass::kIncomplete, "read", {});
    if (phase == Phase::kWrite) return send_rest();
    read(events);
  }

  // The timeouts, each tick of the transport's sweep.
  void sweep(TimePoint t) override {
    if (finished || stopping()) return;
    const TransportOptions& o = transport->options;
    if (t - started >= o.timeout) {
      return abort(TransportError{ErrorClass::kTimeout,
                                  fmt::format("request exceeded the total timeout ({} s)", seconds(o.timeout))});
    }
    if (phase == Phase::kConnect && o.connect_timeout > Nanos::zero()) {
      if (t - phase_started >= o.connect_timeout) {
        return abort(TransportError{ErrorClass::kConnectTimeout,
                                    fmt::format("connect to {} timed out after {} s (--connect-timeout)",
                                                transport->host_port, seconds(o.connect_timeout))});
      }
    } else if (t - last_activity >= o.idle_timeout) {
      const char* what = phase == Phase::kConnect ? "connect"
                         : phase == Phase::kWrite ? "write request"
                         : phase == Phase::kHead  ? "read response header"
                                                  : "read response body";
      return abort(TransportError{ErrorClass::kIdleTimeout,
                                  fmt::format("{}: no data for {} s (idle timeout)", what, seconds(o.idle_timeout))});
    }
    if (deadline && t >= *deadline) {
      TransportError e = observer.on_deadline(t);
      if (e.ok()) e = TransportError{ErrorClass::kTimeout, "deadline passed"};
      abort(std::move(e));
    }
  }

  static bool still_open(PlainConn& c) {
    char byte;
    const ssize_t n = ::recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  void acquire() {
    auto& pool = transport->idle_plain;
    while (!pool.empty()) {
      conn = std::move(pool.back());
      pool.pop_back();
      if (!still_open(*conn)) {
        conn->close();
        conn.reset();
        continue;
      }
      conn->reused = true;
      conn->owner = this;
      conn->pending = 0;  // still_open saw nothing waiting
      write();
      return;
    }
    conn = std::make_unique<PlainConn>(transport->ioc);
    ++transport->opened;
    phase = Phase::kConnect;
    phase_started = now();
    asio::async_connect(conn->sock, transport->endpoints,
                        [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                          if (ec || self->stopping()) return self->fail(ErrorClass::kConnect, "connect", ec);
                          self->connected();
                        });
  }

  // Takes the connected socket from Asio and registers it in the transport's set, once.
  void connected() {
    PlainConn& c = *conn;
    beast::error_code ec;
    c.sock.set_option(tcp::no_delay(true), ec);
    if (transport->kernel_timestamps) {
      const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
      c.rx_timestamps =
          ::setsockopt(c.sock.native_handle(), SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0;
    }
    c.fd = c.sock.release(ec);
    if (ec || c.fd < 0) return fail(ErrorClass::kConnect, "connect", ec ? ec : asio::error::bad_descriptor);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = &c;
    if (::epoll_ctl(transport->poll_fd, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
      return fail(ErrorClass::kConnect, "connect", beast::error_code(errno, boost::system::system_category()));
    }
    c.poll_fd = transport->poll_fd;
    c.owner = this;
    ++transport->stats.registrations;
    write();
  }

  void write() {
    phase = Phase::kWrite;
    parser = Http1ResponseParser{};
    const TimePoint t = now();
    last_activity = t;
    observer.on_sent(t);
    deadline = observer.deadline();
    written = 0;
    send_rest();
  }

  // Sends what is left of the request; waits for room in the socket buffer when it is full.
  void send_rest() {
    while (written < wire.size()) {
      const ssize_t n = ::send(conn->fd, wire.data() + written, wire.size() - written, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) {
          if (!conn->want_out) {  // once per connection, for requests larger than the buffer
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            ev.data.ptr = conn.get();
            if (::epoll_ctl(conn->poll_fd, EPOLL_CTL_MOD, conn->fd, &ev) != 0) {
              return fail_or_retry("write request", beast::error_code(errno, boost::system::system_category()), true);
            }
            conn->want_out = true;
          }
          conn->pending &= ~static_cast<std::uint32_t>(EPOLLOUT);
          last_activity = now();
          return wait(Wait::kWritable);
        }
        return fail_or_retry("write request", beast::error_code(err, boost::system::system_category()), true);
      }
      written += static_cast<std::size_t>(n);
    }
    phase = Phase::kHead;
    last_activity = now();
    // Bytes that came while the request was going out (an early answer) raised their edge then:
    // read them now. Otherwise the first byte of the answer raises one.
    constexpr std::uint32_t kIn = EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR;
    if ((conn->pending & kIn) != 0) return read(conn->pending);
    wait(Wait::kReadable);
  }

  // Reads until a read that does not fill the buffer: with the socket registered edge-triggered,
  // bytes that arrive after that read raise a new event, so the read that would only find the
  // socket empty (EAGAIN) is not made. Except after a hang-up or error event (`events`): a FIN
  // that came with the last bytes raises no new edge, so then reads go on to EOF or EAGAIN.
  void read(std::uint32_t events) {
    conn->pending = 0;
    const bool short_read_drains = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0;
    for (int reads = 0; reads < 16; ++reads) {
      if (stopping()) return fail(ErrorClass::kIncomplete, "read response body", {});
      TimePoint t;
      const ssize_t n = receive(t);
      ++transport->stats.reads;
      if (n < 0) {
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) {
          ++transport->stats.empty_reads;
          return wait(Wait::kReadable);
        }
        return fail_read(beast::error_code(err, boost::system::system_category()));
      }
      if (n == 0) return on_eof();
      if (!consume(static_cast<std::size_t>(n), t)) return;  // finished
      if (short_read_drains && static_cast<std::size_t>(n) < conn->buf.size()) return wait(Wait::kReadable);
    }
    // A fast sender: let other work run before reading on.
    asio::post(transport->ioc, [self = shared_from_this(), events] { self->read(events); });
  }

  // recvmsg into the connection buffer; `t` = the kernel's receive time of the data when
  // SO_TIMESTAMPING is on, else now (and never earlier than the previous read's time).
  ssize_t receive(TimePoint& t) {
    iovec iov{conn->buf.data(), conn->buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(scm_timestamping))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (conn->rx_timestamps) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
    }
    const ssize_t n = ::recvmsg(conn->fd, &msg, MSG_DONTWAIT);
    const TimePoint now_t = now();
    t = now_t;
    if (n > 0 && conn->rx_timestamps) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPING) continue;
        scm_timestamping ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        if (ts.ts[0].tv_sec == 0 && ts.ts[0].tv_nsec == 0) break;
        // CLOCK_REALTIME -> the steady clock, with an offset sampled now.
        timespec real{};
        ::clock_gettime(CLOCK_REALTIME, &real);
        const std::int64_t real_now = std::int64_t{real.tv_sec} * 1'000'000'000 + real.tv_nsec;
        const std::int64_t rx = std::int64_t{ts.ts[0].tv_sec} * 1'000'000'000 + ts.ts[0].tv_nsec;
        const Nanos age{real_now - rx};
        if (age > Nanos::zero() && age < std::chrono::seconds(10)) t = now_t - age;
        break;
      }
    }
    if (t < last_rx) t = last_rx;
    if (n > 0) {
      last_rx = t;
      last_activity = now_t;
    }
    return n;
  }

  // Parses n bytes read at t and tells the observer. False once the exchange is finished.
  bool consume(std::size_t n, TimePoint t) {
    const bool head = phase == Phase::kHead;
    const Http1ResponseParser::Result r = parser.feed(conn->buf.data(), n);
    if (r.error != nullptr) {
      finish(ErrorClass::kProtocol, fmt::format("{}: {}", head && !r.headers ? "read response header" : "read response body", r.error), false);
      return false;
    }
    if (r.headers) {
      phase = Phase::kBody;
      if (!parser.retry_after().empty()) observer.on_header_field("Retry-After", parser.retry_after());
      if (!parser.location().empty()) observer.on_header_field("Location", parser.location());
      if (!parser.content_encoding().empty()) observer.on_header_field("Content-Encoding", parser.content_encoding());
      if (observer.wants_raw_head()) observer.on_raw_head(parser.head());
      observer.on_headers(t, parser.status(), parser.content_type());
    }
    if (!r.body.empty()) {
      if (!observer.on_body(t, r.body)) {
        canceled = true;
        finish(ErrorClass::kCanceled, "aborted by the client", false);
        return false;
      }
      deadline = observer.deadline();
    }
    if (r.done) {
      // Bytes past the end of the response are not HTTP we expect: the connection is not reused.
      finish(ErrorClass::kNone, {}, parser.keep_alive() && r.consumed == n);
      return false;
    }
    return true;
  }

  void on_eof() {
    const bool nothing = parser.nothing_received();
    const bool head = parser.in_head();
    const Http1ResponseParser::Result r = parser.eof();
    if (r.done) return finish(ErrorClass::kNone, {}, false);
    if (nothing && conn->reused && !retried && !stopping()) return retry();
    finish(ErrorClass::kIncomplete,
           fmt::format("{}: {}", head ? "read response header" : "read response body", r.error), false);
  }

  void fail_read(beast::error_code ec) {
    if (stopping() || ec == asio::error::operation_aborted) return fail(ErrorClass::kIncomplete, "read", ec);
    fail(ErrorClass::kIncomplete, parser.in_head() ? "read response header" : "read response body", ec);
  }

  // As in the Beast exchange: a reused connection that fails on the write, or is closed cleanly
  // before any byte of response (on_eof), was closed by the server while idle: retried once on a
  // fresh connection.
  void fail_or_retry(const char* what, beast::error_code ec, bool during_write) {
    const bool write_failed =
        during_write && (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    if (write_failed && conn && conn->reused && !retried && !stopping()) return retry();
    fail(ErrorClass::kIncomplete, what, ec);
  }

  void retry() {
    retried = true;
    conn->close();
    conn.reset();
    transport->idle_plain.clear();  // the others are probably stale too
    acquire();
  }

  void fail(ErrorClass cls, const char* what, beast::error_code ec) {
    if (abort_error) {
      TransportError e = std::move(*abort_error);
      return finish(e.cls, std::move(e.message), false);
    }
    if (out_of_descriptors(ec) || (phase == Phase::kConnect && !canceled && ec == asio::error::operation_aborted &&
                                   no_descriptor_left())) {
      return finish(ErrorClass::kConnect, descriptors_message(what, asio::error::no_descriptors), false);
    }
    if (canceled || ec == asio::error::operation_aborted) return finish(ErrorClass::kCanceled, "canceled", false);
    const std::string target = cls == ErrorClass::kConnect ? " " + transport->url.host_header() : "";
    finish(cls, fmt::format("{}{}: {}", what, target, ec.message()), false);
  }

  void finish(ErrorClass cls, std::string message, bool keep_alive) {
    if (finished) return;
    finished = true;
    transport->unlink(this);
    if (conn) {
      conn->owner = nullptr;
      if (keep_alive && cls == ErrorClass::kNone) {
        conn->reused = false;
        transport->idle_plain.push_back(std::move(conn));
      } else {
        if (conn->fd >= 0) ::shutdown(conn->fd, SHUT_RDWR);
        conn->close();
        conn.reset();
      }
    }
    std::string().swap(wire);
    observer.on_complete(now(), TransportError{cls, std::move(message)});
  }

  void cancel() override {
    if (finished) return;
    canceled = true;
    interrupt();
  }
};

}  // namespace

void AsioTransport::Impl::arm_poll(const std::shared_ptr<Impl>& self) {
  if (poll_armed || waiting == 0) return;
  poll_armed = true;
  ++stats.poll_waits;
  poll->async_wait(asio::posix::stream_descriptor::wait_read, [self](beast::error_code ec) {
    self->poll_armed = false;
    if (!ec) return self->on_poll(self);
    // Canceled when nobody waited: someone may wait again by now (their arm_poll saw this wait
    // still armed).
    if (ec == asio::error::operation_aborted) self->arm_poll(self);
  });
}

namespace {
thread_local std::function<bool()> dispatch_yield;
}  // namespace

void set_dispatch_yield(std::function<bool()> yield) { dispatch_yield = std::move(yield); }

// The set is readable: collect every ready socket at once and read them one after another in
// this handler (no handler per socket: each would cost the event loop a reactor poll, an
// epoll_wait, per turn). When the driver has something due between two of them
// (set_dispatch_yield: a scheduled send), the rest are posted as handlers of their own, so the
// send goes out between two of them. Events for a socket whose exchange waits for something
// else, or for a pooled connection, are kept on the connection.
void AsioTransport::Impl::on_poll(const std::shared_ptr<Impl>& self) {
  std::array<epoll_event, 256> events;
  int n;
  do {
    n = ::epoll_wait(poll_fd, events.data(), static_cast<int>(events.size()), 0);
  } while (n < 0 && errno == EINTR);
  ++stats.wakeups;
  // First every event to its exchange (or connection), then the reads: a read can end exchanges
  // and free pooled connections (a retry), which later events of this batch may name.
  ready.clear();
  for (int i = 0; i < n; ++i) {
    auto* c = static_cast<PlainConn*>(events[i].data.ptr);
    const std::uint32_t ev = events[i].events;
    PlainExchange* x = c->owner;
    const bool match = x != nullptr && ((x->waiting == PlainExchange::Wait::kReadable &&
                                         (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) ||
                                        (x->waiting == PlainExchange::Wait::kWritable &&
                                         (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0));
    if (!match) {
      c->pending |= ev;
      continue;
    }
    ready.emplace_back(x->stop_waiting(), ev);
  }
  bool yielded = false;
  for (auto& [x, ev] : ready) {
    if (!yielded && dispatch_yield && dispatch_yield()) yielded = true;
    if (yielded) {
      asio::post(ioc, [x = std::move(x), ev = ev] { x->on_ready(ev); });
    } else {
      x->on_ready(ev);
    }
  }
  ready.clear();
  arm_poll(self);
}

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
  if (t.url.scheme == "https") setup_tls(t);
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
    std::make_shared<PlainExchange>(impl_, request, observer)->begin();
  }
}

void AsioTransport::cancel_all() {
  for (ExchangeBase* a : impl_->snapshot()) a->cancel();
}

std::size_t AsioTransport::connections_opened() const { return impl_->opened; }

TransportStats AsioTransport::stats() const { return impl_->stats; }

}  // namespace llmload::net
