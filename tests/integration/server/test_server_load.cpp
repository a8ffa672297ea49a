// llmload-server under many connections: thousands of idle ones (memory stays bounded), and
// hundreds of misbehaving clients on several io threads interleaved with well-behaved ones (all of
// which must be served). These are also the suite's ThreadSanitizer workload (--threads 4).
// Every loop is bounded in count; each test takes a few seconds at most.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string completion(int max_tokens, bool stream) {
  return json({{"model", "llmload-mock"}, {"prompt", "one two"}, {"max_tokens", max_tokens}, {"stream", stream}})
      .dump();
}

std::string chat(int max_tokens) {
  return json({{"model", "llmload-mock"},
               {"messages", json::array({{{"role", "user"}, {"content", "hi there"}}})},
               {"max_tokens", max_tokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}})
      .dump();
}

/// Checks a complete completions stream of `n` tokens.
void expect_full_stream(const HttpResponse& r, int n) {
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = sse_payloads(r.body);
  ASSERT_EQ(events.size(), static_cast<std::size_t>(n) + 1);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[static_cast<std::size_t>(n) - 1])["choices"][0]["finish_reason"], "length");
}

TEST(ServerLoad, TwoThousandIdleConnectionsStayCheapWhileOthersAreServed) {
  constexpr int kIdle = 2000;
  const std::uint64_t fds = raise_open_file_limit(kIdle + 512);
  if (fds < kIdle + 100) GTEST_SKIP() << "this process may open only " << fds << " files (ulimit -n)";
  auto server = start_server({"--latency-model", "fixed", "--threads", "2", "--ttft", "1ms", "--itl", "1ms"});
  expect_full_stream(http_request(server.port, "POST", "/v1/completions", completion(5, true)), 5);
  const std::int64_t before_kib = rss_kib(server.proc->pid());
  ASSERT_GT(before_kib, 0);

  // Half never send a byte; half send one request and then sit idle on keep-alive.
  std::vector<std::unique_ptr<HttpConnection>> idle;
  idle.reserve(kIdle);
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<HttpConnection>(server.port));
    if (i % 2 == 1) {
      idle.back()->send_request("GET", "/health");
      ASSERT_EQ(idle.back()->read_response().status, 200) << "connection " << i;
    }
  }
  // The listener accepts in order: once this newer client is answered, all 2000 are open.
  const auto start = Clock::now();
  expect_full_stream(http_request(server.port, "POST", "/v1/completions", completion(50, true)), 50);
  EXPECT_LT(Clock::now() - start, seconds(5));

  const std::int64_t after_kib = rss_kib(server.proc->pid());
  const std::int64_t growth_kib = after_kib - before_kib;
  std::printf("server RSS %lld KiB -> %lld KiB with %d idle connections: %.2f KiB each\n",
              static_cast<long long>(before_kib), static_cast<long long>(after_kib), kIdle,
              static_cast<double>(growth_kib) / kIdle);
  // Sanitizers add shadow memory and redzones to every allocation.
  const std::int64_t bound_kib = (kSanitized ? 400 : 100) * 1024;
  EXPECT_LT(growth_kib, bound_kib);

  // Still alive and well for the ones that were idle.
  idle[1]->send_request("GET", "/health");
  EXPECT_EQ(idle[1]->read_response().status, 200);
  idle.clear();
  expect_full_stream(http_request(server.port, "POST", "/v1/completions", completion(5, true)), 5);
  expect_clean_exit(server);
}

/// One misbehaving client, of kind `kind`, on a fresh connection. Returns normally whatever the
/// server does; it must only not crash and not stop serving others.
void misbehave(int port, int kind, int seed) {
  HttpConnection c(port);
  switch (kind) {
    case 0:  // half a request head, then hang up
      c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le");
      break;
    case 1: {  // garbage (a TLS-like first byte, then noise with NULs): a 400 comes back
      std::string garbage = "\x16\x03\x01";
      for (int i = 0; i < 200; ++i) garbage += static_cast<char>((seed * 131 + i * 17) % 256);
      c.send_raw(garbage + "\r\n\r\n");
      EXPECT_EQ(c.read_response().status, 400);
      break;
    }
    case 2: {  // a long stream, dropped after two events
      c.send_request("POST", "/v1/completions", completion(1000, true));
      EXPECT_EQ(c.read_head().status, 200);
      (void)c.next_chunk();
      (void)c.next_chunk();
      break;
    }
    case 3:  // a head announcing 100 bytes of body, 10 sent, then hang up
      c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\":");
      break;
    default:  // a good request plus pipelined garbage, then hang up without reading anything
      c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                 std::to_string(completion(20, true).size()) + "\r\n\r\n" + completion(20, true) + "\x01\x02\x03");
      break;
  }
}

TEST(ServerLoad, HostileClientsInterleavedWithGoodOnesOnFourThreads) {
  auto server = start_server({"--latency-model", "fixed", "--threads", "4", "--ttft", "1ms", "--itl", "2ms", "--header-timeout", "5s"});
  constexpr int kClientThreads = 4;
  constexpr int kHostilePerThread = 50;  // 200 in all
  std::atomic<int> served{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClientThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        // A long good stream that spans the whole loop.
        HttpConnection longer(server.port);
        longer.send_request("POST", "/v1/chat/completions", chat(150));
        for (int i = 0; i < kHostilePerThread; ++i) {
          misbehave(server.port, (i + t) % 5, t * 1000 + i);
          if (i % 2 == 0) {
            const HttpResponse r = http_request(server.port, "POST", "/v1/completions", completion(8, true));
            expect_full_stream(r, 8);
          } else {
            const HttpResponse r = http_request(server.port, "POST", "/v1/completions", completion(3, false));
            EXPECT_EQ(r.status, 200);
            EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 3);
          }
          ++served;
        }
        const auto events = sse_payloads(longer.read_response().body);
        ASSERT_EQ(events.size(), 1u + 150u + 2u);
        EXPECT_EQ(events.back(), "[DONE]");
        ++served;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "client thread " << t << ": " << e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(served.load(), kClientThreads * (kHostilePerThread + 1));
  expect_full_stream(http_request(server.port, "POST", "/v1/completions", completion(5, true)), 5);
  expect_clean_exit(server);
}

TEST(ServerLoad, ConcurrentStreamsWithHalfDisconnectingOnFourThreads) {
  auto server = start_server({"--latency-model", "fixed", "--threads", "4", "--ttft", "5ms", "--itl", "2ms"});
  constexpr int kStreams = 200;
  constexpr int kTokens = 40;
  std::vector<std::unique_ptr<HttpConnection>> conns;
  for (int i = 0; i < kStreams; ++i) {
    conns.push_back(std::make_unique<HttpConnection>(server.port));
    conns.back()->send_request("POST", "/v1/completions", completion(kTokens, true));
  }
  // Odd ones hang up after a few events, while all the others are still streaming.
  for (int i = 1; i < kStreams; i += 2) {
    auto& c = conns[static_cast<std::size_t>(i)];
    EXPECT_EQ(c->read_head().status, 200);
    for (int k = 0; k < 1 + i % 3; ++k) (void)c->next_chunk();
    c.reset();
  }
  for (int i = 0; i < kStreams; i += 2) {
    expect_full_stream(conns[static_cast<std::size_t>(i)]->read_response(), kTokens);
  }
  expect_clean_exit(server);
}

}  // namespace
}  // namespace llmload::testing
