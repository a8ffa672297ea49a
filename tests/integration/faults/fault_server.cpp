#include "fault_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace llmload::testing {
namespace {

bool send_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::string chunk(const std::string& data) {
  char len[32];
  std::snprintf(len, sizeof len, "%zx\r\n", data.size());
  return std::string(len) + data + "\r\n";
}

std::string event(const std::string& data) { return chunk("data: " + data + "\n\n"); }

std::string token_event(int k) {
  return event("{\"id\":\"cmpl-f\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" t" +
               std::to_string(k) + "\",\"logprobs\":null,\"finish_reason\":null}]}");
}

std::string usage_event(int prompt, int completion) {
  return event("{\"id\":\"cmpl-f\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":" +
               std::to_string(prompt) + ",\"completion_tokens\":" + std::to_string(completion) +
               ",\"total_tokens\":" + std::to_string(prompt + completion) + "}}");
}

const char* kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";

std::string json_response(int status, const char* reason, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

// Makes the coming close() send a TCP reset.
void arm_reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

}  // namespace

FaultServer::FaultServer(std::vector<Fault> script) : script_(std::move(script)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 128) != 0) {
    throw std::runtime_error("fault server: bind/listen failed");
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultServer::~FaultServer() {
  stop_ = true;
  close_listener();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

void FaultServer::close_listener() {
  std::lock_guard<std::mutex> lock(mu_);
  if (listen_fd_ >= 0) {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void FaultServer::accept_loop() {
  while (!stop_) {
    int lfd;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lfd = listen_fd_;
    }
    if (lfd < 0) return;
    pollfd p{lfd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(fd);
    workers_.emplace_back([this, fd] {
      serve(fd);
      // The connection ends here, and only here: unlisted under the lock, then closed.
      std::lock_guard<std::mutex> done(mu_);
      fds_.erase(std::find(fds_.begin(), fds_.end(), fd));
      ::close(fd);
    });
  }
}

// Sleeps up to `ms`, returning false early if the server stops or the peer closes.
bool FaultServer::wait_or_stop(int fd, int ms) {
  for (int waited = 0; waited < ms && !stop_; waited += 20) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {
      char c;
      if (::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;  // peer closed
    }
  }
  return !stop_;
}

void FaultServer::serve(int fd) {
  std::string buf;
  char tmp[65536];
  while (!stop_) {
    // Read one request: head, then Content-Length bytes of body.
    std::size_t head_end;
    while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) return;
      buf.append(tmp, static_cast<std::size_t>(n));
    }
    std::string head = buf.substr(0, head_end);
    std::size_t content_length = 0;
    std::string auth;
    for (std::size_t pos = 0; pos < head.size();) {
      std::size_t eol = head.find("\r\n", pos);
      if (eol == std::string::npos) eol = head.size();
      std::string line = head.substr(pos, eol - pos);
      std::string lower = line;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower.rfind("content-length:", 0) == 0) content_length = std::stoul(line.substr(15));
      if (lower.rfind("authorization:", 0) == 0) auth = line.substr(14);
      pos = eol + 2;
    }
    while (buf.size() < head_end + 4 + content_length) {
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) return;
      buf.append(tmp, static_cast<std::size_t>(n));
    }
    buf.erase(0, head_end + 4 + content_length);

    const auto not_found = [&] {
      return send_all(fd, json_response(404, "Not Found", R"({"detail":"Not Found"})"));
    };
    if (bare_ && (head.rfind("GET /v1/models", 0) == 0 || head.rfind("POST /tokenize", 0) == 0 ||
                  head.rfind("POST /detokenize", 0) == 0)) {
      if (!not_found()) return;
      continue;
    }
    if (head.rfind("GET /v1/models", 0) == 0) {
      const std::string models = R"({"object":"list","data":[{"id":"fault-model","object":"model"}]})";
      if (refuse_after_probe_) {
        // Stop listening before answering, and do not offer the connection for reuse: every
        // request of the run then meets a refused connection, whatever the timing.
        close_listener();
        send_all(fd, json_response(200, "OK", models, "Connection: close\r\n"));
        return;
      }
      send_all(fd, json_response(200, "OK", models));
      continue;
    }
    if (head.rfind("GET ", 0) == 0) {
      // Anything else read-only (llmload's /metrics scrape): this server has none, and the
      // script is only for the generation requests.
      send_all(fd, json_response(404, "Not Found", R"({"error":{"message":"not found"}})"));
      continue;
    }
    const int n = posts_++;
    const Fault f = script_[static_cast<std::size_t>(n) % script_.size()];
    switch (f) {
      case Fault::kOk:
      case Fault::kCloseAfter: {
        std::string out = kSseHead;
        for (int k = 0; k < 4; ++k) out += token_event(k);
        out += usage_event(3, 4) + event("[DONE]") + "0\r\n\r\n";
        if (!send_all(fd, out)) return;
        if (f == Fault::kCloseAfter) {
          // Close the keep-alive connection right after the response (FIN follows the data), and
          // wait for the client to notice.
          ::shutdown(fd, SHUT_WR);
          wait_or_stop(fd, 2000);
          return;
        }
        break;
      }
      case Fault::kResetBefore:
        arm_reset(fd);
        return;
      case Fault::kResetMid:
        send_all(fd, std::string(kSseHead) + token_event(0) + token_event(1));
        wait_or_stop(fd, 50);
        arm_reset(fd);
        return;
      case Fault::kStallForever:
        send_all(fd, std::string(kSseHead) + token_event(0));
        while (wait_or_stop(fd, 100)) {
        }
        return;
      case Fault::kDoneNoEnd: {
        std::string out = kSseHead;
        for (int k = 0; k < 4; ++k) out += token_event(k);
        send_all(fd, out + usage_event(3, 4) + event("[DONE]"));  // no "0\r\n\r\n"
        while (wait_or_stop(fd, 100)) {
        }
        return;
      }
      case Fault::kTrickleForever:
        send_all(fd, std::string(kSseHead) + token_event(0));
        while (wait_or_stop(fd, 100)) {
          if (!send_all(fd, chunk(": still here\n"))) break;
        }
        return;
      case Fault::kEndlessTokens: {
        // Bounded by the client: it leaves (closes) once it has had enough, or the test ends.
        if (!send_all(fd, std::string(kSseHead))) return;
        std::string burst;
        for (int k = 0; k < 64; ++k) burst += token_event(k);
        for (int sent = 0; sent < 1'000'000; ++sent) {
          if (!send_all(fd, burst)) break;
        }
        return;
      }
      case Fault::kHttp500Json:
        send_all(fd, json_response(500, "Internal Server Error",
                                   R"({"error":{"message":"engine crashed","type":"InternalServerError","param":null,"code":500}})"));
        break;
      case Fault::kRedirect:
        send_all(fd, "HTTP/1.1 301 Moved Permanently\r\nLocation: http://127.0.0.1:9/v1/completions\r\n"
                     "Content-Length: 0\r\n\r\n");
        break;
      case Fault::kGzipStream: {
        const std::string gz("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x4b\x49\x2c\x49\xb4\x02\x00", 17);
        send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
                     "Content-Length: " + std::to_string(gz.size()) + "\r\n\r\n" + gz);
        break;
      }
      case Fault::kBareStream: {
        std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        const bool chat = head.rfind("POST /v1/chat/completions", 0) == 0;
        if (chat) {
          out += event(R"({"id":"chat-b","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})");
          out += event(R"({"id":"chat-b","choices":[{"index":0,"delta":{"reasoning_content":" Let me think."}}]})");
        }
        for (const char* words : {" The quick brown", " fox jumps over", " the lazy dog."}) {
          out += event(chat ? std::string(R"({"id":"chat-b","choices":[{"index":0,"delta":{"content":")") + words + "\"}}]}"
                            : std::string(R"({"id":"cmpl-b","choices":[{"index":0,"text":")") + words +
                                  "\",\"finish_reason\":null}]}");
        }
        out += event(chat ? R"({"id":"chat-b","choices":[{"index":0,"delta":{},"finish_reason":"length"}]})"
                          : R"({"id":"cmpl-b","choices":[{"index":0,"text":"","finish_reason":"length"}]})");
        if (!send_all(fd, out + event("[DONE]") + "0\r\n\r\n")) return;
        break;
      }
      case Fault::kHttp503Text: {
        std::string body = "Service Unavailable: upstream overloaded";
        send_all(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body);
        break;
      }
      case Fault::kHttp429:
        send_all(fd, json_response(429, "Too Many Requests",
                                   R"({"error":{"message":"rate limit reached","type":"RateLimitError","param":null,"code":429}})",
                                   "Retry-After: 2\r\n"));
        break;
      case Fault::kMalformedSse:
        send_all(fd, std::string(kSseHead) + token_event(0) + event("{this is not json") + event("[DONE]") + "0\r\n\r\n");
        break;
      case Fault::kTruncatedEvent:
        send_all(fd, std::string(kSseHead) + token_event(0) + chunk("data: {\"choices\":[{\"text\":\" ha") + "0\r\n\r\n");
        break;
      case Fault::kHugeEvent: {
        std::string big(5 * 1024 * 1024, 'x');
        send_all(fd, std::string(kSseHead) + event("{\"choices\":[{\"index\":0,\"text\":\"" + big + "\"}]}") +
                         usage_event(3, 1) + event("[DONE]") + "0\r\n\r\n");
        break;
      }
      case Fault::kInvalidUtf8:
        send_all(fd, std::string(kSseHead) + event("{\"choices\":[{\"index\":0,\"text\":\" \xc3\x28 \xff\"}]}") +
                         event("[DONE]") + "0\r\n\r\n");
        break;
      case Fault::kNoDone:
        send_all(fd, std::string(kSseHead) + token_event(0) + token_event(1) + usage_event(3, 2) + "0\r\n\r\n");
        break;
      case Fault::kStreamError:
        send_all(fd, std::string(kSseHead) + token_event(0) +
                         event(R"({"error":{"message":"out of KV cache","type":"InternalServerError","code":500}})") +
                         event("[DONE]") + "0\r\n\r\n");
        break;
      case Fault::kEchoAuth401:
        send_all(fd, json_response(401, "Unauthorized",
                                   "{\"error\":{\"message\":\"invalid key:" + auth +
                                       "\",\"type\":\"AuthenticationError\",\"param\":null,\"code\":401}}"));
        break;
    }
  }
}

}  // namespace llmload::testing
