// llmload_uring_stream_floor: the lean receive path's per-token CPU floor with io_uring instead of
// the epoll reactor (issue 20, "where the kernel offers it, multishot receive with provided
// buffers"): does the kernel's io_uring lower the floor that llmload_raw_stream_floor measures?
// Same connections, request, response reader (floor_response.hpp) and one steady_clock read per
// read as raw_stream_floor.cpp; only the way bytes arrive differs:
//   - one multishot receive per connection, armed once, into a ring of provided 4 KiB buffers
//     (IOSQE_BUFFER_SELECT): no system call per read, no reactor re-arm;
//   - sends are queued to the ring too, so that one io_uring_enter submits the sends of every
//     connection that finished and waits for the next completions;
//   - --defer: IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (the kernel runs the completions' task
//     work in io_uring_enter, not on every arrival); else COOP_TASKRUN;
//   - --timestamps: SO_TIMESTAMPING on every socket and a multishot recvmsg (not recv), whose
//     completions carry each read's kernel receive time as llmload's transport needs (the time
//     is read, not used);
//   - --asio: the ring waited on as llmload's transport would have to, through an Asio
//     io_context (the ring's descriptor in Asio's reactor, one async_wait per batch, the
//     completions reaped from the shared ring without a system call, queued sends submitted once
//     per batch); no COOP_TASKRUN, so that an arrival wakes the thread asleep in Asio's epoll_wait.
// Not a load generator: closed loop, fixed request, no records. CPU = getrusage(RUSAGE_SELF) over
// the streaming phase.
//
// Usage: llmload_uring_stream_floor HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS
//            [--decode nlohmann|fast] [--defer] [--timestamps] [--asio]
// HOST is a numeric IPv4 address (loopback). Prints what llmload_raw_stream_floor prints, and
// io_uring_enter calls per token (and with --timestamps the share of reads that carried one). Exit 1 when io_uring is not available (kernel or policy).
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "floor_response.hpp"

namespace {

constexpr unsigned kBuffers = 1024;  // provided buffers (a power of two)
constexpr unsigned kBufferBytes = 4096;
constexpr unsigned short kGroup = 0;  // the buffer group id
constexpr std::uint64_t kSendTag = 1;  // user_data = connection << 1 | kind
constexpr long long kQuietLimitS = 30;  // the longest wait for a completion

[[noreturn]] void die(const char* what, int err) {
  std::fprintf(stderr, "%s: %s\n", what, std::strerror(err));
  std::exit(1);
}

struct Conn {
  int fd = -1;
  std::unique_ptr<llmload_bench::FloorResponse> response;
};

class UringFloor {
 public:
  UringFloor(bool defer, bool timestamps, bool asio, llmload_bench::FloorCounts& counts)
      : counts_(counts), timestamps_(timestamps) {
    msg_.msg_controllen = CMSG_SPACE(sizeof(scm_timestamping));
    io_uring_params p{};
    p.flags = defer ? (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN) : IORING_SETUP_COOP_TASKRUN;
    if (asio) p.flags = 0;
    if (const int rc = io_uring_queue_init_params(4096, &ring_, &p); rc < 0) die("io_uring_queue_init_params", -rc);
    const std::size_t ring_bytes = kBuffers * sizeof(io_uring_buf);
    void* mem = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) die("mmap", errno);
    br_ = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(br_);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(mem);
    reg.ring_entries = kBuffers;
    reg.bgid = kGroup;
    if (const int rc = io_uring_register_buf_ring(&ring_, &reg, 0); rc < 0) die("io_uring_register_buf_ring", -rc);
    data_.resize(static_cast<std::size_t>(kBuffers) * kBufferBytes);
    for (unsigned b = 0; b < kBuffers; ++b) {
      io_uring_buf_ring_add(br_, buffer(b), kBufferBytes, static_cast<unsigned short>(b), io_uring_buf_ring_mask(kBuffers),
                            static_cast<int>(b));
    }
    io_uring_buf_ring_advance(br_, static_cast<int>(kBuffers));
  }

  void add(int fd) {
    if (timestamps_) {
      const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
      if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0) die("SO_TIMESTAMPING", errno);
    }
    conns_.push_back({fd, std::make_unique<llmload_bench::FloorResponse>(counts_)});
    arm_receive(conns_.size() - 1);
  }

  void run(const std::string& request, std::int64_t requests) {
    request_ = &request;
    requests_left_ = requests;
    for (std::size_t i = 0; i < conns_.size(); ++i) send(i);
    while (counts_.requests_done < requests) {
      ++enters_;
      // Bounded: a server that stops sending ends the bench instead of hanging it.
      __kernel_timespec limit{.tv_sec = kQuietLimitS, .tv_nsec = 0};
      io_uring_cqe* first = nullptr;
      const int rc = io_uring_submit_and_wait_timeout(&ring_, &first, 1, &limit, nullptr);
      if (rc == -ETIME) die("no data from the server for 30 s", ETIMEDOUT);
      if (rc < 0 && rc != -EINTR) die("io_uring_submit_and_wait_timeout", -rc);
      reap();
    }
  }

  // Every completion in the ring now, without a system call.
  void reap() {
    unsigned head = 0;
    unsigned seen = 0;
    int recycled = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      on_completion(*cqe, recycled);
    }
    io_uring_cq_advance(&ring_, seen);
    if (recycled > 0) io_uring_buf_ring_advance(br_, recycled);
  }

  // The same loop with the ring waited on through Asio: per batch, Asio's epoll_wait (and its
  // epoll_ctl re-arming the wait), the completions reaped without a system call, and one
  // io_uring_enter only when sends are queued.
  void run_asio(const std::string& request, std::int64_t requests) {
    request_ = &request;
    requests_left_ = requests;
    boost::asio::io_context ioc(1);
    const int fd = ::dup(ring_.ring_fd);  // Asio closes its descriptor; the ring keeps its own
    if (fd < 0) die("dup", errno);
    boost::asio::posix::stream_descriptor ring_fd(ioc, fd);
    boost::asio::steady_timer limit(ioc, std::chrono::seconds(kQuietLimitS * 10));
    limit.async_wait([](boost::system::error_code ec) {
      if (!ec) die("the run took longer than its limit", ETIMEDOUT);
    });
    for (std::size_t i = 0; i < conns_.size(); ++i) send(i);
    ++enters_;
    io_uring_submit(&ring_);
    std::function<void()> arm = [&] {
      ring_fd.async_wait(boost::asio::posix::stream_descriptor::wait_read, [&](boost::system::error_code ec) {
        if (ec) die("async_wait", ec.value());
        reap();
        if (io_uring_sq_ready(&ring_) > 0) {
          ++enters_;
          io_uring_submit(&ring_);
        }
        if (counts_.requests_done < requests) {
          arm();
        } else {
          limit.cancel();
        }
      });
    };
    arm();
    ioc.run();
  }

  std::int64_t enters() const { return enters_; }
  std::int64_t stamped() const { return stamped_; }
  std::int64_t sink() const { return sink_; }

 private:
  char* buffer(unsigned b) { return data_.data() + static_cast<std::size_t>(b) * kBufferBytes; }

  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s == nullptr) {
      io_uring_submit(&ring_);
      s = io_uring_get_sqe(&ring_);
      if (s == nullptr) die("io_uring_get_sqe", EBUSY);
    }
    return s;
  }

  void arm_receive(std::size_t i) {
    io_uring_sqe* s = sqe();
    if (timestamps_) {
      io_uring_prep_recvmsg_multishot(s, conns_[i].fd, &msg_, 0);
    } else {
      io_uring_prep_recv_multishot(s, conns_[i].fd, nullptr, 0, 0);
    }
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = kGroup;
    io_uring_sqe_set_data64(s, static_cast<std::uint64_t>(i) << 1);
  }

  void send(std::size_t i) {
    if (requests_left_ == 0) return;
    --requests_left_;
    conns_[i].response->reset();
    io_uring_sqe* s = sqe();
    io_uring_prep_send(s, conns_[i].fd, request_->data(), request_->size(), 0);
    io_uring_sqe_set_data64(s, (static_cast<std::uint64_t>(i) << 1) | kSendTag);
  }

  void on_completion(const io_uring_cqe& c, int& recycled) {
    const std::size_t i = c.user_data >> 1;
    if ((c.user_data & kSendTag) != 0) {
      if (c.res < 0) die("send", -c.res);
      if (static_cast<std::size_t>(c.res) != request_->size()) die("send (short)", EIO);
      return;
    }
    if (c.res == -ENOBUFS) {  // every buffer was in use: the multishot receive ended; arm it again
      arm_receive(i);
      return;
    }
    if (c.res < 0) die("recv", -c.res);
    if (c.res == 0) die("recv (the server closed the connection)", ECONNRESET);
    if ((c.flags & IORING_CQE_F_BUFFER) == 0) die("recv (no buffer selected)", EINVAL);
    const unsigned b = c.flags >> IORING_CQE_BUFFER_SHIFT;
    ++counts_.reads;
    sink_ += std::chrono::steady_clock::now().time_since_epoch().count() & 1;
    std::string_view bytes(buffer(b), static_cast<std::size_t>(c.res));
    if (timestamps_) bytes = unwrap(bytes);
    const bool done = conns_[i].response->feed(bytes);
    io_uring_buf_ring_add(br_, buffer(b), kBufferBytes, static_cast<unsigned short>(b), io_uring_buf_ring_mask(kBuffers),
                          recycled++);
    if ((c.flags & IORING_CQE_F_MORE) == 0) arm_receive(i);
    if (done) send(i);
  }

  // A recvmsg completion's buffer: header, control data (the receive time), then the payload.
  std::string_view unwrap(std::string_view b) {
    io_uring_recvmsg_out* o = io_uring_recvmsg_validate(const_cast<char*>(b.data()), static_cast<int>(b.size()), &msg_);
    if (o == nullptr) die("recvmsg (a completion too short for its header)", EINVAL);
    for (cmsghdr* cm = io_uring_recvmsg_cmsg_firsthdr(o, &msg_); cm != nullptr;
         cm = io_uring_recvmsg_cmsg_nexthdr(o, &msg_, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SO_TIMESTAMPING) continue;
      scm_timestamping ts;
      std::memcpy(&ts, CMSG_DATA(cm), sizeof ts);
      ++stamped_;
      sink_ += ts.ts[0].tv_nsec & 1;
    }
    const auto n = io_uring_recvmsg_payload_length(o, static_cast<int>(b.size()), &msg_);
    if (n == 0) die("recv (the server closed the connection)", ECONNRESET);
    return {static_cast<const char*>(io_uring_recvmsg_payload(o, &msg_)), n};
  }

  llmload_bench::FloorCounts& counts_;
  bool timestamps_ = false;
  msghdr msg_{};  // the recvmsg template: no address, room for one timestamp
  std::int64_t stamped_ = 0;
  io_uring ring_{};
  io_uring_buf_ring* br_ = nullptr;
  std::vector<char> data_;
  std::vector<Conn> conns_;
  const std::string* request_ = nullptr;
  std::int64_t requests_left_ = 0;
  std::int64_t enters_ = 0;
  std::int64_t sink_ = 0;
};

int connect_to(const char* host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    std::fprintf(stderr, "HOST must be a numeric IPv4 address (e.g. 127.0.0.1), not '%s'\n", host);
    std::exit(2);
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket", errno);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) die("connect", errno);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  llmload_bench::FloorCounts counts;
  std::vector<std::string_view> given;
  std::string bad = argc < 6 ? "too few arguments" : llmload_bench::floor_counts_error(argv);
  if (bad.empty()) bad = llmload_bench::floor_options_error(argc, argv, {"--defer", "--timestamps", "--asio"}, counts, given);
  if (!bad.empty()) {
    std::fprintf(stderr,
                 "%s\nusage: %s HOST PORT CONNECTIONS REQUESTS OUTPUT_TOKENS [--decode nlohmann|fast] [--defer] "
                 "[--timestamps] [--asio]\n",
                 bad.c_str(), argv[0]);
    return 2;
  }
  const bool defer = llmload_bench::floor_given(given, "--defer");
  const bool timestamps = llmload_bench::floor_given(given, "--timestamps");
  const bool asio = llmload_bench::floor_given(given, "--asio");
  if (asio && defer) {
    std::fprintf(stderr, "--asio and --defer do not go together (deferred task work runs only in io_uring_enter)\n");
    return 2;
  }
  const auto conns = llmload_bench::floor_count(argv[3]);
  const std::int64_t requests = llmload_bench::floor_count(argv[4]);
  const std::string request =
      llmload_bench::floor_request(argv[1], argv[2], static_cast<long>(llmload_bench::floor_count(argv[5])));
  UringFloor floor(defer, timestamps, asio, counts);
  for (long long i = 0; i < conns; ++i) floor.add(connect_to(argv[1], std::atoi(argv[2])));
  const double c0 = llmload_bench::floor_cpu_now();
  const auto w0 = std::chrono::steady_clock::now();
  if (asio) {
    floor.run_asio(request, requests);
  } else {
    floor.run(request, requests);
  }
  const double cpu = llmload_bench::floor_cpu_now() - c0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  const auto tokens = static_cast<double>(counts.tokens);
  std::printf(
      "tokens %lld requests %lld cpu_s %.4f us_per_token %.3f reads_per_token %.3f core_share %.3f "
      "enters_per_token %.3f stamped_per_read %.3f %s io_uring%s%s%s\n",
      static_cast<long long>(counts.tokens), static_cast<long long>(counts.requests_done), cpu, cpu / tokens * 1e6,
      static_cast<double>(counts.reads) / tokens, cpu / wall, static_cast<double>(floor.enters()) / tokens,
      static_cast<double>(floor.stamped()) / static_cast<double>(counts.reads), counts.fast ? "decode=fast" : "decode=nlohmann",
      defer ? " defer" : "", timestamps ? " timestamps" : "", asio ? " asio" : "");
  return floor.sink() == -1 ? 1 : 0;
}
