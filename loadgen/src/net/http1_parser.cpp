#include "llmload/loadgen/net/http1_parser.hpp"

#include <algorithm>
#include <cstring>

namespace llmload::net {

namespace {

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 32 || u >= 127) return false;
  return std::strchr("()<>@,;:\\\"/[]?={}", c) == nullptr;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The next comma-separated element of a field value.
std::string_view next_element(std::string_view& list) {
  const std::size_t comma = list.find(',');
  std::string_view e = list.substr(0, comma);
  list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  return trim(e);
}

// A complete line just appended to `buf` (it ends with '\n'): is it empty ("\n" or "\r\n")?
bool blank_line_at_end(const std::string& buf) {
  const std::size_t s = buf.size();
  if (s == 1) return true;
  if (s == 2 && buf[0] == '\r') return true;
  if (s >= 2 && buf[s - 2] == '\n') return true;
  return s >= 3 && buf[s - 2] == '\r' && buf[s - 3] == '\n';
}

}  // namespace

const char* Http1ResponseParser::parse_head() {
  std::string_view h = head_;
  auto next_line = [&h]() {
    const std::size_t nl = h.find('\n');
    std::string_view line = h.substr(0, nl);
    h = nl == std::string_view::npos ? std::string_view{} : h.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  const std::string_view status_line = next_line();
  // HTTP/1.x SSS[ reason]
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[7] < '0' ||
      status_line[7] > '9' || status_line[8] != ' ' || (status_line.size() > 12 && status_line[12] != ' ')) {
    return "malformed status line (expected HTTP/1.x and a 3-digit status)";
  }
  int status = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (status_line[i] < '0' || status_line[i] > '9') return "malformed status code";
    status = status * 10 + (status_line[i] - '0');
  }
  if (status < 100) return "malformed status code";
  const bool http11 = status_line[7] >= '1';
  bool close = false;
  bool keep = false;
  bool te_seen = false;
  chunked_ = false;
  has_length_ = false;
  length_ = 0;
  content_type_.clear();
  retry_after_.clear();
  location_.clear();
  content_encoding_.clear();
  while (!h.empty()) {
    const std::string_view line = next_line();
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return "obsolete header line folding";
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return "malformed header field (no name)";
    const std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) return "malformed header field name";
    const std::string_view value = trim(line.substr(colon + 1));
    for (char c : value) {
      if (c == '\0' || c == '\r') return "malformed header field value";
    }
    if (iequals(name, "content-length")) {
      if (value.empty() || value.size() > 18) return "bad Content-Length";
      std::uint64_t v = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return "bad Content-Length";
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (has_length_ && v != length_) return "conflicting Content-Length fields";
      has_length_ = true;
      length_ = v;
    } else if (iequals(name, "transfer-encoding")) {
      te_seen = true;
      std::string_view list = value;
      std::string_view last;
      while (!list.empty()) {
        std::string_view e = next_element(list);
        e = e.substr(0, e.find(';'));  // transfer parameters are not ours to read
        e = trim(e);
        if (!std::all_of(e.begin(), e.end(), is_token_char)) return "malformed Transfer-Encoding";
        if (!e.empty()) last = e;
      }
      chunked_ = iequals(last, "chunked");
    } else if (iequals(name, "connection")) {
      std::string_view list = value;
      while (!list.empty()) {
        const std::string_view e = next_element(list);
        if (iequals(e, "close")) close = true;
        if (iequals(e, "keep-alive")) keep = true;
      }
    } else if (iequals(name, "content-type")) {
      content_type_.assign(value);
    } else if (iequals(name, "retry-after")) {
      retry_after_.assign(value);
    } else if (iequals(name, "location")) {
      location_.assign(value.substr(0, 512));
    } else if (iequals(name, "content-encoding")) {
      content_encoding_.assign(value.substr(0, 64));
    }
  }
  status_ = status;
  keep_alive_ = http11 ? !close : keep && !close;
  if (status < 200) {
    if (status == 101) return "unexpected 101 Switching Protocols";
    return nullptr;  // informational: the final response follows (state stays kHead)
  }
  if (status == 204 || status == 304) {
    state_ = State::kDone;
  } else if (te_seen) {
    // Transfer-Encoding wins over Content-Length (RFC 9112 6.3); a coding other than chunked
    // last means the body runs to the end of the connection. Either way the connection is not
    // reused when both were sent.
    if (has_length_) keep_alive_ = false;
    if (chunked_) {
      state_ = State::kChunkSize;
    } else {
      state_ = State::kUntilClose;
      keep_alive_ = false;
    }
  } else if (has_length_) {
    remaining_ = length_;
    state_ = length_ == 0 ? State::kDone : State::kLength;
  } else {
    state_ = State::kUntilClose;
    keep_alive_ = false;
  }
  return nullptr;
}

Http1ResponseParser::Result Http1ResponseParser::feed(char* data, std::size_t n) {
  Result r;
  if (state_ == State::kError) return fail(r, "the response was already malformed");
  if (n > 0) got_some_ = true;
  char* out = data;  // body bytes are compacted here: out <= data + i always
  std::size_t i = 0;
  auto finish = [&]() {
    r.consumed = i;
    r.body = std::string_view(data, static_cast<std::size_t>(out - data));
    r.done = state_ == State::kDone;
    return r;
  };
  while (i < n && state_ != State::kDone) {
    switch (state_) {
      case State::kHead:
      case State::kTrailer: {
        const bool trailer = state_ == State::kTrailer;
        const void* nl = std::memchr(data + i, '\n', n - i);
        const std::size_t end = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) + 1 : n;
        head_.append(data + i, end - i);
        i = end;
        if (head_.size() > kHeaderLimit) {
          return fail(r, trailer ? "the chunked body's trailer is larger than 64 KiB"
                                 : "the response head is larger than 64 KiB");
        }
        if (nl == nullptr || !blank_line_at_end(head_)) break;
        if (trailer) {
          head_.clear();
          state_ = State::kDone;
          break;
        }
        if (head_.size() <= 2) {  // empty lines before the status line: ignored
          head_.clear();
          break;
        }
        const char* e = parse_head();
        last_head_.swap(head_);  // kept for --trace-http; no copy
        head_.clear();
        if (e != nullptr) return fail(r, e);
        if (state_ != State::kHead) r.headers = true;  // else a 1xx: the final head follows
        break;
      }
      case State::kChunkSize: {
        const void* nl = std::memchr(data + i, '\n', n - i);
        const std::size_t end = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - data) : n;
        line_.append(data + i, end - i);
        i = end;
        if (line_.size() > kChunkLineLimit) return fail(r, "chunk size line too long");
        if (nl == nullptr) break;
        ++i;  // the '\n'
        std::string_view line = line_;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        std::uint64_t size = 0;
        std::size_t digits = 0;
        for (char c : line) {
          int v;
          if (c >= '0' && c <= '9') {
            v = c - '0';
          } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
          } else if (c >= 'A' && c <= 'F') {
            v = c - 'A' + 10;
          } else if (c == ';' || c == ' ' || c == '\t') {
            break;  // chunk extensions (ignored)
          } else {
            return fail(r, "bad chunk size");
          }
          if (++digits > 15) return fail(r, "chunk size too large");
          size = size * 16 + static_cast<std::uint64_t>(v);
        }
        if (digits == 0) return fail(r, "bad chunk size");
        line_.clear();
        if (size == 0) {
          state_ = State::kTrailer;
        } else {
          remaining_ = size;
          state_ = State::kChunkData;
        }
        break;
      }
      case State::kChunkData:
      case State::kLength: {
        const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, n - i));
        if (out != data + i) std::memmove(out, data + i, k);
        out += k;
        i += k;
        remaining_ -= k;
        if (remaining_ == 0) state_ = state_ == State::kLength ? State::kDone : State::kChunkDataEnd;
        break;
      }
      case State::kChunkDataEnd: {
        // CRLF after the chunk's data (a bare LF is accepted).
        const char c = data[i];
        if (c == '\r' && line_.empty()) {
          line_.push_back('\r');
          ++i;
        } else if (c == '\n') {
          line_.clear();
          ++i;
          state_ = State::kChunkSize;
        } else {
          return fail(r, "missing CRLF after chunk data");
        }
        break;
      }
      case State::kUntilClose: {
        const std::size_t k = n - i;
        if (out != data + i) std::memmove(out, data + i, k);
        out += k;
        i = n;
        break;
      }
      case State::kDone:
      case State::kError:
        break;
    }
  }
  return finish();
}

Http1ResponseParser::Result Http1ResponseParser::eof() {
  Result r;
  switch (state_) {
    case State::kUntilClose:
      state_ = State::kDone;
      r.done = true;
      return r;
    case State::kDone:
      r.done = true;
      return r;
    case State::kHead:
      return fail(r, nothing_received() ? "the server closed the connection before responding"
                                        : "the connection closed inside the response head");
    case State::kLength:
      return fail(r, "the connection closed before the end of the body (Content-Length)");
    case State::kChunkSize:
    case State::kChunkData:
    case State::kChunkDataEnd:
    case State::kTrailer:
      return fail(r, "the connection closed before the end of the chunked body");
    case State::kError:
      break;
  }
  return fail(r, "the response was already malformed");
}

}  // namespace llmload::net
