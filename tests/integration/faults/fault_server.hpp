#pragma once
// A purpose-built misbehaving OpenAI-style server for the fault tests: it answers GET /v1/models
// normally and each POST with the next fault of its script (cycling). Blocking POSIX sockets, a
// thread per connection, 127.0.0.1 only; stops (and closes every connection) on destruction.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace llmload::testing {

enum class Fault {
  kOk,               // a correct stream: 4 tokens, usage, [DONE]
  kResetBefore,      // read the request, then reset the connection (RST) before answering
  kResetMid,         // headers and two events, then RST
  kCloseAfter,       // a correct response advertising keep-alive, then close the connection
  kStallForever,     // headers and one event, then silence (until the client leaves)
  kTrickleForever,   // an empty comment line every 100 ms forever: never idle, never done
  kHttp500Json,      // 500 with an OpenAI error body
  kHttp503Text,      // 503 with a plain-text body
  kHttp429,          // 429 with Retry-After: 2 and a JSON body
  kMalformedSse,     // an event whose data is not JSON
  kTruncatedEvent,   // half an event, then the end of the body
  kHugeEvent,        // one 5 MB output event (valid), then usage and [DONE]
  kInvalidUtf8,      // an output event with invalid UTF-8 in its JSON
  kNoDone,           // a complete stream that never sends [DONE]
  kStreamError,      // an {"error":...} event inside the 200 stream, then [DONE]
  kEchoAuth401,      // 401 whose body echoes the Authorization header (a leaky server)
  kEndlessTokens,    // output events as fast as the socket takes them, forever (max_tokens ignored)
  kDoneNoEnd,        // a correct stream up to [DONE], then the chunked body never ends (silence)
  kRedirect,         // 301 to another address (Location), empty body
  kGzipStream,       // 200 text/event-stream with Content-Encoding: gzip (bytes that are not SSE)
  kBareStream,       // a correct stream as bare servers send it: no Content-Type, no usage, several
                     // words per event (" The quick brown fox jumps over the lazy dog." in 3 events;
                     // for chat after a role-only chunk and the reasoning " Let me think.")
};

class FaultServer {
 public:
  explicit FaultServer(std::vector<Fault> script);
  ~FaultServer();
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  /// Stop accepting (later connections are refused); open connections continue.
  void close_listener();
  /// POST requests seen so far.
  int posts() const { return posts_.load(); }
  /// Close the listener as soon as /v1/models has been answered (then every run request is refused).
  void refuse_after_probe() { refuse_after_probe_ = true; }
  /// Answer 404 to GET /v1/models and to POST /tokenize and /detokenize (a gateway-like server).
  void without_models_or_tokenize() { bare_ = true; }

 private:
  void accept_loop();
  void serve(int fd);
  bool wait_or_stop(int fd, int ms);

  std::vector<Fault> script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> refuse_after_probe_{false};
  std::atomic<bool> bare_{false};
  std::atomic<int> posts_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> fds_;
};

}  // namespace llmload::testing
