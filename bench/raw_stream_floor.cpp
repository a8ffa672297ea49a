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
// --timestamps turns SO_TIMESTAMPING on and reads with recvmsg and its control data (a wait, then
// reads until a short one or EAGAIN), as llmload's transport does.
//
// Usage: llmload_raw_stream_floor HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS [--decode nlohmann|fast] [--timer]
//            [--timestamps]
// Prints: tokens, requests, CPU seconds, microseconds of CPU per token, reads per token.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <sys/socket.h>
#include <time.h>  // timespec, before linux/errqueue.h

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
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
  bool timestamps = false;  // SO_TIMESTAMPING and recvmsg with its control data, as llmload reads
  std::int64_t stamped = 0;  // reads that carried a kernel receive time
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
    if (sh_.timestamps) {
      sock_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](auto ec) {
        if (ec) return fail("wait", ec);
        self->read_stamped();
      });
      return;
    }
    sock_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](auto ec, std::size_t n) {
      if (ec) return fail("read", ec);
      self->on_bytes(std::string_view(self->buf_.data(), n));
    });
  }

  // --timestamps: recvmsg with room for the kernel's receive time until a short read (which
  // proves the socket empty) or EAGAIN, as llmload's transport reads.
  void read_stamped() {
    for (;;) {
      iovec iov{buf_.data(), buf_.size()};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(scm_timestamping))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = ::recvmsg(sock_.native_handle(), &msg, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return read();
      if (n < 0) return fail("recvmsg", boost::system::error_code(errno, boost::system::system_category()));
      if (n == 0) return fail("recvmsg", asio::error::eof);
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPING) continue;
        scm_timestamping ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        ++sh_.stamped;
        sh_.sink += ts.ts[0].tv_nsec & 1;
      }
      ++sh_.counts.reads;
      sh_.sink += std::chrono::steady_clock::now().time_since_epoch().count() & 1;
      if (response_.feed(std::string_view(buf_.data(), static_cast<std::size_t>(n)))) {
        if (sh_.timer) timer_.cancel();
        return send();
      }
      if (static_cast<std::size_t>(n) < buf_.size()) return read();
    }
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
  Shared sh;
  std::vector<std::string_view> given;
  std::string bad = argc < 6 ? "too few arguments" : llmload_bench::floor_counts_error(argv);
  if (bad.empty()) bad = llmload_bench::floor_options_error(argc, argv, {"--timer", "--timestamps"}, sh.counts, given);
  if (!bad.empty()) {
    std::fprintf(stderr,
                 "%s\nusage: %s HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS [--decode nlohmann|fast] [--timer] "
                 "[--timestamps]\n",
                 bad.c_str(), argv[0]);
    return 2;
  }
  const auto conns = llmload_bench::floor_count(argv[3]);
  sh.requests_left = llmload_bench::floor_count(argv[4]);
  const long out_tokens = static_cast<long>(llmload_bench::floor_count(argv[5]));
  sh.timer = llmload_bench::floor_given(given, "--timer");
  sh.timestamps = llmload_bench::floor_given(given, "--timestamps");
  sh.request = llmload_bench::floor_request(argv[1], argv[2], out_tokens);

  asio::io_context ioc;
  std::vector<std::shared_ptr<Conn>> cs;
  try {
    tcp::resolver res(ioc);
    const auto eps = res.resolve(argv[1], argv[2], tcp::resolver::numeric_host);
    for (long long i = 0; i < conns; ++i) {
      auto c = std::make_shared<Conn>(ioc, sh);
      asio::connect(c->socket(), eps);
      c->socket().set_option(tcp::no_delay(true));
      if (sh.timestamps) {
        const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
        if (::setsockopt(c->socket().native_handle(), SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0) {
          throw boost::system::system_error(errno, boost::system::system_category(), "SO_TIMESTAMPING");
        }
      }
      cs.push_back(c);
    }
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "cannot connect to %s:%s (HOST must be a numeric address, e.g. 127.0.0.1): %s\n", argv[1],
                 argv[2], e.what());
    return 1;
  }
  const double c0 = llmload_bench::floor_cpu_now();
  const auto w0 = std::chrono::steady_clock::now();
  for (auto& c : cs) c->send();
  cs.clear();
  ioc.run();
  const double cpu = llmload_bench::floor_cpu_now() - c0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::printf(
      "tokens %lld requests %lld cpu_s %.4f us_per_token %.3f reads_per_token %.3f core_share %.3f "
      "stamped_per_read %.3f %s%s%s\n",
              static_cast<long long>(sh.counts.tokens), static_cast<long long>(sh.counts.requests_done), cpu,
              cpu / static_cast<double>(sh.counts.tokens) * 1e6,
              static_cast<double>(sh.counts.reads) / static_cast<double>(sh.counts.tokens), cpu / wall,
              static_cast<double>(sh.stamped) / static_cast<double>(sh.counts.reads),
              sh.counts.fast ? "decode=fast" : "decode=nlohmann", sh.timer ? " timer" : "",
              sh.timestamps ? " timestamps" : "");
  return sh.sink == -1 ? 1 : 0;
}
