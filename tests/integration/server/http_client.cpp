#include "http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace llmload::testing {
namespace {

constexpr int kTimeoutMs = 10000;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

HttpConnection::HttpConnection(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(std::string("connect: ") + std::strerror(err));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

HttpConnection::~HttpConnection() { close(); }

void HttpConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HttpConnection::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void HttpConnection::send_request(std::string_view method, std::string_view target, std::string_view body,
                                  std::string_view extra_headers) {
  std::string req;
  req.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  if (!body.empty() || method == "POST") {
    req.append("Content-Type: application/json\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  req.append(extra_headers).append("\r\n").append(body);
  send_raw(req);
}

bool HttpConnection::fill() {
  if (pos_ > 0 && pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  }
  pollfd p{fd_, POLLIN, 0};
  const int ready = ::poll(&p, 1, kTimeoutMs);
  if (ready == 0) throw std::runtime_error("timed out waiting for the server");
  if (ready < 0) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n < 0) {
    if (errno == ECONNRESET) return false;
    throw std::runtime_error(std::string("recv: ") + std::strerror(errno));
  }
  if (n == 0) return false;
  buffer_.append(buf, static_cast<std::size_t>(n));
  last_fill_ = std::chrono::steady_clock::now();
  return true;
}

std::string HttpConnection::read_line() {
  for (;;) {
    const auto eol = buffer_.find("\r\n", pos_);
    if (eol != std::string::npos) {
      std::string line = buffer_.substr(pos_, eol - pos_);
      pos_ = eol + 2;
      return line;
    }
    if (!fill()) throw std::runtime_error("connection closed in the middle of a line");
  }
}

std::string HttpConnection::read_exact(std::size_t n) {
  while (buffer_.size() - pos_ < n) {
    if (!fill()) throw std::runtime_error("connection closed in the middle of a body");
  }
  std::string out = buffer_.substr(pos_, n);
  pos_ += n;
  return out;
}

HttpResponse HttpConnection::read_head() {
  HttpResponse r;
  const std::string status_line = read_line();
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) {
    throw std::runtime_error("bad status line: " + status_line);
  }
  r.status = std::stoi(status_line.substr(9, 3));
  for (;;) {
    const std::string line = read_line();
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string::npos) throw std::runtime_error("bad header: " + line);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    r.headers[lower(line.substr(0, colon))] = value;
  }
  r.chunked = lower(r.header("transfer-encoding")) == "chunked";
  return r;
}

TimedChunk HttpConnection::next_chunk() {
  const std::string size_line = read_line();
  const std::size_t size = std::stoul(size_line, nullptr, 16);
  TimedChunk chunk;
  chunk.data = read_exact(size);
  if (read_line() != "") throw std::runtime_error("chunk not followed by CRLF");
  chunk.arrived = last_fill_;
  return chunk;
}

HttpResponse HttpConnection::read_response() {
  HttpResponse r = read_head();
  if (r.status / 100 == 1) return r;
  if (r.chunked) {
    for (;;) {
      TimedChunk c = next_chunk();
      if (c.data.empty()) break;
      r.body += c.data;
      r.chunks.push_back(std::move(c));
    }
  } else if (!r.header("content-length").empty()) {
    r.body = read_exact(std::stoul(r.header("content-length")));
  } else {
    while (fill()) {
    }
    r.body = buffer_.substr(pos_);
    pos_ = buffer_.size();
  }
  return r;
}

bool HttpConnection::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
  }
  return false;
}

bool HttpConnection::readable(std::chrono::milliseconds timeout) {
  if (pos_ < buffer_.size()) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

std::optional<std::string> HttpConnection::read_to_close(std::chrono::milliseconds timeout) {
  std::string out = buffer_.substr(pos_);
  buffer_.clear();
  pos_ = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return out;  // EOF or reset
    out.append(buf, static_cast<std::size_t>(n));
  }
}

HttpResponse http_request(int port, std::string_view method, std::string_view target, std::string_view body) {
  HttpConnection c(port);
  c.send_request(method, target, body);
  return c.read_response();
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto end = body.find("\n\n", pos);
    if (end == std::string::npos) throw std::runtime_error("unterminated SSE event");
    const std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) != 0) throw std::runtime_error("not a data event: " + event);
    out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

}  // namespace llmload::testing
