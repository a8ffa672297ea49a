#pragma once
// The lean receive path's response reader, shared by the two floor benches
// (raw_stream_floor.cpp: Asio reactor reads; uring_stream_floor.cpp: io_uring multishot receive):
// a small HTTP/1.1 head and chunked-body decoder of its own, llmload's SseParser, and per event
// either llmload's OpenAiStreamDecoder (nlohmann) or the DOM-free scan (fast, chunk_scan.hpp,
// falling back to the exact decoder when it declines). Not a general HTTP client: one known
// server, keep-alive, chunked streaming responses only.
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "chunk_scan.hpp"  // the decoder's own scan (loadgen/src/core)
#include "llmload/loadgen/sse_parser.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload_bench {

struct FloorCounts {
  std::int64_t tokens = 0;
  std::int64_t reads = 0;
  std::int64_t requests_done = 0;
  bool fast = false;
};

class FloorResponse {
 public:
  explicit FloorResponse(FloorCounts& counts) : counts_(counts) {}

  /// Ready for the next response on the connection.
  void reset() {
    st_ = State::kHead;
    head_.clear();
    size_ = 0;
    crlf_ = 0;
    decoder_ = llmload::OpenAiStreamDecoder(llmload::ApiKind::kChat);
    parser_ = llmload::SseParser();
  }

  /// Feeds one read's bytes; true when the response ended (its last chunk and trailer).
  bool feed(std::string_view b) {
    bool done = false;
    while (!b.empty() && !done) {
      switch (st_) {
        case State::kHead: {
          const std::size_t before = head_.size();
          head_.append(b);
          const auto e = head_.find("\r\n\r\n");
          if (e == std::string::npos) {
            b = {};
            break;
          }
          b.remove_prefix(e + 4 - before);
          st_ = State::kSize;
          size_ = 0;
          break;
        }
        case State::kSize: {
          const char c = b.front();
          b.remove_prefix(1);
          if (c == '\n') {
            st_ = size_ == 0 ? State::kTrailer : State::kData;
          } else if (c != '\r') {
            size_ = size_ * 16 + static_cast<std::size_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                                                                                                    : (c | 0x20) - 'a' + 10);
          }
          break;
        }
        case State::kData: {
          const std::size_t k = std::min(size_, b.size());
          parser_.feed(b.substr(0, k), [this](llmload::SseEvent&& ev) { on_event(ev); });
          size_ -= k;
          b.remove_prefix(k);
          if (size_ == 0) {
            st_ = State::kDataCrlf;
            crlf_ = 2;
          }
          break;
        }
        case State::kDataCrlf: {
          b.remove_prefix(1);
          if (--crlf_ == 0) {
            st_ = State::kSize;
            size_ = 0;
          }
          break;
        }
        case State::kTrailer: {
          const char c = b.front();
          b.remove_prefix(1);
          if (c == '\n') done = true;
          break;
        }
      }
    }
    if (done) ++counts_.requests_done;
    return done;
  }

 private:
  enum class State { kHead, kSize, kData, kDataCrlf, kTrailer };

  void on_event(const llmload::SseEvent& ev) {
    if (counts_.fast && ev.data != "[DONE]") {
      if (auto f = llmload::detail::scan_chunk(ev.data, llmload::ApiKind::kChat)) {
        if (f->output) ++counts_.tokens;
        return;
      }
    }
    const auto u = decoder_.decode(ev);
    if (u.kind == llmload::StreamUpdate::Kind::kOutput) counts_.tokens += u.tokens;
  }

  FloorCounts& counts_;
  State st_ = State::kHead;
  std::string head_;
  std::size_t size_ = 0;
  int crlf_ = 0;
  llmload::SseParser parser_;
  llmload::OpenAiStreamDecoder decoder_{llmload::ApiKind::kChat};
};

/// The streaming chat request every connection sends (keep-alive), OUTPUT_TOKENS tokens long.
inline std::string floor_request(std::string_view host, std::string_view port, long output_tokens) {
  const std::string body = fmt::format(
      R"({{"model":"llmload-mock","messages":[{{"role":"user","content":"a b c d e f g h i j k l m n o p"}}],)"
      R"("max_tokens":{},"min_tokens":{},"ignore_eos":true,"stream":true,"stream_options":{{"include_usage":true}}}})",
      output_tokens, output_tokens);
  return fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n"
      "Accept: text/event-stream\r\nContent-Length: {}\r\n\r\n{}",
      host, port, body.size(), body);
}

/// A positive whole number from the command line, or 0 when the text is not one.
inline long long floor_count(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  return (errno != 0 || end == text || *end != '\0' || v <= 0) ? 0 : v;
}

/// PORT CONNECTIONS REQUESTS OUTPUT_TOKENS (argv[2..5]) checked: an empty string, or what is wrong.
inline std::string floor_counts_error(char** argv) {
  if (const long long port = floor_count(argv[2]); port == 0 || port > 65535) {
    return fmt::format("PORT must be a number from 1 to 65535, not '{}'", argv[2]);
  }
  const char* names[] = {"CONNECTIONS", "REQUESTS", "OUTPUT_TOKENS"};
  for (int i = 0; i < 3; ++i) {
    if (floor_count(argv[3 + i]) == 0) {
      return fmt::format("{} must be a positive whole number, not '{}'", names[i], argv[3 + i]);
    }
  }
  return {};
}

/// The options after OUTPUT_TOKENS (argv[6..]): `--decode nlohmann|fast` into counts.fast, and
/// each of `flags` (e.g. "--timer") that is given into `given`. An empty string, or what is
/// wrong (an unknown option, or --decode without one of its two values).
inline std::string floor_options_error(int argc, char** argv, std::initializer_list<std::string_view> flags,
                                       FloorCounts& counts, std::vector<std::string_view>& given) {
  for (int i = 6; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--decode") {
      const std::string_view v = i + 1 < argc ? std::string_view(argv[++i]) : std::string_view();
      if (v != "nlohmann" && v != "fast") return fmt::format("--decode takes nlohmann or fast, not '{}'", v);
      counts.fast = v == "fast";
    } else if (std::find(flags.begin(), flags.end(), a) != flags.end()) {
      given.push_back(a);
    } else {
      return fmt::format("unknown option '{}'", a);
    }
  }
  return {};
}

inline bool floor_given(const std::vector<std::string_view>& given, std::string_view flag) {
  return std::find(given.begin(), given.end(), flag) != given.end();
}

/// CPU seconds (user + system) of this process so far.
inline double floor_cpu_now() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace llmload_bench
