// One llmload-server connection: reading requests under deadlines, replies, token streams.
// The listener (accept loop, limits on connections) is in http_server.cpp.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

// GCC 12 at -O2 reports -Wmismatched-new-delete on Asio's coroutine frames (awaitable_frame_base
// has its own operator new/delete; GCC's inliner loses track of the pair). A known false positive
// (GCC bug 109224-like); clang builds of this file keep the warning on.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "connection.hpp"
#include "deadline.hpp"
#include "engine_stream.hpp"
#include "http_framing.hpp"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include <boost/asio/post.hpp>
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
#include "llmload/server/engine/scheduler.hpp"
#include "llmload/server/invalid_output.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/response_encoder.hpp"

namespace llmload::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

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

std::int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return to_seconds(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a));
}

/// The per-request fault header (see fault.hpp).
constexpr const char* kFaultHeader = "X-Llmload-Fault";
/// What an injected malformed SSE event carries: a data line that is not JSON.
constexpr std::string_view kMalformedEvent = R"({"id":"injected-malformed-event","choices":[{"text":)";

/// One generation request being served.
struct Generation {
  Generation(const GenerationJob& job_in, Clock::time_point t0_in, std::int64_t arrival_unix_ns_in, Fault fault_in)
      : job(job_in), t0(t0_in), arrival_unix_ns(arrival_unix_ns_in), fault(fault_in) {}
  ~Generation() {
    if (stream) stream->detach();  // also when an exception unwinds: the watcher must not outlive us
    if (slot) slot->release();
    if (generating != nullptr) generating->fetch_sub(1, std::memory_order_relaxed);
  }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;
  const GenerationJob& job;
  const Clock::time_point t0;          ///< arrival: the request fully read
  const std::int64_t arrival_unix_ns;
  const Fault fault;
  std::unique_ptr<TokenTimeline> timeline;  ///< fixed model
  std::shared_ptr<EngineStream> stream;     ///< engine model
  /// The tokens: produced by the engine (engine model) or by wait_token (fixed model).
  std::shared_ptr<OutputSequence> output;
  /// Fixed model: the count of requests generating, which this one is in until it ends.
  std::atomic<std::int64_t>* generating = nullptr;
  std::uint64_t engine_id = 0;
  Clock::time_point scheduled{};  ///< fixed model: when it got its slot (its tokens are timed from it)
  FixedSlots* slot = nullptr;     ///< fixed model: the slot it holds, released when it ends
  std::string failure;
  bool client_gone = false;  ///< the engine request ended because the client went away
  bool ttft_observed = false;  ///< vllm:time_to_first_token_seconds already has this request
  std::int64_t tokens_written = 0;
  Clock::time_point first_write{};
  Clock::time_point last_write{};
  /// The first non-reasoning token's write (OutputSequence::reasoning_tokens()), once written.
  std::optional<Clock::time_point> first_output_write;
};

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
  net::awaitable<error_code> read(RequestParser& parser, ReadPhase phase);
  /// Writes all of `bytes`, under the deadline if one is armed.
  net::awaitable<error_code> send(const std::string& bytes);
  /// Routes a complete request and writes the answer. Returns whether the connection may serve
  /// another request; so do the three after it.
  net::awaitable<bool> answer(RequestParser& parser);
  net::awaitable<bool> write_reply(const HttpReply& reply, unsigned version, bool keep_alive);
  net::awaitable<bool> stream_job(Generation& gen, unsigned version, bool keep_alive);
  net::awaitable<bool> complete_job(Generation& gen, unsigned version, bool keep_alive);
  /// Hands the request to the engine (or starts its fixed timeline). False: the engine's waiting
  /// queue is full (429).
  bool start_generation(Generation& gen, std::uint64_t sequence);
  /// Counts the request's fault in the metrics and applies the one that changes the request
  /// itself (invalid-output breaks its structured output; without one it is unaffected).
  void count_and_apply_fault(const Fault& fault, GenerationJob& job);
  /// Waits until token k may be written. False: the engine failed the request.
  net::awaitable<bool> wait_token(Generation& gen, std::int64_t k);
  void note_token_written(Generation& gen, Clock::time_point at);
  /// A completed Responses request: remembered for previous_response_id (router.hpp).
  void remember_if_responses(const Generation& gen);
  RequestOutcome outcome(const Generation& gen, Clock::time_point last) const;
  /// Watches the socket while an engine request is served: a client that closes makes the
  /// request fail with client_gone (and leave the engine) even before anything is written.
  void watch_for_disconnect(const std::shared_ptr<EngineStream>& stream, std::uint64_t engine_id);
  /// Cancels an unfinished request in the engine and records the request's metrics.
  void finish_generation(Generation& gen);
  net::awaitable<void> sleep_for(std::chrono::nanoseconds d);
  /// Closes the connection with RST (fault injection).
  void reset();
  /// Answers a request that could not be served (408, 413, 431, 400), drains, and returns; the
  /// caller then closes the connection.
  net::awaitable<void> reject(const ApiError& error);

  /// One read into `buffer`: recvmsg on the socket, waiting for it to become readable when it has
  /// nothing. Records the kernel's receive time of the data (SO_TIMESTAMPING) in last_rx_.
  net::awaitable<std::size_t> receive(net::mutable_buffer buffer, error_code& ec);

  tcp::socket socket_;
  SharedState& shared_;
  const ServerConfig& config_;
  /// The kernel's receive time of the last bytes read (steady clock; the read's own time when the
  /// kernel gives none): a request's clock starts when its last bytes reached this host, not when
  /// this connection's coroutine got to read them (a busy event loop would hide in the ground truth).
  std::optional<Clock::time_point> last_rx_;
  std::int64_t last_rx_unix_ns_ = 0;
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
    ReadPhase phase = ReadPhase::kHead;
    error_code ec = co_await read(parser, phase);
    if (!ec) {
      if (const auto bad_head = check_head(parser, config_)) {
        co_await reject(*bad_head);
        break;
      }
    }
    if (!ec && !parser.is_done()) {
      phase = ReadPhase::kBody;
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

net::awaitable<std::size_t> Connection::receive(net::mutable_buffer buffer, error_code& ec) {
  ec = {};
  for (;;) {
    iovec iov{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(scm_timestamping))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket_.native_handle(), &msg, MSG_DONTWAIT);
    if (n > 0) {
      const Clock::time_point now = Clock::now();
      timespec real{};
      ::clock_gettime(CLOCK_REALTIME, &real);
      const std::int64_t real_now = std::int64_t{real.tv_sec} * 1'000'000'000 + real.tv_nsec;
      last_rx_ = now;
      last_rx_unix_ns_ = real_now;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPING) continue;
        scm_timestamping ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        const std::int64_t rx = std::int64_t{ts.ts[0].tv_sec} * 1'000'000'000 + ts.ts[0].tv_nsec;
        const std::int64_t age = real_now - rx;
        // CLOCK_REALTIME -> the steady clock, with an offset sampled now.
        if (rx != 0 && age > 0 && age < 10'000'000'000) {
          last_rx_ = now - std::chrono::nanoseconds(age);
          last_rx_unix_ns_ = rx;
        }
        break;
      }
      co_return static_cast<std::size_t>(n);
    }
    if (n == 0) {
      ec = net::error::eof;
      co_return 0;
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) {
      ec = error_code(err, boost::system::system_category());
      co_return 0;
    }
    // Drained: wait for more (Asio's epoll is edge-triggered; the edge of data arriving after this
    // read raises a new one).
    co_await socket_.async_wait(tcp::socket::wait_read, net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return 0;
  }
}

net::awaitable<error_code> Connection::read(RequestParser& parser, ReadPhase phase) {
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
      if (phase == ReadPhase::kHead) {
        // Beast 1.74 checks its header limit only while the head is incomplete in the buffer; a
        // head that arrives whole in one read can exceed it (by up to kBufferSlack).
        head_bytes += used;
        if (parser.is_header_done() && head_bytes > config_.header_limit) {
          co_return error_code(http::error::header_limit);
        }
      }
      if (phase == ReadPhase::kHead ? parser.is_header_done() : parser.is_done()) co_return ec;
      if (!need_more && used > 0 && buffer_.size() > 0) continue;  // more may parse without reading
    }
    if (deadline_.expired()) co_return error_code(beast::error::timeout);
    const std::size_t room = beast::read_size(buffer_, kReadChunk);
    if (room == 0) co_return error_code(http::error::buffer_overflow);
    const std::size_t n = co_await receive(buffer_.prepare(room), ec);
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
  // The request is complete: its clock starts at the kernel's receive time of its last bytes
  // (when the read that completed it says; else now).
  const Clock::time_point now = Clock::now();
  const bool from_rx = last_rx_ && *last_rx_ <= now && now - *last_rx_ < std::chrono::seconds(10);
  const Clock::time_point t0 = from_rx ? *last_rx_ : now;
  const std::int64_t arrival_unix_ns = from_rx ? last_rx_unix_ns_ : unix_now_ns();
  last_rx_.reset();
  auto& req = parser.get();
  const std::uint64_t sequence = shared_.next_sequence.fetch_add(1, std::memory_order_relaxed);
  const bool keep_alive = req.keep_alive();
  const std::string_view target = beast_view(req.target());
  if (target.substr(0, target.find('?')) == "/metrics" && req.method() == http::verb::get) {
    const HttpReply reply{200, ServerMetrics::kContentType, shared_.metrics.render(), {}};
    const bool keep = co_await write_reply(reply, req.version(), keep_alive);
    co_return keep;
  }
  std::optional<std::string_view> authorization;
  if (const auto it = req.find(http::field::authorization); it != req.end()) authorization = beast_view(it->value());
  std::optional<std::string_view> x_api_key;
  if (const auto it = req.find("x-api-key"); it != req.end()) x_api_key = beast_view(it->value());
  RouteResult routed =
      shared_.router.route(beast_view(req.method_string()), target, req.body(),
                           RequestContext{sequence, arrival_unix_ns / 1000000000, authorization, x_api_key});
  if (const auto* reply = std::get_if<HttpReply>(&routed)) {
    spdlog::debug("{} {} -> {}", beast_view(req.method_string()), target, reply->status);
    const bool keep = co_await write_reply(*reply, req.version(), keep_alive);
    co_return keep;
  }
  auto& job = std::get<GenerationJob>(routed);
  std::optional<std::string_view> fault_header;
  if (const auto it = req.find(kFaultHeader); it != req.end()) fault_header = beast_view(it->value());
  const FaultInjector::Choice choice = shared_.faults.choose(sequence, fault_header);
  const Endpoint endpoint = job.request.endpoint;
  if (choice.header_error) {
    const HttpReply reply = error_reply_for(endpoint, ApiError{400, fmt::format("Invalid {} header: {}", kFaultHeader,
                                                                  *choice.header_error), std::nullopt});
    const bool keep = co_await write_reply(reply, req.version(), keep_alive);
    co_return keep;
  }
  count_and_apply_fault(choice.fault, job);
  spdlog::debug("{} {} -> {} stream={} prompt_tokens={} max_tokens={}{}", beast_view(req.method_string()), target, job.id,
                job.request.stream, job.request.prompt_tokens, job.request.max_tokens,
                choice.fault.kind == FaultKind::kNone ? "" : " fault=" + format_fault_spec(choice.fault));
  if (choice.fault.kind == FaultKind::kError || (choice.fault.kind == FaultKind::kStreamError && !job.request.stream)) {
    const int status = choice.fault.status;
    const HttpReply reply = error_reply_for(endpoint, ApiError{
        status, fmt::format("Injected fault: error {} (X-Llmload-Fault or --fault)", status), std::nullopt});
    const bool keep = co_await write_reply(reply, req.version(), keep_alive);
    co_return keep;
  }
  Generation gen(job, t0, arrival_unix_ns, choice.fault);
  gen.output = std::make_shared<OutputSequence>(job, shared_.next_generation.fetch_add(1, std::memory_order_relaxed));
  if (!shared_.engine.runtime && shared_.fixed_slots.limited()) {
    co_await shared_.fixed_slots.acquire();
    gen.slot = &shared_.fixed_slots;
  }
  if (!start_generation(gen, sequence)) {
    // Refused before the engine saw it: like a request a proxy turns away, it is not one of the
    // engine's requests and stays out of the vllm:* request metrics.
    const HttpReply reply = error_reply_for(endpoint, ApiError{
        429,
        fmt::format("Too many requests waiting: the engine's waiting queue is full ({} requests, --max-waiting). "
                    "Retry later.",
                    shared_.config.max_waiting),
        std::nullopt});
    const bool keep = co_await write_reply(reply, req.version(), keep_alive);
    co_return keep;
  }
  bool keep = false;
  if (job.request.stream) {
    keep = co_await stream_job(gen, req.version(), keep_alive);
  } else {
    keep = co_await complete_job(gen, req.version(), keep_alive);
  }
  finish_generation(gen);
  co_return keep;
}

void Connection::count_and_apply_fault(const Fault& fault, GenerationJob& job) {
  if (fault.kind == FaultKind::kNone) return;
  if (fault.kind == FaultKind::kInvalidOutput) {
    if (!job.request.structured) return;  // nothing to break: unaffected, not counted
    job.request.structured = make_invalid_output(*job.request.structured, fault.invalid_output);
  }
  shared_.metrics.count_fault(fault_kind_name(fault.kind));
}

bool Connection::start_generation(Generation& gen, std::uint64_t sequence) {
  const GenerationJob& job = gen.job;
  if (shared_.engine.runtime) {
    gen.engine_id = sequence;
    gen.stream = std::make_shared<EngineStream>(socket_.get_executor());
    EngineRequest request;
    request.id = sequence;
    request.prompt_tokens = std::max<std::int64_t>(1, job.request.prompt_tokens);
    request.max_tokens = job.request.max_tokens;
    request.lora = lora_adapter_id(config_.lora, job.request.model);  // 0: a base model
    const auto& sched = shared_.engine.runtime->scheduler_config();
    if (sched.enable_prefix_caching) request.block_hashes = prompt_block_hashes(job.request.prompt_token_ids, sched.block_size);
    if (shared_.engine.runtime->submit(request, gen.stream, gen.output) != EngineRuntime::Admission::kQueued) {
      return false;
    }
    watch_for_disconnect(gen.stream, sequence);
    return true;
  }
  gen.timeline = shared_.model->start(GenerationShape{job.request.prompt_tokens, job.request.max_tokens},
                                      Rng::for_stream(config_.latency.seed, sequence));
  gen.scheduled = gen.slot ? std::max(gen.t0, Clock::now()) : gen.t0;
  shared_.fixed_generating.fetch_add(1, std::memory_order_relaxed);
  gen.generating = &shared_.fixed_generating;
  return true;
}

net::awaitable<bool> Connection::wait_token(Generation& gen, std::int64_t k) {
  if (gen.stream) {
    EngineStream::Next next = co_await gen.stream->next();
    if (next.failed) {
      gen.failure = next.reason;
      gen.client_gone = next.client_gone;
      co_return false;
    }
    co_return true;
  }
  net::steady_timer timer(socket_.get_executor());
  // Absolute due times from t0: a late wake-up does not delay the tokens after it.
  timer.expires_at(gen.scheduled + std::chrono::duration_cast<Clock::duration>(gen.timeline->next_due()));
  error_code ec;
  co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return false;
  // The fixed model's batch: the requests generating at once.
  gen.output->on_token(k, shared_.fixed_generating.load(std::memory_order_relaxed), 0);
  co_return true;
}

void Connection::note_token_written(Generation& gen, Clock::time_point at) {
  if (gen.tokens_written == gen.output->reasoning_tokens()) gen.first_output_write = at;
  if (gen.tokens_written == 0) {
    gen.first_write = at;
    shared_.metrics.observe_time_to_first_token(seconds_between(gen.t0, at));
    gen.ttft_observed = true;
  } else {
    shared_.metrics.observe_inter_token_latency(seconds_between(gen.last_write, at));
  }
  gen.last_write = at;
  ++gen.tokens_written;
}

void Connection::remember_if_responses(const Generation& gen) {
  if (gen.job.request.endpoint != Endpoint::kResponses) return;
  std::string answer;
  gen.output->append_text(answer, gen.output->reasoning_tokens(), gen.output->length());
  remember_response(shared_.router.response_store(), gen.job, std::move(answer));
}

RequestOutcome Connection::outcome(const Generation& gen, Clock::time_point last) const {
  RequestOutcome o;
  o.timing.arrival_unix_ns = gen.arrival_unix_ns;
  if (gen.stream) {
    const auto facts = gen.stream->facts();
    o.cached_tokens = facts.cached_tokens;
    o.preemptions = facts.preemptions;
    o.timing.queue_s = facts.scheduled ? std::max(0.0, seconds_between(gen.t0, *facts.scheduled)) : 0.0;
  } else {
    o.timing.queue_s = std::max(0.0, seconds_between(gen.t0, gen.scheduled));
  }
  o.timing.first_token_s = seconds_between(gen.t0, gen.tokens_written > 0 ? gen.first_write : last);
  // The first answer token: written already, or the one being written now (`last`), or none.
  if (gen.first_output_write) {
    o.timing.first_output_token_s = seconds_between(gen.t0, *gen.first_output_write);
  } else if (gen.output->length() > gen.output->reasoning_tokens()) {
    o.timing.first_output_token_s = seconds_between(gen.t0, last);
  } else {
    o.timing.first_output_token_s = std::numeric_limits<double>::quiet_NaN();
  }
  o.timing.last_token_s = seconds_between(gen.t0, last);
  o.wrong_answer = gen.output->wrong_answer();
  o.diverged_at = gen.output->diverged_at();
  if (gen.job.request.structured) o.invalid_output = gen.job.request.structured->invalid;
  return o;
}

void Connection::watch_for_disconnect(const std::shared_ptr<EngineStream>& stream, std::uint64_t engine_id) {
  // Like vLLM, a request whose client went away leaves the engine at once, also while it waits in
  // the queue (where no write would notice). Readable with nothing to read means the peer closed;
  // readable with bytes (a pipelined request) says nothing, and the watch ends. MSG_PEEK leaves
  // the bytes for the parser.
  socket_.async_wait(tcp::socket::wait_read, [this, engine_id, weak = std::weak_ptr<EngineStream>(stream)](
                                                  const error_code& ec) {
    if (ec) return;  // cancelled: the socket closed or its deadline fired
    const auto s = weak.lock();
    // attached: the request is still served, so this Connection and its socket are alive (the
    // handler runs on the connection's executor, where detach() runs too).
    if (!s || !s->attached()) return;
    char byte = 0;
    const ssize_t n = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      // Out of the engine now, even if the connection is busy elsewhere (sleeping in a fault).
      shared_.engine.runtime->cancel(engine_id);
      s->client_gone();
    } else if (n < 0) {
      watch_for_disconnect(s, engine_id);  // spurious wake-up
    }
  });
}

void Connection::finish_generation(Generation& gen) {
  if (gen.stream) gen.stream->detach();
  const OutputSequence& output = *gen.output;
  const bool complete = output.started() && gen.tokens_written == output.length();
  if (!complete && gen.stream) shared_.engine.runtime->cancel(gen.engine_id);
  if (output.started()) {
    shared_.metrics.count_output(output.wrong_answer().has_value(), output.wrong_answer().value_or(false),
                                 output.diverged_at().has_value());
  }
  ServerMetrics::FinishedRequest f;
  f.prompt_tokens = gen.job.request.prompt_tokens;
  f.generation_tokens = gen.tokens_written;
  f.max_tokens = gen.job.request.max_tokens;
  f.finished_reason = !complete ? "abort" : output.stopped() ? "stop" : "length";
  const Clock::time_point end = gen.tokens_written > 0 ? gen.last_write : Clock::now();
  Clock::time_point scheduled = gen.scheduled;
  if (gen.stream) {
    // Never scheduled (it left while queued): all of its time was queue time.
    const auto facts = gen.stream->facts();
    scheduled = facts.scheduled ? std::clamp(*facts.scheduled, gen.t0, end) : end;
  }
  f.produced_first_token = gen.tokens_written > 0;
  f.ttft_observed = gen.ttft_observed;
  f.ttft_s = f.produced_first_token ? seconds_between(gen.t0, gen.first_write) : 0.0;
  f.e2e_s = seconds_between(gen.t0, end);
  f.queue_s = seconds_between(gen.t0, scheduled);
  f.prefill_s = f.produced_first_token ? seconds_between(scheduled, gen.first_write) : 0.0;
  f.decode_s = f.produced_first_token ? seconds_between(gen.first_write, end) : 0.0;
  f.inference_s = seconds_between(scheduled, end);
  shared_.metrics.on_request_finished(f);
}

net::awaitable<void> Connection::sleep_for(std::chrono::nanoseconds d) {
  net::steady_timer timer(socket_.get_executor());
  timer.expires_after(std::chrono::duration_cast<Clock::duration>(d));
  error_code ec;
  co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
}

void Connection::reset() {
  // SO_LINGER 0: close() sends RST, as a crashed server or a dropped proxy connection would.
  error_code ec;
  socket_.set_option(net::socket_base::linger(true, 0), ec);
  socket_.close(ec);
}

net::awaitable<bool> Connection::write_reply(const HttpReply& reply, unsigned version, bool keep_alive) {
  const std::string wire = serialize_reply(reply, version, keep_alive);
  const error_code ec = co_await send(wire);
  co_return !ec && keep_alive;
}

net::awaitable<bool> Connection::stream_job(Generation& gen, unsigned version, bool keep_alive) {
  const GenerationJob& job = gen.job;
  const Fault& fault = gen.fault;
  if (fault.kind == FaultKind::kSlowFirstByte) co_await sleep_for(fault.duration);
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
  // Headers go out at once, as vLLM's do; the first event waits for its token.
  co_await http::async_write_header(socket_, serializer, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return false;

  const ResponseEncoder encoder(job, gen.output);
  const Framing framing = chunked ? Framing::kChunked : Framing::kNone;
  std::string out;  // reused for every write
  // Structural events due before any token (Responses: response.created; Messages: message_start).
  encoder.append_start_events(out, framing);
  if (!out.empty()) {
    co_await net::async_write(socket_, net::buffer(out), net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return false;
  }
  // The output's length is max_tokens until token 0 is produced, then what it will be (EOS).
  for (std::int64_t k = 0; k < gen.output->length(); ++k) {
    const bool ok = co_await wait_token(gen, k);
    out.clear();
    const std::int64_t n = gen.output->length();
    if (!ok && gen.client_gone) {
      spdlog::debug("{}: client disconnected after {}/{} tokens; aborted in the engine", job.id, k, n);
      co_return false;
    }
    if (!ok) {
      // The engine cannot go on (shutting down): an error event, as vLLM sends mid-stream.
      encoder.append_error_event(out, ApiError{503, "The engine could not serve the request: " + gen.failure,
                                               std::nullopt},
                                 framing, k);
      if (chunked) out += kLastChunk;
      co_await net::async_write(socket_, net::buffer(out), net::redirect_error(net::use_awaitable, ec));
      co_return false;
    }
    if (fault.at_token == k) {
      if (fault.kind == FaultKind::kReset) {
        spdlog::debug("{}: injected reset before token {}", job.id, k);
        reset();
        co_return false;
      }
      if (fault.kind == FaultKind::kStall) co_await sleep_for(fault.duration);
      if (fault.kind == FaultKind::kMalformed) encoder.append_malformed_event(out, kMalformedEvent, framing);
      if (fault.kind == FaultKind::kStreamError) {
        // An error after the stream started (e.g. Anthropic's overloaded_error): an error event, then the end.
        spdlog::debug("{}: injected stream error {} before token {}", job.id, fault.status, k);
        encoder.append_error_event(
            out, ApiError{fault.status, fmt::format("Injected fault: stream-error {} (X-Llmload-Fault or --fault)",
                                                    fault.status), std::nullopt},
            framing, k);
        if (chunked) out += kLastChunk;
        co_await net::async_write(socket_, net::buffer(out), net::redirect_error(net::use_awaitable, ec));
        co_return false;
      }
    }
    const Clock::time_point now = Clock::now();
    if (k + 1 == n) {
      const RequestOutcome o = outcome(gen, now);
      encoder.append_token_events(k, out, framing, &o);
      if (chunked) out += kLastChunk;
    } else {
      encoder.append_token_events(k, out, framing);
    }
    co_await net::async_write(socket_, net::buffer(out), net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      spdlog::debug("{}: client gone after {}/{} tokens: {}", job.id, k, n, ec.message());
      co_return false;
    }
    note_token_written(gen, now);
  }
  spdlog::debug("{}: stream complete ({} tokens)", job.id, gen.output->length());
  remember_if_responses(gen);
  co_return keep_alive && chunked;
}

net::awaitable<bool> Connection::complete_job(Generation& gen, unsigned version, bool keep_alive) {
  const GenerationJob& job = gen.job;
  const Fault& fault = gen.fault;
  Clock::time_point first{};
  for (std::int64_t k = 0; k < gen.output->length(); ++k) {
    if (!co_await wait_token(gen, k)) {
      if (gen.client_gone) co_return false;
      const HttpReply reply = error_reply_for(
          job.request.endpoint, ApiError{503, "The engine could not serve the request: " + gen.failure, std::nullopt});
      co_await write_reply(reply, version, false);
      co_return false;
    }
    const bool first_output = k == gen.output->reasoning_tokens();
    if (k == 0 || first_output) {
      const Clock::time_point produced = Clock::now();
      if (k == 0) first = produced;
      if (first_output) gen.first_output_write = produced;
    }
  }
  if (fault.kind == FaultKind::kSlowFirstByte || fault.kind == FaultKind::kStall) co_await sleep_for(fault.duration);
  if (fault.kind == FaultKind::kReset) {
    reset();
    co_return false;
  }
  const ResponseEncoder encoder(job, gen.output);
  const Clock::time_point now = Clock::now();
  // Not streamed: the first token was produced at `first`, all are written now.
  gen.first_write = first;
  gen.last_write = now;
  gen.tokens_written = gen.output->length();
  RequestOutcome o = outcome(gen, now);
  std::string body = encoder.full_body(o);
  remember_if_responses(gen);
  if (fault.kind == FaultKind::kMalformed) body.resize(body.size() / 2);  // cut short: not valid JSON
  const HttpReply reply{200, "application/json", std::move(body), {}};
  const bool keep = co_await write_reply(reply, version, keep_alive);
  if (!keep && !keep_alive) co_return false;
  co_return keep;
}

net::awaitable<void> Connection::reject(const ApiError& error) {
  spdlog::debug("rejecting request: {} {}", error.status, error.message);
  deadline_.arm(kRejectLinger);  // covers the write and the drain
  const std::string wire = serialize_reply(error_reply(error), 11, false);
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

net::awaitable<void> serve_connection(tcp::socket socket, SharedState& shared) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // tokens are small writes: never hold them back
  // Kernel receive times of the request bytes (Connection::receive): the ground truth's clock
  // starts when a request reached the host. Without it (an old kernel), the read's own time.
  const int stamp_flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_TIMESTAMPING, &stamp_flags, sizeof stamp_flags);
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
