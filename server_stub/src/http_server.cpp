// The only translation unit of llmload-server that includes Boost.Asio / Boost.Beast.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include "llmload/server/http_server.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <thread>
#include <variant>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "llmload/server/response_encoder.hpp"
#include "llmload/server/router.hpp"

namespace llmload::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr const char* kServerName = "llmload-server";

/// Beast 1.74 uses boost::string_view.
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_http_error(const error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_method).category();
}

// GCC 12 coroutines: temporaries passed by value to a coroutine inside a co_await expression can
// be destroyed twice (double free). Coroutines here therefore take parameters by reference and are
// called with named objects that outlive the co_await.

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

}  // namespace

class HttpServer::Impl {
 public:
  Impl(ServerConfig config, std::unique_ptr<LatencyModel> model)
      : config_(std::move(config)),
        model_(std::move(model)),
        router_(config_, unix_now()),
        ioc_(config_.io_threads),
        acceptor_(ioc_) {}

  std::uint16_t listen(bool handle_signals);
  std::string url() const;
  void run();
  void stop() { ioc_.stop(); }

 private:
  net::awaitable<void> accept_loop();
  net::awaitable<void> session(tcp::socket socket);
  /// Each returns whether the connection may serve another request.
  net::awaitable<bool> write_reply(beast::tcp_stream& stream, const HttpReply& reply, unsigned version, bool keep_alive);
  net::awaitable<bool> stream_job(beast::tcp_stream& stream, const GenerationJob& job, std::uint64_t sequence,
                                  unsigned version, bool keep_alive, Clock::time_point t0);
  net::awaitable<bool> complete_job(beast::tcp_stream& stream, const GenerationJob& job, std::uint64_t sequence,
                                    unsigned version, bool keep_alive, Clock::time_point t0);
  /// Answers a request that could not be read (413, 431, 400) and closes the connection.
  net::awaitable<void> reject(beast::tcp_stream& stream, const ApiError& error);

  std::unique_ptr<TokenTimeline> timeline(const GenerationJob& job, std::uint64_t sequence) const {
    return model_->start(GenerationShape{job.request.prompt_tokens, job.request.max_tokens},
                         Rng::for_stream(config_.latency.seed, sequence));
  }

  // Declared before ioc_: coroutine frames, destroyed with ioc_, point at these.
  ServerConfig config_;
  std::unique_ptr<LatencyModel> model_;
  Router router_;
  std::atomic<std::uint64_t> sequence_{0};
  std::atomic<std::int64_t> connections_{0};  ///< open connections, for debug logs
  net::io_context ioc_;
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
  net::co_spawn(ioc_, accept_loop(), log_escaped);
  std::vector<std::thread> threads;
  for (int i = 1; i < config_.io_threads; ++i) threads.emplace_back([this] { ioc_.run(); });
  ioc_.run();
  for (auto& t : threads) t.join();
}

net::awaitable<void> HttpServer::Impl::accept_loop() {
  for (;;) {
    error_code ec;
    // One strand per connection when several threads run the io_context: a connection's
    // coroutine and timers then never run concurrently with themselves.
    net::any_io_executor ex = config_.io_threads > 1 ? net::any_io_executor(net::make_strand(ioc_))
                                                     : net::any_io_executor(ioc_.get_executor());
    tcp::socket socket = co_await acceptor_.async_accept(ex, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
      spdlog::warn("accept failed: {}", ec.message());
      // E.g. out of file descriptors: back off instead of spinning.
      net::steady_timer backoff(co_await net::this_coro::executor, std::chrono::milliseconds(20));
      co_await backoff.async_wait(net::redirect_error(net::use_awaitable, ec));
      continue;
    }
    auto socket_ex = socket.get_executor();
    net::co_spawn(socket_ex, session(std::move(socket)), log_escaped);
  }
}

net::awaitable<void> HttpServer::Impl::session(tcp::socket socket) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // tokens are small writes: never hold them back
  const std::int64_t open = connections_.fetch_add(1, std::memory_order_relaxed) + 1;
  spdlog::debug("connection opened ({} open)", open);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;  // persists between requests: may hold the start of a pipelined one
  try {
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(config_.header_limit));
      parser.body_limit(static_cast<std::uint64_t>(config_.body_limit));
      stream.expires_after(config_.idle_timeout);
      co_await http::async_read_header(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      if (!ec && !parser.is_done()) {
        const auto& head = parser.get();
        if (head.version() >= 11 && beast::iequals(head[http::field::expect], "100-continue")) {
          static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
          co_await net::async_write(stream, net::buffer(kContinue.data(), kContinue.size()),
                                    net::redirect_error(net::use_awaitable, ec));
        }
        if (!ec) co_await http::async_read(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      }
      if (ec) {
        std::optional<ApiError> answer;
        if (ec == http::error::body_limit) {
          answer = ApiError{413, fmt::format("Request body too large: the limit is {} bytes", config_.body_limit),
                            std::nullopt};
        } else if (ec == http::error::header_limit) {
          answer = ApiError{431, fmt::format("Request header too large: the limit is {} bytes", config_.header_limit),
                            std::nullopt};
        } else if (is_http_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
          answer = ApiError{400, fmt::format("Malformed HTTP request: {}", ec.message()), std::nullopt};
        }
        if (answer) co_await reject(stream, *answer);
        break;  // end of stream, timeout, reset: nothing to answer
      }
      const Clock::time_point t0 = Clock::now();  // the request is complete: its clock starts
      stream.expires_never();
      auto& req = parser.get();
      const std::uint64_t sequence = sequence_.fetch_add(1, std::memory_order_relaxed);
      RouteResult routed = router_.route(sv(req.method_string()), sv(req.target()), req.body(),
                                         RequestContext{sequence, unix_now()});
      bool keep_alive = req.keep_alive();
      if (auto* reply = std::get_if<HttpReply>(&routed)) {
        spdlog::debug("{} {} -> {}", sv(req.method_string()), sv(req.target()),
                      reply->status);
        keep_alive = co_await write_reply(stream, *reply, req.version(), keep_alive);
      } else {
        const auto& job = std::get<GenerationJob>(routed);
        spdlog::debug("{} {} -> {} stream={} prompt_tokens={} max_tokens={}", sv(req.method_string()),
                      sv(req.target()), job.id, job.request.stream, job.request.prompt_tokens,
                      job.request.max_tokens);
        if (job.request.stream) {
          keep_alive = co_await stream_job(stream, job, sequence, req.version(), keep_alive, t0);
        } else {
          keep_alive = co_await complete_job(stream, job, sequence, req.version(), keep_alive, t0);
        }
      }
      if (!keep_alive) break;
    }
  } catch (const std::exception& e) {
    spdlog::error("connection failed: {}", e.what());
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.socket().close(ec);
  const std::int64_t left = connections_.fetch_sub(1, std::memory_order_relaxed) - 1;
  spdlog::debug("connection closed ({} open)", left);
}

net::awaitable<bool> HttpServer::Impl::write_reply(beast::tcp_stream& stream, const HttpReply& reply,
                                                   unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, kServerName);
  if (!reply.content_type.empty()) res.set(http::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = reply.body;
  res.prepare_payload();
  error_code ec;
  co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
  co_return !ec && keep_alive;
}

net::awaitable<bool> HttpServer::Impl::stream_job(beast::tcp_stream& stream, const GenerationJob& job,
                                                  std::uint64_t sequence, unsigned version, bool keep_alive,
                                                  Clock::time_point t0) {
  // HTTP/1.0 has no chunked encoding: send the events bare and end the body by closing.
  const bool chunked = version >= 11;
  http::response<http::empty_body> res{http::status::ok, version};
  res.set(http::field::server, kServerName);
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  if (chunked) {
    res.chunked(true);
  } else {
    keep_alive = false;
  }
  res.keep_alive(keep_alive);
  error_code ec;
  http::response_serializer<http::empty_body> serializer{res};
  // Headers go out at once, as vLLM's do; the first event waits for its due time.
  co_await http::async_write_header(stream, serializer, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return false;

  const ResponseEncoder encoder(job);
  const auto tl = timeline(job, sequence);
  const Framing framing = chunked ? Framing::kChunked : Framing::kNone;
  const std::int64_t n = job.request.max_tokens;
  net::steady_timer timer(stream.get_executor());
  std::string out;  // reused for every write
  for (std::int64_t k = 0; k < n; ++k) {
    // Absolute due times from t0: a late wake-up does not delay the tokens after it.
    timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(tl->next_due()));
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;
    out.clear();
    encoder.append_token_events(k, out, framing);
    if (k + 1 == n && chunked) out += kLastChunk;
    // Straight to the socket: the tcp_stream's timeout machinery is idle during generation.
    co_await net::async_write(stream.socket(), net::buffer(out), net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      spdlog::debug("{}: client gone after {}/{} tokens: {}", job.id, k, n, ec.message());
      co_return false;
    }
  }
  spdlog::debug("{}: stream complete ({} tokens)", job.id, n);
  co_return keep_alive && chunked;
}

net::awaitable<bool> HttpServer::Impl::complete_job(beast::tcp_stream& stream, const GenerationJob& job,
                                                    std::uint64_t sequence, unsigned version, bool keep_alive,
                                                    Clock::time_point t0) {
  const auto tl = timeline(job, sequence);
  std::chrono::nanoseconds last{0};
  for (std::int64_t k = 0; k < job.request.max_tokens; ++k) last = tl->next_due();
  net::steady_timer timer(stream.get_executor());
  timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(last));
  error_code ec;
  co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return false;
  const ResponseEncoder encoder(job);
  const HttpReply reply{200, "application/json", encoder.full_body(), {}};
  const bool keep = co_await write_reply(stream, reply, version, keep_alive);
  co_return keep;
}

net::awaitable<void> HttpServer::Impl::reject(beast::tcp_stream& stream, const ApiError& error) {
  spdlog::debug("rejecting request: {} {}", error.status, error.message);
  stream.expires_after(std::chrono::seconds(2));
  const HttpReply reply = error_reply(error);
  (void)co_await write_reply(stream, reply, 11, false);
  // Drain what the client is still sending (e.g. the rest of an oversized body) before closing:
  // closing with unread input makes the kernel send RST, which can destroy the reply in flight.
  error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  std::array<char, 16384> sink;
  std::size_t drained = 0;
  while (!ec && drained < std::size_t{64} * 1024 * 1024) {
    drained += co_await stream.async_read_some(net::buffer(sink), net::redirect_error(net::use_awaitable, ec));
  }
}

HttpServer::HttpServer(ServerConfig config, std::unique_ptr<LatencyModel> model)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(model))) {}
HttpServer::~HttpServer() = default;
std::uint16_t HttpServer::listen(bool handle_signals) { return impl_->listen(handle_signals); }
std::string HttpServer::url() const { return impl_->url(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stop() { impl_->stop(); }

}  // namespace llmload::server
