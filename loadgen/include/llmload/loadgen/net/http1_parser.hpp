#pragma once
// An incremental HTTP/1.1 response parser for the client's plain-TCP hot path: status line and
// header fields (only those the client uses are kept), then the body framed by chunked
// transfer coding, Content-Length, or the end of the connection. No allocation per read: body
// bytes are handed back as a view into the caller's buffer, which the parser rewrites in place to
// drop the chunk framing. Independent of Asio, so it is unit-tested and fuzzed on its own.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmload::net {

class Http1ResponseParser {
 public:
  static constexpr std::size_t kHeaderLimit = 64 * 1024;  // status line + fields + trailers
  static constexpr std::size_t kChunkLineLimit = 4096;    // one chunk-size line with extensions

  struct Result {
    std::size_t consumed = 0;  // input bytes used; < n only when the message ended (or an error)
    bool headers = false;      // the response head completed during this call
    std::string_view body;     // de-chunked body bytes found in this call: a view into the input
    bool done = false;         // the message is complete
    const char* error = nullptr;  // a malformed response (HTTP syntax): why, as a phrase
  };

  /// Feeds the next bytes of the connection. `data` may be rewritten in place (the returned body
  /// view points into it). Informational (1xx) responses before the final one are skipped.
  Result feed(char* data, std::size_t n);

  /// The connection ended (EOF). Completes a body framed by the end of the connection; for any
  /// other unfinished message, returns an error phrase (the response is incomplete).
  Result eof();

  /// Valid once a Result had `headers` set.
  int status() const { return status_; }
  bool keep_alive() const { return keep_alive_; }
  /// The final response head as received (status line and fields), once headers were reported.
  const std::string& head() const { return last_head_; }
  const std::string& content_type() const { return content_type_; }
  const std::string& retry_after() const { return retry_after_; }
  const std::string& location() const { return location_; }                  // a redirect's target
  const std::string& content_encoding() const { return content_encoding_; }  // gzip, br, ...
  /// No byte of a response has been received (a connection closed now never took the request).
  bool nothing_received() const { return state_ == State::kHead && head_.empty() && !got_some_; }
  bool in_head() const { return state_ == State::kHead; }
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kHead, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kLength, kUntilClose, kDone, kError };

  const char* parse_head();  // head_ holds a complete head: nullptr or an error
  Result fail(Result r, const char* why) {
    state_ = State::kError;
    r.error = why;
    return r;
  }

  State state_ = State::kHead;
  std::string head_;     // the head (or trailer) so far
  std::string last_head_;  // the last complete head parsed
  std::string line_;     // a chunk-size line split across reads
  bool got_some_ = false;
  int status_ = 0;
  bool keep_alive_ = true;
  bool chunked_ = false;
  bool has_length_ = false;
  std::uint64_t length_ = 0;     // Content-Length
  std::uint64_t remaining_ = 0;  // of the current chunk or of the Content-Length body
  std::string content_type_;
  std::string retry_after_;
  std::string location_;
  std::string content_encoding_;
};

}  // namespace llmload::net
