#pragma once
// A tiny blocking HTTP/1.1 client over POSIX sockets, for the server's integration tests only.
// Deliberately not Beast: it keeps these tests fast to compile and independent of the code
// under test. Handles Content-Length, chunked transfer encoding (each chunk is kept with its
// arrival time) and close-delimited bodies. Every receive times out after 10 s.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::testing {

struct TimedChunk {
  std::string data;
  std::chrono::steady_clock::time_point arrived;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;                            ///< de-chunked
  std::vector<TimedChunk> chunks;              ///< for chunked bodies, in order
  bool chunked = false;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class HttpConnection {
 public:
  explicit HttpConnection(int port);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// Writes raw bytes; throws on failure.
  void send_raw(std::string_view bytes);
  /// Writes one request (Host, Content-Type: application/json and Content-Length added).
  void send_request(std::string_view method, std::string_view target, std::string_view body = "",
                    std::string_view extra_headers = "");
  /// Reads one response (a 1xx interim response counts as one). Throws on timeout/malformed input.
  HttpResponse read_response();
  /// Reads the status line and headers only; then next_chunk() reads the body chunk by chunk.
  HttpResponse read_head();
  /// The next chunk's data (empty at the terminating chunk). Throws on EOF or timeout.
  TimedChunk next_chunk();
  /// True when the server has closed the connection (waits up to `timeout`).
  bool wait_closed(std::chrono::milliseconds timeout);
  /// True when a response byte is buffered or arrives within `timeout` (or the server closes).
  bool readable(std::chrono::milliseconds timeout);
  /// Everything the server sends until it closes (a reset counts as a close), or nullopt if it
  /// has not closed within `timeout`.
  std::optional<std::string> read_to_close(std::chrono::milliseconds timeout);
  void close();

 private:
  bool fill();  ///< reads more into buffer_; false on EOF
  std::string read_line();
  std::string read_exact(std::size_t n);

  int fd_ = -1;
  std::string buffer_;
  std::size_t pos_ = 0;
  std::chrono::steady_clock::time_point last_fill_;
};

/// One request on a fresh connection.
HttpResponse http_request(int port, std::string_view method, std::string_view target, std::string_view body = "");

/// The data payloads of an SSE body ("data: X\n\n" -> "X").
std::vector<std::string> sse_payloads(const std::string& body);

}  // namespace llmload::testing
