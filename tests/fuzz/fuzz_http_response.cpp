// Fuzz target: the client's HTTP/1.1 response reading, configured exactly as
// loadgen/src/net/asio_transport.cpp configures it, feeding a RequestTracker.
//
// A fake SyncReadStream hands out the input in pieces (sizes from a generator seeded by the
// input's hash, at most `1 + byte1` bytes, or all at once when byte1 is 255), then EOF. Beast's
// own read_header/read_some (the synchronous twins of the async operations the transport uses,
// sharing their algorithm) parse it into a response_parser<buffer_body> with header_limit 64 KiB
// and body_limit max uint64, reading the body through a 16 KiB buffer. The observer calls and
// the error mapping follow the transport's read_header/read_body/fail.
//
// Input layout: byte 0: bit0 chat, bit1 streaming request; byte 1: max piece size; then the
// raw HTTP response.

// <utility> before any Boost.Asio header (Boost 1.74 with clang/libstdc++).
#include <utility>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include "fuzz_check.hpp"
#include "llmload/loadgen/net/io_error.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "tracker_checks.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using llmload::fuzz::fnv1a;
using llmload::fuzz::splitmix;
using llmload::ApiKind;
using llmload::RequestTracker;
using llmload::TimePoint;
using llmload::TransportError;
using llmload::analysis::ErrorClass;

// A SyncReadStream over a byte string: each read_some returns the next piece, then EOF.
class PieceStream {
 public:
  using executor_type = asio::any_io_executor;

  PieceStream(std::string_view bytes, std::size_t max_piece, std::uint64_t seed, TimePoint& now)
      : bytes_(bytes), max_piece_(max_piece), rng_(seed), now_(now) {}

  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers, beast::error_code& ec) {
    ec = {};
    ++reads_;
    if (pos_ == bytes_.size()) {
      ec = asio::error::eof;
      return 0;
    }
    now_ += std::chrono::microseconds(splitmix(rng_) % 100);
    std::size_t want = max_piece_ == 0 ? bytes_.size() - pos_ : 1 + splitmix(rng_) % max_piece_;
    want = std::min(want, bytes_.size() - pos_);
    const std::size_t n = asio::buffer_copy(buffers, asio::buffer(bytes_.data() + pos_, want));
    pos_ += n;
    return n;
  }

  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers) {
    beast::error_code ec;
    const std::size_t n = read_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return n;
  }

  std::size_t reads() const { return reads_; }

 private:
  std::string_view bytes_;
  std::size_t max_piece_;
  std::size_t pos_ = 0;
  std::size_t reads_ = 0;
  std::uint64_t rng_;
  TimePoint& now_;
};

// The transport's error classification (the same function Exchange::fail() uses).
TransportError transport_error(ErrorClass cls, const char* what, beast::error_code ec) {
  return TransportError{llmload::net::classify_io_error(cls, ec), std::string(what) + ": " + ec.message()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const ApiKind api = (data[0] & 1) != 0 ? ApiKind::kChat : ApiKind::kCompletions;
  const bool stream = (data[0] & 2) != 0;
  const std::size_t max_piece = data[1] == 255 ? 0 : std::size_t{1} + data[1];
  const std::string_view wire(reinterpret_cast<const char*>(data) + 2, size - 2);

  const TimePoint run_start(std::chrono::seconds(1000));
  TimePoint now = run_start + std::chrono::milliseconds(1);
  llmload::analysis::RequestRecord record;
  record.requested_input_tokens = 16;
  record.requested_output_tokens = 16;
  RequestTracker tracker(record, run_start, api, stream);
  PieceStream sock(wire, max_piece, fnv1a(wire), now);
  beast::flat_buffer buffer;

  // Exchange::write()
  std::optional<http::response_parser<http::buffer_body>> parser;
  parser.emplace();
  parser->body_limit(std::numeric_limits<std::uint64_t>::max());
  parser->header_limit(64 * 1024);
  std::array<char, 16384> body_buf{};
  tracker.on_sent(now);

  // Exchange::read_header()
  beast::error_code ec;
  http::read_header(sock, buffer, *parser, ec);
  if (ec) {
    // A fresh connection: no retry; fail_or_retry -> fail(kProtocol, ...).
    tracker.on_complete(now, transport_error(ErrorClass::kProtocol, "read response header", ec));
    llmload::fuzz::check_completed_tracker(tracker);
    FUZZ_CHECK(!tracker.record().ok());
    return 0;
  }
  FUZZ_CHECK(parser->is_header_done());
  {
    const auto& h = parser->get();
    if (auto it = h.find(http::field::retry_after); it != h.end()) {
      const auto v = it->value();
      tracker.on_header_field("Retry-After", std::string_view(v.data(), v.size()));
    }
    const auto ct = h[http::field::content_type];
    tracker.on_headers(now, static_cast<int>(h.result_int()), std::string_view(ct.data(), ct.size()));
  }

  // Exchange::read_body(), looped.
  std::uint64_t delivered = 0;
  std::size_t rounds = 0;
  while (true) {
    FUZZ_CHECK(++rounds <= 4 * wire.size() + 16);  // every round makes progress
    if (parser->is_done()) {
      tracker.on_complete(now, TransportError{});
      break;
    }
    parser->get().body().data = body_buf.data();
    parser->get().body().size = body_buf.size();
    http::read_some(sock, buffer, *parser, ec);
    const std::size_t n = body_buf.size() - parser->get().body().size;
    if (ec == http::error::need_buffer) ec = {};
    delivered += n;
    if (n > 0 && !tracker.on_body(now, std::string_view(body_buf.data(), n))) {
      tracker.on_complete(now, TransportError{ErrorClass::kCanceled, "aborted by the client"});
      FUZZ_CHECK(!tracker.record().ok());
      break;
    }
    if (ec) {
      tracker.on_complete(now, transport_error(ErrorClass::kIncomplete, "read response body", ec));
      FUZZ_CHECK(!tracker.record().ok() || tracker.record().error == ErrorClass::kNone);
      break;
    }
  }
  llmload::fuzz::check_completed_tracker(tracker);
  // A finished body has its declared length (1xx, 204 and 304 responses have no body).
  const unsigned status = parser->get().result_int();
  const bool bodyless = status / 100 == 1 || status == 204 || status == 304;
  if (parser->is_done() && !bodyless) {
    if (const auto len = parser->content_length(); len && !parser->chunked()) FUZZ_CHECK(delivered == *len);
  }
  return 0;
}
