// One llmload-server connection: reading requests under deadlines, replies, token streams.
// The listener (accept loop, limits on connections) is in http_server.cpp.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include "connection.hpp"

#include <array>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <variant>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "llmload/common/duration.hpp"
#include "llmload/server/response_encoder.hpp"

namespace llmload::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;
using RequestParser = http::request_parser<http::string_body>;

constexpr const char* kServerName = "llmload-server";
/// How long a rejected request's connection stays open to deliver the error and drain input.
constexpr std::chrono::seconds kRejectLinger{2};
/// At most this much of a rejected request is read (and discarded) before closing.
constexpr std::size_t kRejectDrainLimit = std::size_t{64} * 1024 * 1024;
/// Unparsed input a connection may buffer beyond the head limit (pipelined bytes, chunk headers).
constexpr std::size_t kBufferSlack = std::size_t{16} * 1024;
/// The largest single socket read.
constexpr std::size_t kReadChunk = std::size_t{64} * 1024;

// GCC 12 coroutines: temporaries passed by value to a coroutine inside a co_await expression can
// be destroyed twice (double free). Coroutines here therefore take class-type parameters by
// reference, are called with named objects that outlive the co_await, and never use
// `cond ? co_await a : co_await b`.

/// Beast 1.74 uses boost::string_view.
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_http_error(const error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_method).category();
}

/// A deadline for a connection's socket operations. When it passes, the socket's pending
/// operations are cancelled (they complete with operation_aborted) and expired() turns true.
/// Unlike beast::tcp_stream's timeout it leaves the socket open, so a 408 can still be sent.
/// An operation started after expiry would not be cancelled: callers check expired() before
/// each socket operation (Connection::read, Connection::send).
/// Threading: everything, the timer's handler included, runs on the connection's executor.
class Deadline {
 public:
  explicit Deadline(tcp::socket& socket)
      : state_(std::make_shared<State>(State{&socket, 0, false})), timer_(socket.get_executor()) {}

  void arm(std::chrono::nanoseconds after) {
    ++state_->generation;
    state_->expired = false;
    timer_.expires_after(std::chrono::duration_cast<Clock::duration>(after));
    // The handler may run after this Deadline is gone (the timer's destructor cannot take back
    // a handler already queued), hence the weak_ptr; a stale handler is told by its generation.
    timer_.async_wait([weak = std::weak_ptr<State>(state_), generation = state_->generation](const error_code& ec) {
      if (ec) return;
      const auto state = weak.lock();
      if (!state || state->generation != generation) return;
      state->expired = true;
      error_code ignored;
      state->socket->cancel(ignored);
    });
  }

  void disarm() {
    ++state_->generation;
    state_->expired = false;
    timer_.cancel();
  }

  bool expired() const { return state_->expired; }

 private:
  struct State {
    tcp::socket* socket;
    std::uint64_t generation;
    bool expired;
  };
  std::shared_ptr<State> state_;
  net::steady_timer timer_;
};

/// The whole response (head and body) as bytes.
std::string serialize(const HttpReply& reply, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, kServerName);
  if (!reply.content_type.empty()) res.set(http::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = reply.body;
  res.prepare_payload();
  std::ostringstream out;
  out << res;
  return std::move(out).str();
}

enum class Phase { kHead, kBody };

/// The error to answer a request that could not be read with, if any. `got_bytes`: some of the
/// request arrived (a connection that sent nothing and timed out is closed without an answer: a
/// 408 it did not ask for would be read as the answer to its next request).
std::optional<ApiError> read_failure_answer(const error_code& ec, bool got_bytes, Phase phase,
                                            const ServerConfig& config) {
  if (ec == beast::error::timeout) {
    if (!got_bytes) return std::nullopt;
    return phase == Phase::kHead
               ? ApiError{408,
                          fmt::format("Request timed out: the request head did not arrive within {} (--header-timeout)",
                                      format_duration(config.header_timeout)),
                          std::nullopt}
               : ApiError{408,
                          fmt::format("Request timed out: the request body did not arrive within {} (--body-timeout)",
                                      format_duration(config.body_timeout)),
                          std::nullopt};
  }
  if (ec == http::error::body_limit) {
    return ApiError{413, fmt::format("Request body too large: the limit is {} bytes", config.body_limit), std::nullopt};
  }
  if (ec == http::error::header_limit) {
    return ApiError{431, fmt::format("Request header too large: the limit is {} bytes", config.header_limit),
                    std::nullopt};
  }
  if (ec == http::error::buffer_overflow) {
    return ApiError{400, "Malformed HTTP request: a chunk header or a pipelined request is too long", std::nullopt};
  }
  if (is_http_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return ApiError{400, fmt::format("Malformed HTTP request: {}", ec.message()), std::nullopt};
  }
  return std::nullopt;  // the client went away (end of stream, reset, cut short): nobody to answer
}

/// Checks of a parsed head that Beast's parser leaves to the server: the version, the number of
/// fields, and the framing rules that guard against request smuggling (Beast itself rejects
/// Content-Length with Transfer-Encoding and differing Content-Lengths).
std::optional<ApiError> check_head(const RequestParser& parser, const ServerConfig& config) {
  const auto& req = parser.get();
  if (req.version() != 10 && req.version() != 11) {
    return ApiError{400,
                    fmt::format("Malformed HTTP request: unsupported HTTP version {}.{} (HTTP/1.0 and HTTP/1.1 are "
                                "served)",
                                req.version() / 10, req.version() % 10),
                    std::nullopt};
  }
  std::size_t fields = 0;
  for (auto it = req.begin(); it != req.end(); ++it) ++fields;
  if (fields > config.header_fields_limit) {
    return ApiError{431,
                    fmt::format("Request header too large: {} fields, the limit is {}", fields,
                                config.header_fields_limit),
                    std::nullopt};
  }
  if (req.count(http::field::host) > 1) {
    return ApiError{400, "Malformed HTTP request: more than one Host field", std::nullopt};
  }
  if (req.count(http::field::transfer_encoding) > 0) {
    // Only a lone "chunked": any other coding leaves the body length to guesswork (RFC 9112 6.3).
    const auto te = req[http::field::transfer_encoding];
    if (!parser.chunked() || req.count(http::field::transfer_encoding) > 1 || !beast::iequals(te, "chunked")) {
      return ApiError{400,
                      fmt::format("Malformed HTTP request: unsupported Transfer-Encoding \"{}\" (only \"chunked\" is "
                                  "accepted)",
                                  sv(te)),
                      std::nullopt};
    }
  }
  return std::nullopt;
}

class Connection {
 public:
  Connection(tcp::socket socket, SharedState& shared)
      : socket_(std::move(socket)),
        shared_(shared),
        config_(shared.config),
        buffer_(config_.header_limit + kBufferSlack),
        deadline_(socket_) {}

  /// Serves requests until the connection ends.
  net::awaitable<void> run();

  void close() {
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
  }

 private:
  /// Waits, without a buffer, until the client sends something (or closes). Errors on expiry.
  net::awaitable<error_code> wait_readable();
  /// Reads and parses into `parser` until its head (kHead) or whole message (kBody) is done.
  /// beast::error::timeout when the deadline passes.
  net::awaitable<error_code> read(RequestParser& parser, Phase phase);
  /// Writes all of `bytes`, under the deadline if one is armed.
  net::awaitable<error_code> send(const std::string& bytes);
  /// Routes a complete request and writes the answer. Returns whether the connection may serve
  /// another request; so do the three after it.
  net::awaitable<bool> answer(RequestParser& parser);
  net::awaitable<bool> write_reply(const HttpReply& reply, unsigned version, bool keep_alive);
  net::awaitable<bool> stream_job(const GenerationJob& job, std::uint64_t sequence, unsigned version, bool keep_alive,
                                  Clock::time_point t0);
  net::awaitable<bool> complete_job(const GenerationJob& job, std::uint64_t sequence, unsigned version,
                                    bool keep_alive, Clock::time_point t0);
  /// Answers a request that could not be served (408, 413, 431, 400), drains, and returns; the
  /// caller then closes the connection.
  net::awaitable<void> reject(const ApiError& error);

  std::unique_ptr<TokenTimeline> timeline(const GenerationJob& job, std::uint64_t sequence) const {
    return shared_.model->start(GenerationShape{job.request.prompt_tokens, job.request.max_tokens},
                                Rng::for_stream(config_.latency.seed, sequence));
  }

  tcp::socket socket_;
  SharedState& shared_;
  const ServerConfig& config_;
  /// Unparsed input; persists between requests (it may hold the start of a pipelined one). Its
  /// memory is released whenever it is empty between requests, so an idle connection holds none.
  beast::flat_buffer buffer_;
  Deadline deadline_;
};

net::awaitable<void> Connection::run() {
  deadline_.arm(config_.header_timeout);  // a first request's head is due within it from the accept
  bool first = true;
  for (;;) {
    if (buffer_.size() == 0) {
      if (!first) {
        buffer_.shrink_to_fit();
        deadline_.arm(config_.keepalive_timeout);
      }
      const error_code ec = co_await wait_readable();
      if (ec) {
        if (ec == beast::error::timeout) {
          spdlog::debug("closing a connection idle since {}", first ? "its accept" : "its last request");
        }
        break;
      }
      if (!first) deadline_.arm(config_.header_timeout);  // the head is due within it from its first byte
    } else if (!first) {
      deadline_.arm(config_.header_timeout);  // a pipelined request: its first bytes are here
    }
    first = false;

    RequestParser parser;  // allocates nothing until fields arrive
    parser.header_limit(static_cast<std::uint32_t>(config_.header_limit));
    parser.body_limit(static_cast<std::uint64_t>(config_.body_limit));
    Phase phase = Phase::kHead;
    error_code ec = co_await read(parser, phase);
    if (!ec) {
      if (const auto bad_head = check_head(parser, config_)) {
        co_await reject(*bad_head);
        break;
      }
    }
    if (!ec && !parser.is_done()) {
      phase = Phase::kBody;
      deadline_.arm(config_.body_timeout);
      const auto& head = parser.get();
      if (head.version() >= 11 && beast::iequals(head[http::field::expect], "100-continue")) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        ec = co_await send(kContinue);
      }
      if (!ec) ec = co_await read(parser, phase);
    }
    if (ec) {
      const bool got_bytes = parser.got_some() || buffer_.size() > 0;
      if (const auto failure = read_failure_answer(ec, got_bytes, phase, config_)) {
        co_await reject(*failure);
      } else if (ec == beast::error::timeout) {
        spdlog::debug("closing a connection that sent nothing within {}", format_duration(config_.header_timeout));
      }
      break;
    }
    deadline_.disarm();  // no timeout applies while the server answers
    const bool keep_alive = co_await answer(parser);
    if (!keep_alive) break;
  }
}

net::awaitable<error_code> Connection::wait_readable() {
  error_code ec;
  co_await socket_.async_wait(tcp::socket::wait_read, net::redirect_error(net::use_awaitable, ec));
  if (ec && deadline_.expired()) ec = beast::error::timeout;
  co_return ec;
}

net::awaitable<error_code> Connection::read(RequestParser& parser, Phase phase) {
  // Beast's async_read would loop over socket reads inside one operation; a deadline that passes
  // between two of them would go unnoticed while a slow client keeps sending. Hence this loop:
  // the deadline is checked before every read.
  error_code ec;
  std::size_t head_bytes = 0;
  for (;;) {
    if (buffer_.size() > 0) {
      const std::size_t used = parser.put(buffer_.data(), ec);
      buffer_.consume(used);
      const bool need_more = ec == http::error::need_more;
      if (ec && !need_more) co_return ec;
      ec = {};
      if (phase == Phase::kHead) {
        // Beast 1.74 checks its header limit only while the head is incomplete in the buffer; a
        // head that arrives whole in one read can exceed it (by up to kBufferSlack).
        head_bytes += used;
        if (parser.is_header_done() && head_bytes > config_.header_limit) {
          co_return error_code(http::error::header_limit);
        }
      }
      if (phase == Phase::kHead ? parser.is_header_done() : parser.is_done()) co_return ec;
      if (!need_more && used > 0 && buffer_.size() > 0) continue;  // more may parse without reading
    }
    if (deadline_.expired()) co_return error_code(beast::error::timeout);
    const std::size_t room = beast::read_size(buffer_, kReadChunk);
    if (room == 0) co_return error_code(http::error::buffer_overflow);
    const std::size_t n =
        co_await socket_.async_read_some(buffer_.prepare(room), net::redirect_error(net::use_awaitable, ec));
    buffer_.commit(n);
    if (ec == net::error::eof) {
      if (!parser.got_some() && buffer_.size() == 0) co_return error_code(http::error::end_of_stream);
      ec = {};
      parser.put_eof(ec);  // a request cut short: partial_message
      if (!ec && !parser.is_done()) ec = http::error::partial_message;
      co_return ec;
    }
    if (ec) {
      if (deadline_.expired()) ec = beast::error::timeout;
      co_return ec;
    }
  }
}

net::awaitable<error_code> Connection::send(const std::string& bytes) {
  error_code ec;
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    if (deadline_.expired()) co_return error_code(beast::error::timeout);
    sent += co_await socket_.async_write_some(net::buffer(bytes.data() + sent, bytes.size() - sent),
                                              net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return ec;
  }
  co_return ec;
}

net::awaitable<bool> Connection::answer(RequestParser& parser) {
  const Clock::time_point t0 = Clock::now();  // the request is complete: its clock starts
  auto& req = parser.get();
  const std::uint64_t sequence = shared_.next_sequence.fetch_add(1, std::memory_order_relaxed);
  const RouteResult routed = shared_.router.route(sv(req.method_string()), sv(req.target()), req.body(),
                                                  RequestContext{sequence, unix_now()});
  const bool keep_alive = req.keep_alive();
  if (const auto* reply = std::get_if<HttpReply>(&routed)) {
    spdlog::debug("{} {} -> {}", sv(req.method_string()), sv(req.target()), reply->status);
    const bool keep = co_await write_reply(*reply, req.version(), keep_alive);
    co_return keep;
  }
  const auto& job = std::get<GenerationJob>(routed);
  spdlog::debug("{} {} -> {} stream={} prompt_tokens={} max_tokens={}", sv(req.method_string()), sv(req.target()),
                job.id, job.request.stream, job.request.prompt_tokens, job.request.max_tokens);
  if (job.request.stream) {
    const bool keep = co_await stream_job(job, sequence, req.version(), keep_alive, t0);
    co_return keep;
  }
  const bool keep = co_await complete_job(job, sequence, req.version(), keep_alive, t0);
  co_return keep;
}

net::awaitable<bool> Connection::write_reply(const HttpReply& reply, unsigned version, bool keep_alive) {
  const std::string wire = serialize(reply, version, keep_alive);
  const error_code ec = co_await send(wire);
  co_return !ec && keep_alive;
}

net::awaitable<bool> Connection::stream_job(const GenerationJob& job, std::uint64_t sequence, unsigned version,
                                            bool keep_alive, Clock::time_point t0) {
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
  co_await http::async_write_header(socket_, serializer, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return false;

  const ResponseEncoder encoder(job);
  const auto tl = timeline(job, sequence);
  const Framing framing = chunked ? Framing::kChunked : Framing::kNone;
  const std::int64_t n = job.request.max_tokens;
  net::steady_timer timer(socket_.get_executor());
  std::string out;  // reused for every write
  for (std::int64_t k = 0; k < n; ++k) {
    // Absolute due times from t0: a late wake-up does not delay the tokens after it.
    timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(tl->next_due()));
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;
    out.clear();
    encoder.append_token_events(k, out, framing);
    if (k + 1 == n && chunked) out += kLastChunk;
    co_await net::async_write(socket_, net::buffer(out), net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      spdlog::debug("{}: client gone after {}/{} tokens: {}", job.id, k, n, ec.message());
      co_return false;
    }
  }
  spdlog::debug("{}: stream complete ({} tokens)", job.id, n);
  co_return keep_alive && chunked;
}

net::awaitable<bool> Connection::complete_job(const GenerationJob& job, std::uint64_t sequence, unsigned version,
                                              bool keep_alive, Clock::time_point t0) {
  const auto tl = timeline(job, sequence);
  std::chrono::nanoseconds last{0};
  for (std::int64_t k = 0; k < job.request.max_tokens; ++k) last = tl->next_due();
  net::steady_timer timer(socket_.get_executor());
  timer.expires_at(t0 + std::chrono::duration_cast<Clock::duration>(last));
  error_code ec;
  co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return false;
  const ResponseEncoder encoder(job);
  const HttpReply reply{200, "application/json", encoder.full_body(), {}};
  const bool keep = co_await write_reply(reply, version, keep_alive);
  co_return keep;
}

net::awaitable<void> Connection::reject(const ApiError& error) {
  spdlog::debug("rejecting request: {} {}", error.status, error.message);
  deadline_.arm(kRejectLinger);  // covers the write and the drain
  const std::string wire = serialize(error_reply(error), 11, false);
  error_code ec = co_await send(wire);
  if (ec) co_return;
  // Drain what the client is still sending (e.g. the rest of an oversized body) before closing:
  // closing with unread input makes the kernel send RST, which can destroy the reply in flight.
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  std::size_t drained = buffer_.size();
  buffer_.clear();
  buffer_.shrink_to_fit();
  std::array<char, 16384> sink;
  while (!ec && drained < kRejectDrainLimit && !deadline_.expired()) {
    drained += co_await socket_.async_read_some(net::buffer(sink), net::redirect_error(net::use_awaitable, ec));
  }
}

}  // namespace

std::string error_response_bytes(const ApiError& error) { return serialize(error_reply(error), 11, false); }

net::awaitable<void> serve_connection(tcp::socket socket, SharedState& shared) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // tokens are small writes: never hold them back
  spdlog::debug("connection opened ({} open)", shared.open_connections.load(std::memory_order_relaxed));
  Connection connection(std::move(socket), shared);
  try {
    co_await connection.run();
  } catch (const std::exception& e) {
    spdlog::error("connection failed: {}", e.what());
  }
  connection.close();
  const std::int64_t left = shared.open_connections.fetch_sub(1, std::memory_order_relaxed) - 1;
  spdlog::debug("connection closed ({} open)", left);
}

}  // namespace llmload::server
