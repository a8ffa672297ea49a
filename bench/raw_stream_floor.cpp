// llmload_raw_stream_floor: the CPU cost per streamed token of a lean receive path, to estimate
// how far llmload's per-token cost can come down on this machine (issue 5; docs/benchmarks.md,
// "Client cost (issue 5)"). Not a load generator: closed loop, fixed request, no records.
//
// C connections to llmload-server, each sending the same pre-serialized streaming chat request
// (keep-alive, N requests in all) and reading the response with a plain asio tcp::socket
// async_read_some into a 4 KiB per-connection buffer: a small HTTP/1.1 head and chunked-body
// decoder of its own, llmload's SseParser, one steady_clock read per read (as llmload stamps
// arrivals), and per event either llmload's OpenAiStreamDecoder (--decode nlohmann) or the
// DOM-free prototype (--decode fast, loadgen/src/core/chunk_scan.hpp, now used by llmload, falling back to the exact
// decoder when it declines). --timer re-arms one steady_timer per read, as beast::tcp_stream's
// idle timeout does in llmload today. CPU = getrusage(RUSAGE_SELF) over the streaming phase.
//
// Usage: llmload_raw_stream_floor HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS [--decode nlohmann|fast] [--timer]
// Prints: tokens, requests, CPU seconds, microseconds of CPU per token, reads per token.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "chunk_scan.hpp"  // the decoder's own scan (loadgen/src/core)
#include "llmload/loadgen/sse_parser.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct Shared {
  std::string request;
  std::int64_t requests_left = 0;
  std::int64_t requests_done = 0;
  std::int64_t tokens = 0;
  std::int64_t reads = 0;
  bool fast = false;
  bool timer = false;
  std::int64_t sink = 0;  // keeps the clock reads alive
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(asio::io_context& ioc, Shared& sh) : sock_(ioc), timer_(ioc), sh_(sh) {}
  tcp::socket& socket() { return sock_; }

  void send() {
    if (sh_.requests_left == 0) return;
    --sh_.requests_left;
    st_ = State::kHead;
    head_.clear();
    decoder_ = llmload::OpenAiStreamDecoder(llmload::ApiKind::kChat);
    parser_ = llmload::SseParser();
    asio::async_write(sock_, asio::buffer(sh_.request), [self = shared_from_this()](auto ec, std::size_t) {
      if (ec) return fail("write", ec);
      self->read();
    });
  }

 private:
  enum class State { kHead, kSize, kData, kDataCrlf, kTrailer };

  static void fail(const char* what, const boost::system::error_code& ec) {
    std::fprintf(stderr, "%s: %s\n", what, ec.message().c_str());
    std::exit(1);
  }

  void read() {
    if (sh_.timer) {
      timer_.expires_after(std::chrono::seconds(60));
      timer_.async_wait([](const boost::system::error_code&) {});
    }
    sock_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](auto ec, std::size_t n) {
      if (ec) return fail("read", ec);
      self->on_bytes(std::string_view(self->buf_.data(), n));
    });
  }

  void on_bytes(std::string_view b) {
    ++sh_.reads;
    sh_.sink += std::chrono::steady_clock::now().time_since_epoch().count() & 1;
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
    if (done) {
      if (sh_.timer) timer_.cancel();
      ++sh_.requests_done;
      send();
      return;
    }
    read();
  }

  void on_event(const llmload::SseEvent& ev) {
    if (sh_.fast && ev.data != "[DONE]") {
      if (auto f = llmload::detail::scan_chunk(ev.data, llmload::ApiKind::kChat)) {
        if (f->output) ++sh_.tokens;
        return;
      }
    }
    const auto u = decoder_.decode(ev);
    if (u.kind == llmload::StreamUpdate::Kind::kOutput) sh_.tokens += u.tokens;
  }

  tcp::socket sock_;
  asio::steady_timer timer_;
  Shared& sh_;
  std::array<char, 4096> buf_;
  State st_ = State::kHead;
  std::string head_;
  std::size_t size_ = 0;
  int crlf_ = 0;
  llmload::SseParser parser_;
  llmload::OpenAiStreamDecoder decoder_{llmload::ApiKind::kChat};
};

double cpu_now() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS [--decode nlohmann|fast] [--timer]\n",
                 argv[0]);
    return 2;
  }
  Shared sh;
  const int conns = std::atoi(argv[3]);
  sh.requests_left = std::atoll(argv[4]);
  const long out_tokens = std::atol(argv[5]);
  for (int i = 6; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--decode" && i + 1 < argc) {
      sh.fast = std::string_view(argv[++i]) == "fast";
    } else if (a == "--timer") {
      sh.timer = true;
    }
  }
  const std::string body = fmt::format(
      R"({{"model":"llmload-mock","messages":[{{"role":"user","content":"a b c d e f g h i j k l m n o p"}}],)"
      R"("max_tokens":{},"min_tokens":{},"ignore_eos":true,"stream":true,"stream_options":{{"include_usage":true}}}})",
      out_tokens, out_tokens);
  sh.request = fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n"
      "Accept: text/event-stream\r\nContent-Length: {}\r\n\r\n{}",
      argv[1], argv[2], body.size(), body);

  asio::io_context ioc;
  tcp::resolver res(ioc);
  const auto eps = res.resolve(argv[1], argv[2]);
  std::vector<std::shared_ptr<Conn>> cs;
  for (int i = 0; i < conns; ++i) {
    auto c = std::make_shared<Conn>(ioc, sh);
    asio::connect(c->socket(), eps);
    c->socket().set_option(tcp::no_delay(true));
    cs.push_back(c);
  }
  const double c0 = cpu_now();
  const auto w0 = std::chrono::steady_clock::now();
  for (auto& c : cs) c->send();
  cs.clear();
  ioc.run();
  const double cpu = cpu_now() - c0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::printf("tokens %lld requests %lld cpu_s %.4f us_per_token %.3f reads_per_token %.3f core_share %.3f %s%s\n",
              static_cast<long long>(sh.tokens), static_cast<long long>(sh.requests_done), cpu,
              cpu / static_cast<double>(sh.tokens) * 1e6,
              static_cast<double>(sh.reads) / static_cast<double>(sh.tokens), cpu / wall,
              sh.fast ? "decode=fast" : "decode=nlohmann", sh.timer ? " timer" : "");
  return sh.sink == -1 ? 1 : 0;
}
