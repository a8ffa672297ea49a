// llmload_raw_stream_floor: the CPU cost per streamed token of a lean receive path, to estimate
// how far llmload's per-token cost can come down on this machine (issue 5; docs/benchmarks.md,
// "Client cost (issue 5)"). Not a load generator: closed loop, fixed request, no records.
//
// C connections to llmload-server, each sending the same pre-serialized streaming chat request
// (keep-alive, N requests in all) and reading the response with a plain asio tcp::socket
// async_read_some into a 4 KiB per-connection buffer, one steady_clock read per read (as llmload
// stamps arrivals), and floor_response.hpp's reader: a small HTTP/1.1 head and chunked-body
// decoder, llmload's SseParser, and per event either llmload's OpenAiStreamDecoder (--decode
// nlohmann) or the DOM-free scan (--decode fast, loadgen/src/core/chunk_scan.hpp, as llmload uses
// it). bench/uring_stream_floor.cpp is the same path on io_uring. --timer re-arms one steady_timer per read, as beast::tcp_stream's
// idle timeout does in llmload today. CPU = getrusage(RUSAGE_SELF) over the streaming phase.
//
// Usage: llmload_raw_stream_floor HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS [--decode nlohmann|fast] [--timer]
// Prints: tokens, requests, CPU seconds, microseconds of CPU per token, reads per token.
#include <utility>  // before Asio (Boost 1.74 + C++20)

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

#include "floor_response.hpp"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct Shared {
  std::string request;
  std::int64_t requests_left = 0;
  llmload_bench::FloorCounts counts;
  bool timer = false;
  std::int64_t sink = 0;  // keeps the clock reads alive
};

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(asio::io_context& ioc, Shared& sh) : sock_(ioc), timer_(ioc), sh_(sh), response_(sh.counts) {}
  tcp::socket& socket() { return sock_; }

  void send() {
    if (sh_.requests_left == 0) return;
    --sh_.requests_left;
    response_.reset();
    asio::async_write(sock_, asio::buffer(sh_.request), [self = shared_from_this()](auto ec, std::size_t) {
      if (ec) return fail("write", ec);
      self->read();
    });
  }

 private:
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
    ++sh_.counts.reads;
    sh_.sink += std::chrono::steady_clock::now().time_since_epoch().count() & 1;
    if (response_.feed(b)) {
      if (sh_.timer) timer_.cancel();
      send();
      return;
    }
    read();
  }

  tcp::socket sock_;
  asio::steady_timer timer_;
  Shared& sh_;
  std::array<char, 4096> buf_;
  llmload_bench::FloorResponse response_;
};

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
      sh.counts.fast = std::string_view(argv[++i]) == "fast";
    } else if (a == "--timer") {
      sh.timer = true;
    }
  }
  sh.request = llmload_bench::floor_request(argv[1], argv[2], out_tokens);

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
  const double c0 = llmload_bench::floor_cpu_now();
  const auto w0 = std::chrono::steady_clock::now();
  for (auto& c : cs) c->send();
  cs.clear();
  ioc.run();
  const double cpu = llmload_bench::floor_cpu_now() - c0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::printf("tokens %lld requests %lld cpu_s %.4f us_per_token %.3f reads_per_token %.3f core_share %.3f %s%s\n",
              static_cast<long long>(sh.counts.tokens), static_cast<long long>(sh.counts.requests_done), cpu,
              cpu / static_cast<double>(sh.counts.tokens) * 1e6,
              static_cast<double>(sh.counts.reads) / static_cast<double>(sh.counts.tokens), cpu / wall,
              sh.counts.fast ? "decode=fast" : "decode=nlohmann", sh.timer ? " timer" : "");
  return sh.sink == -1 ? 1 : 0;
}
