// llmload-server's listener: binding (the loopback rule), the io threads, the accept loop and
// the limit on open connections. Each accepted connection is served by serve_connection
// (connection.cpp). Only these two files include Asio / Beast.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include "llmload/server/http_server.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "connection.hpp"
#include "llmload/server/listen_policy.hpp"
#include "llmload/common/process_limits.hpp"

namespace llmload::server {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

/// Descriptors kept free for the process itself (stdio, epoll, eventfd, timerfd, the acceptor, the
/// signal pipe, a connection being refused).
constexpr std::int64_t kReservedDescriptors = 32;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Logs an exception that escaped a coroutine (there should be none: they catch their own).
void log_escaped(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("internal error in a connection: {}", ex.what());
  } catch (...) {
    spdlog::error("internal error in a connection: unknown exception");
  }
}

/// Answers a connection over the limit with `reply` and closes it, without blocking and without
/// allocating: the socket is non-blocking, and a reply this small fits a fresh socket's send
/// buffer. What the client already sent is read first, so that the close sends FIN rather than
/// RST (which could destroy the reply before the client reads it).
void refuse_connection(tcp::socket& socket, const std::string& reply) {
  error_code ec;
  socket.non_blocking(true, ec);
  if (!ec) socket.write_some(net::buffer(reply), ec);
  socket.shutdown(tcp::socket::shutdown_send, ec);
  std::array<char, 4096> sink;
  ec = {};
  for (int i = 0; i < 4 && !ec; ++i) socket.read_some(net::buffer(sink), ec);
  socket.close(ec);
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(ServerConfig config, std::unique_ptr<LatencyModel> model)
      : shared_(std::move(config), std::move(model), unix_now()),
        config_(shared_.config),
        max_connections_(config_.max_connections),
        ioc_(1),
        acceptor_(ioc_) {
    if (config_.io_threads > 1) {
      for (int i = 0; i < config_.io_threads; ++i) pool_.push_back(std::make_unique<net::io_context>(1));
    }
  }

  ~Impl() {
    // The engine thread posts to the io_context: it must be gone before ioc_ is destroyed.
    if (shared_.engine.runtime) shared_.engine.runtime->stop();
  }

  std::uint16_t listen(bool handle_signals);
  std::string url() const;
  std::string engine_description() const { return shared_.engine.runtime ? shared_.engine.description : ""; }
  void run();
  void stop() {
    ioc_.stop();
    for (auto& c : pool_) c->stop();
  }

 private:
  net::awaitable<void> accept_loop();
  void note_refused();

  // Declared before ioc_: coroutine frames, destroyed with ioc_, point at these.
  SharedState shared_;
  const ServerConfig& config_;
  std::int64_t max_connections_;  ///< config_.max_connections, lowered to fit RLIMIT_NOFILE by listen()
  std::string refusal_reply_;     ///< the 503 sent to connections over the limit
  // Used by the accept loop only (one coroutine, so never concurrently).
  std::optional<Clock::time_point> last_refusal_warning_;
  std::int64_t refused_since_warning_ = 0;

  /// With io_threads > 1: one io_context per io thread, serving the connections dealt to it.
  /// Declared before ioc_, so destroyed after it: an accept still pending when ioc_ shuts down
  /// holds a socket of one of these.
  std::vector<std::unique_ptr<net::io_context>> pool_;
  std::size_t next_context_ = 0;  ///< the pool's context the next connection goes to
  net::io_context ioc_;  ///< the accept loop and signals (and, with one io thread, the connections)
  tcp::acceptor acceptor_;
  std::optional<net::signal_set> signals_;
  tcp::endpoint bound_;
};

std::uint16_t HttpServer::Impl::listen(bool handle_signals) {
  const std::string where = fmt::format("{}:{}", config_.host, config_.port);
  error_code ec;
  tcp::resolver resolver(ioc_);
  auto results = resolver.resolve(config_.host, std::to_string(config_.port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    throw std::runtime_error(fmt::format("cannot resolve --host {}: {}", config_.host, ec.message()));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  // Before anything is bound: the mock has no authentication.
  if (const auto refusal = remote_listen_refusal(config_.host, endpoint.address().to_string(), config_.allow_remote)) {
    throw std::runtime_error(*refusal);
  }
  if (const auto nofile = open_file_limit()) {
    const auto usable = static_cast<std::int64_t>(*nofile) - kReservedDescriptors;
    if (max_connections_ > usable) {
      max_connections_ = std::max<std::int64_t>(1, usable);
      spdlog::warn("--max-connections {} lowered to {}: the open-file limit (ulimit -n) is {}",
                   config_.max_connections, max_connections_, *nofile);
    }
  }
  refusal_reply_ = error_response_bytes(ApiError{
      503,
      fmt::format("Too many open connections: the limit is {} (--max-connections). Retry later.", max_connections_),
      std::nullopt});
  auto check = [&](const char* what) {
    if (ec) throw std::runtime_error(fmt::format("cannot listen on {} ({}): {}", where, what, ec.message()));
  };
  acceptor_.open(endpoint.protocol(), ec);
  check("open");
  acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  check("SO_REUSEADDR");
  acceptor_.bind(endpoint, ec);
  check("bind");
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  check("listen");
  bound_ = acceptor_.local_endpoint(ec);
  check("local_endpoint");
  if (handle_signals) {
    signals_.emplace(ioc_, SIGINT, SIGTERM);
    signals_->async_wait([this](const error_code& wait_ec, int sig) {
      if (wait_ec) return;
      spdlog::info("received {}, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
      stop();
    });
  }
  return bound_.port();
}

std::string HttpServer::Impl::url() const {
  const auto addr = bound_.address();
  return addr.is_v6() ? fmt::format("http://[{}]:{}", addr.to_string(), bound_.port())
                      : fmt::format("http://{}:{}", addr.to_string(), bound_.port());
}

void HttpServer::Impl::run() {
  if (shared_.engine.runtime) shared_.engine.runtime->start();
  net::co_spawn(ioc_, accept_loop(), log_escaped);
  std::vector<net::executor_work_guard<net::io_context::executor_type>> busy;
  std::vector<std::thread> threads;
  for (auto& c : pool_) {
    busy.push_back(net::make_work_guard(*c));  // idle between connections, not done
    threads.emplace_back([&c] { c->run(); });
  }
  ioc_.run();
  busy.clear();
  for (auto& c : pool_) c->stop();
  for (auto& t : threads) t.join();
  if (shared_.engine.runtime) shared_.engine.runtime->stop();
}

net::awaitable<void> HttpServer::Impl::accept_loop() {
  for (;;) {
    error_code ec;
    // The connection's own io_context: the pool's next one in turn (a connection and its timers
    // then run on one thread only), else the accept loop's.
    net::io_context& ctx = pool_.empty() ? ioc_ : *pool_[next_context_++ % pool_.size()];
    tcp::socket socket = co_await acceptor_.async_accept(ctx, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
      spdlog::warn("accept failed: {}", ec.message());
      // E.g. out of file descriptors: back off instead of spinning.
      net::steady_timer backoff(co_await net::this_coro::executor, std::chrono::milliseconds(20));
      co_await backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
      continue;
    }
    // Only this loop increments the count, so the check cannot race with another increment.
    if (shared_.open_connections.load(std::memory_order_relaxed) >= max_connections_) {
      refuse_connection(socket, refusal_reply_);
      note_refused();
      continue;
    }
    shared_.open_connections.fetch_add(1, std::memory_order_relaxed);
    auto socket_ex = socket.get_executor();
    net::co_spawn(socket_ex, serve_connection(std::move(socket), shared_), log_escaped);
  }
}

void HttpServer::Impl::note_refused() {
  ++refused_since_warning_;
  const auto now = Clock::now();
  if (last_refusal_warning_ && now - *last_refusal_warning_ < std::chrono::seconds(1)) return;
  spdlog::warn("refused {} connection(s) with 503: {} open, the limit is {} (--max-connections)",
               refused_since_warning_, shared_.open_connections.load(std::memory_order_relaxed), max_connections_);
  last_refusal_warning_ = now;
  refused_since_warning_ = 0;
}

HttpServer::HttpServer(ServerConfig config, std::unique_ptr<LatencyModel> model)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(model))) {}
HttpServer::~HttpServer() = default;
std::uint16_t HttpServer::listen(bool handle_signals) { return impl_->listen(handle_signals); }
std::string HttpServer::url() const { return impl_->url(); }
std::string HttpServer::engine_description() const { return impl_->engine_description(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stop() { impl_->stop(); }

}  // namespace llmload::server
