// Fuzz target: the client's HTTP/1.1 response reading on the plain-TCP path
// (Http1ResponseParser, driven as loadgen/src/net/asio_transport.cpp's PlainExchange drives it),
// feeding a RequestTracker; and, differentially, Beast's parser (still the TLS path's): when both
// accept a final response, they must agree on its status, keep-alive and body bytes.
//
// The input is handed out in pieces (sizes from a generator seeded by the input's hash, at most
// `1 + byte1` bytes, or all at once when byte1 is 255), then EOF; each piece goes through a
// 4 KiB buffer as the connection's reads do.
//
// Input layout: byte 0: bit0 chat, bit1 streaming request; byte 1: max piece size; then the
// raw HTTP response.

// <utility> before any Boost.Asio header (Boost 1.74 with clang/libstdc++).
#include <utility>

#include <array>
#include <cctype>
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
#include "llmload/loadgen/net/http1_parser.hpp"
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

// Beast's reading of the same bytes (all of them, then EOF): status, keep-alive and body, or
// nothing when it rejects them or the response is informational.
struct BeastView {
  unsigned status = 0;
  bool keep_alive = false;
  std::string body;
};
std::optional<BeastView> beast_parse(std::string_view wire) {
  TimePoint t(std::chrono::seconds(1));
  PieceStream sock(wire, 0, 1, t);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(64 * 1024);
  beast::error_code ec;
  http::read_header(sock, buffer, parser, ec);
  if (ec || parser.get().result_int() < 200) return std::nullopt;
  BeastView v;
  std::array<char, 4096> buf{};
  for (std::size_t rounds = 0; !parser.is_done() && rounds < 4 * wire.size() + 16; ++rounds) {
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    http::read_some(sock, buffer, parser, ec);
    v.body.append(buf.data(), buf.size() - parser.get().body().size);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return std::nullopt;
  }
  if (!parser.is_done()) return std::nullopt;
  v.status = parser.get().result_int();
  v.keep_alive = parser.keep_alive();
  return v;
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
  llmload::net::Http1ResponseParser parser;
  std::array<char, 4096> buf{};
  tracker.on_sent(now);

  // PlainExchange::read() / consume() / on_eof()
  std::string body;
  bool completed = false;
  bool ok = false;
  for (std::size_t rounds = 0; !completed; ++rounds) {
    FUZZ_CHECK(rounds <= 4 * wire.size() + 16);  // every read makes progress
    beast::error_code ec;
    const std::size_t n = sock.read_some(asio::buffer(buf), ec);
    const bool head_before = parser.in_head();  // no body handed to the tracker yet
    if (ec) {  // EOF
      const bool head = parser.in_head();
      const auto r = parser.eof();
      if (r.done) {
        tracker.on_complete(now, TransportError{});
        ok = true;
      } else {
        FUZZ_CHECK(r.error != nullptr);
        tracker.on_complete(now, TransportError{ErrorClass::kIncomplete,
                                                std::string(head ? "read response header: " : "read response body: ") +
                                                    r.error});
        // In the body, a stream that already ended ([DONE]) stays a success, as RequestTracker
        // rules; before the head is complete, never.
        FUZZ_CHECK(!tracker.record().ok() || (!head && tracker.record().error == ErrorClass::kNone));
      }
      break;
    }
    const auto r = parser.feed(buf.data(), n);
    FUZZ_CHECK(r.consumed <= n);
    FUZZ_CHECK(r.body.size() <= r.consumed);
    if (r.error != nullptr) {
      tracker.on_complete(now, TransportError{ErrorClass::kProtocol, std::string("read response: ") + r.error});
      // As at EOF: bad framing after a stream that already ended ([DONE]) leaves it a success
      // (RequestTracker: a transport error once the stream is finished is harmless); in the head,
      // never.
      FUZZ_CHECK(!tracker.record().ok() || (!head_before && tracker.record().error == ErrorClass::kNone));
      break;
    }
    FUZZ_CHECK(r.done || r.consumed == n);  // input is only left over past the end of the message
    if (r.headers) {
      if (!parser.retry_after().empty()) tracker.on_header_field("Retry-After", parser.retry_after());
      tracker.on_headers(now, parser.status(), parser.content_type());
    }
    body.append(r.body);
    if (!r.body.empty() && !tracker.on_body(now, r.body)) {
      tracker.on_complete(now, TransportError{ErrorClass::kCanceled, "aborted by the client"});
      FUZZ_CHECK(!tracker.record().ok());
      break;
    }
    if (r.done) {
      tracker.on_complete(now, TransportError{});
      ok = true;
      completed = true;
    }
  }
  llmload::fuzz::check_completed_tracker(tracker);
  if (!ok) return 0;
  FUZZ_CHECK(parser.done());
  FUZZ_CHECK(parser.status() >= 200 && parser.status() <= 999);
  // Differential: where Beast also reads a final response, both agree; except for a head with
  // both Transfer-Encoding and Content-Length, where we follow RFC 9112 6.3 (Transfer-Encoding
  // wins; a last coding other than chunked reads to the end of the connection) and Beast does not.
  std::string head_lower(wire.substr(0, std::min(wire.find("\r\n\r\n"), wire.size())));
  for (char& ch : head_lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool both_framings =
      head_lower.find("\ntransfer-encoding:") != std::string::npos && head_lower.find("\ncontent-length:") != std::string::npos;
  if (const auto b = both_framings ? std::nullopt : beast_parse(wire)) {
    FUZZ_CHECK(b->status == static_cast<unsigned>(parser.status()));
    FUZZ_CHECK(b->body == body);
  }
  return 0;
}
