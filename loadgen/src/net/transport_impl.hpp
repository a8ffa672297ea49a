#pragma once
// The parts of AsioTransport shared by its two exchanges (private to loadgen/src/net): the
// transport's state (AsioTransport::Impl), the list entry every exchange is (ExchangeBase), the
// plain-TCP connection and the descriptor-limit messages. The TLS exchange, on Beast, is in
// asio_transport.cpp; the plain-TCP exchange and its epoll set in plain_exchange.cpp.

#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <sys/epoll.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "llmload/loadgen/net/asio_transport.hpp"

namespace llmload::net {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

namespace transport_detail {

// The client out of file descriptors (EMFILE, ENFILE): its own limit, not the server's failure
// (issue 16: it showed as "canceled"). The message names the fix.
bool out_of_descriptors(const boost::system::error_code& ec);
// Asio's range connect reports a socket it could not open (EMFILE) as operation_aborted: a
// connect "aborted" that nobody canceled is told apart by trying to open a socket now.
bool no_descriptor_left();
std::string descriptors_message(const char* what, const boost::system::error_code& ec);

inline double seconds(Nanos d) { return std::chrono::duration<double>(d).count(); }

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


struct PlainExchange;  // plain_exchange.cpp
struct TlsPool;        // asio_transport.cpp

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
    boost::system::error_code ignored;
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

/// Starts a request on plain TCP (plain_exchange.cpp).
void start_plain_exchange(const std::shared_ptr<AsioTransport::Impl>& transport, const HttpRequest& request,
                          ResponseObserver& observer);

}  // namespace transport_detail

struct AsioTransport::Impl {
  // Both out of line, in asio_transport.cpp, where the TLS pool's type is whole.
  Impl(asio::io_context& c, const Clock& cl, BaseUrl u, TransportOptions o);

  asio::io_context& ioc;
  const Clock& clock;
  BaseUrl url;
  TransportOptions options;
  std::string host_port;  // "HOST:PORT" for messages
  tcp::resolver::results_type endpoints;
  std::optional<ssl::context> tls;  // https only; declared before the pools that use it
  bool host_is_ip = false;
  std::unique_ptr<transport_detail::TlsPool> tls_pool;  // https: idle TLS connections (asio_transport.cpp)
  std::vector<std::unique_ptr<transport_detail::PlainConn>> idle_plain;
  transport_detail::ExchangeBase* active = nullptr;  // intrusive list of the exchanges in flight
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
  // one epoll_wait collects the ready sockets and one handler reads them (plain_exchange.cpp,
  // on_poll). Asio re-registers the set per wait (an epoll_ctl per wake-up, not per read).
  int poll_fd = -1;
  std::optional<asio::posix::stream_descriptor> poll;
  bool poll_armed = false;
  std::size_t waiting = 0;  // exchanges waiting for an event of the set
  std::vector<std::pair<std::shared_ptr<transport_detail::PlainExchange>, std::uint32_t>> ready;  // on_poll's, reused
  TransportStats stats;
  ~Impl();

  // Wait for the set when someone waits on it (plain_exchange.cpp).
  void arm_poll(const std::shared_ptr<Impl>& self);
  void on_poll(const std::shared_ptr<Impl>& self);

  void link(transport_detail::ExchangeBase* e) {
    e->prev = nullptr;
    e->next = active;
    if (active != nullptr) active->prev = e;
    active = e;
    ++active_count;
  }
  void unlink(transport_detail::ExchangeBase* e) {
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
  std::vector<transport_detail::ExchangeBase*> snapshot() const {
    std::vector<transport_detail::ExchangeBase*> v;
    v.reserve(active_count);
    for (transport_detail::ExchangeBase* e = active; e != nullptr; e = e->next) v.push_back(e);
    return v;
  }
  void ensure_sweep(const std::shared_ptr<Impl>& self) {
    if (sweeping) return;
    sweeping = true;
    arm_sweep(self);
  }
  void arm_sweep(const std::shared_ptr<Impl>& self) {
    sweep_timer.expires_after(tick);
    sweep_timer.async_wait([self](boost::system::error_code ec) {
      if (ec || !self->sweeping) return;
      const TimePoint t = self->clock.now();
      // An exchange may finish (and unlink itself) inside sweep: walk a snapshot of the list.
      for (transport_detail::ExchangeBase* e : self->snapshot()) e->sweep(t);
      if (self->active != nullptr) {
        self->arm_sweep(self);
      } else {
        self->sweeping = false;
      }
    });
  }
};

}  // namespace llmload::net
