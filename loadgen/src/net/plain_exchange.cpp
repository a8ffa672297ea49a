#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "transport_impl.hpp"

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
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "llmload/loadgen/net/http1_parser.hpp"

namespace llmload::net {

using analysis::ErrorClass;

namespace transport_detail {

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

  // Whether a pooled connection may carry the next request: a MSG_PEEK read finds nothing
  // waiting (no bytes after the last response, no FIN). Made before every reuse. Skipping it for
  // a connection reused at once was tried and withdrawn (docs/benchmarks.md, fifth part): a FIN
  // that came with the last response's bytes, or bytes sent on the idle connection, would then be
  // met only by the request sent on it (a retry, or a wrong answer).
  bool still_open(PlainConn& c) const {
    ++transport->stats.idle_checks;
    char byte;
    const ssize_t n = ::recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool open = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    if (!open) ++transport->stats.stale;
    return open;
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
                        [self = shared_from_this()](boost::system::error_code ec, const tcp::endpoint&) {
                          if (ec || self->stopping()) return self->fail(ErrorClass::kConnect, "connect", ec);
                          self->connected();
                        });
  }

  // Takes the connected socket from Asio and registers it in the transport's set, once.
  void connected() {
    PlainConn& c = *conn;
    boost::system::error_code ec;
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
      return fail(ErrorClass::kConnect, "connect", boost::system::error_code(errno, boost::system::system_category()));
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
              return fail_or_retry("write request", boost::system::error_code(errno, boost::system::system_category()), true);
            }
            conn->want_out = true;
          }
          conn->pending &= ~static_cast<std::uint32_t>(EPOLLOUT);
          last_activity = now();
          return wait(Wait::kWritable);
        }
        return fail_or_retry("write request", boost::system::error_code(err, boost::system::system_category()), true);
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
        return fail_read(boost::system::error_code(err, boost::system::system_category()));
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

  void fail_read(boost::system::error_code ec) {
    if (stopping() || ec == asio::error::operation_aborted) return fail(ErrorClass::kIncomplete, "read", ec);
    fail(ErrorClass::kIncomplete, parser.in_head() ? "read response header" : "read response body", ec);
  }

  // As in the Beast exchange: a reused connection that fails on the write, or is closed cleanly
  // before any byte of response (on_eof), was closed by the server while idle: retried once on a
  // fresh connection.
  void fail_or_retry(const char* what, boost::system::error_code ec, bool during_write) {
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

  void fail(ErrorClass cls, const char* what, boost::system::error_code ec) {
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
    const TimePoint t = now();
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
    observer.on_complete(t, TransportError{cls, std::move(message)});
  }

  void cancel() override {
    if (finished) return;
    canceled = true;
    interrupt();
  }
};

void start_plain_exchange(const std::shared_ptr<AsioTransport::Impl>& transport, const HttpRequest& request,
                          ResponseObserver& observer) {
  std::make_shared<PlainExchange>(transport, request, observer)->begin();
}

}  // namespace transport_detail

using transport_detail::PlainConn;
using transport_detail::PlainExchange;

void AsioTransport::Impl::arm_poll(const std::shared_ptr<Impl>& self) {
  if (poll_armed || waiting == 0) return;
  poll_armed = true;
  ++stats.poll_waits;
  poll->async_wait(asio::posix::stream_descriptor::wait_read, [self](boost::system::error_code ec) {
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

}  // namespace llmload::net
