// llmload-server against hostile or broken clients, one behaviour at a time: malformed and
// smuggling requests, slow clients (header, body and keep-alive timeouts), the connection limit,
// and the loopback-only listening rule. Only 127.0.0.1 is ever bound.
#include <chrono>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kStreamBody = R"({"model":"llmload-mock","prompt":"a b","max_tokens":5,"stream":true})";

/// A short streaming request on a fresh connection completes with all its events.
void expect_served(int port) {
  const HttpResponse r = http_request(port, "POST", "/v1/completions", kStreamBody);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = sse_payloads(r.body);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events.back(), "[DONE]");
}

/// Sends `raw` on a fresh connection; expects an OpenAI error with `status`, then the close.
void expect_rejected(int port, const std::string& raw, int status, const std::string& type) {
  SCOPED_TRACE(raw.substr(0, 80));
  HttpConnection c(port);
  c.send_raw(raw);
  const HttpResponse r = c.read_response();
  expect_api_error(r, status, type);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(c.wait_closed(seconds(5)));
}

class ServerHardening : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerHandle(start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "1ms", "--threads", "2"}));
  }
  static void TearDownTestSuite() {
    expect_clean_exit(*server_);
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port; }
  static ServerHandle* server_;
};
ServerHandle* ServerHardening::server_ = nullptr;

TEST_F(ServerHardening, MalformedRequestLinesAre400) {
  const std::vector<std::string> bad = {
      "garbage\r\n\r\n",
      "G(T /health HTTP/1.1\r\nHost: x\r\n\r\n",          // not a method token
      "GET /health HTTP/2.0\r\nHost: x\r\n\r\n",          // a version this server does not speak
      "GET /health HTTP/0.9\r\nHost: x\r\n\r\n",
      "GET /health HTTX/1.1\r\nHost: x\r\n\r\n",
      "GET /health\r\nHost: x\r\n\r\n",                    // no version
      "GET /hea th HTTP/1.1\r\nHost: x\r\n\r\n",          // space in the target
      std::string("GET /hea") + '\0' + "th HTTP/1.1\r\nHost: x\r\n\r\n",  // NUL in the target
      "GET /health HTTP/1.1\nHost: x\n\n",                // bare LF
  };
  for (const auto& raw : bad) expect_rejected(port(), raw, 400, "BadRequestError");
  expect_served(port());
}

TEST_F(ServerHardening, MalformedHeadersAre400) {
  const std::vector<std::string> bad = {
      "GET /health HTTP/1.1\r\nHost x\r\n\r\n",                    // no colon
      "GET /health HTTP/1.1\r\nHost : x\r\n\r\n",                  // space before the colon
      "GET /health HTTP/1.1\r\n: x\r\n\r\n",                       // empty name
      std::string("GET /health HTTP/1.1\r\nX-A: a") + '\0' + "b\r\n\r\n",  // NUL in a value
      "GET /health HTTP/1.1\r\nX-A: a\x01" "b\r\n\r\n",            // control byte in a value
      "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",        // two Hosts
  };
  for (const auto& raw : bad) expect_rejected(port(), raw, 400, "BadRequestError");
  expect_served(port());
}

TEST_F(ServerHardening, SmugglingAttemptsAre400) {
  const std::string body = R"({"model":"llmload-mock","prompt":"x","max_tokens":1})";
  const std::string cl = "Content-Length: " + std::to_string(body.size()) + "\r\n";
  const std::vector<std::string> bad = {
      // Content-Length and Transfer-Encoding, in both orders.
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + cl + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + cl + "\r\n0\r\n\r\n",
      // Two differing Content-Lengths, as two fields and as a list.
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + cl + "Content-Length: 3\r\n\r\n" + body,
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\n" + body,
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
      // Codings whose length the server cannot tell: not "chunked" alone.
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + body,
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",  // bad chunk size
  };
  for (const auto& raw : bad) expect_rejected(port(), raw, 400, "BadRequestError");
  // Two equal Content-Lengths are allowed (RFC 9110 8.6), and so is a plain chunked body.
  HttpConnection c(port());
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + cl + cl + "\r\n" + body);
  EXPECT_EQ(c.read_response().status, 200);
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  c.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size) +
             "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 200);
}

TEST_F(ServerHardening, TooManyHeaderFieldsAre431) {
  std::string many = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 300; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  expect_rejected(port(), many + "\r\n", 431, "RequestHeaderFieldsTooLargeError");
  // Tiny fields, far over the 64 KiB head limit in all (sent in one write).
  std::string flood = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 20000; ++i) flood += "a:\r\n";
  expect_rejected(port(), flood + "\r\n", 431, "RequestHeaderFieldsTooLargeError");
  // Just over the limit, in one write (Beast alone would let this through).
  expect_rejected(port(), "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(66000, 'a') + "\r\n\r\n", 431,
                  "RequestHeaderFieldsTooLargeError");
  expect_served(port());
}

TEST_F(ServerHardening, GarbageAfterAGoodRequestIsAnsweredThenRejected) {
  HttpConnection c(port());
  c.send_raw("GET /health HTTP/1.1\r\nHost: x\r\n\r\n\x01\x02garbage\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 200);
  expect_api_error(c.read_response(), 400, "BadRequestError");
  EXPECT_TRUE(c.wait_closed(seconds(5)));
}

// --- slow clients --------------------------------------------------------------------------

/// Sends `bytes` one byte per 200 ms until the server answers; returns the seconds until then.
double drip_until_answered(HttpConnection& c, const std::string& bytes) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < bytes.size() && Clock::now() - start < seconds(8); ++i) {
    try {
      c.send_raw(bytes.substr(i, 1));
    } catch (const std::exception&) {
      break;  // the server closed
    }
    if (c.readable(milliseconds(200))) break;
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(ServerSlowClients, SlowlorisIsCutAtTheHeaderTimeoutWhileOthersAreServed) {
  auto server = start_server({"--latency-model", "fixed", "--header-timeout", "1s", "--ttft", "1ms", "--itl", "1ms"});
  HttpConnection slow(server.port);
  std::thread normal([&] {
    // While the slow client drips, other clients are served normally.
    for (int i = 0; i < 5; ++i) {
      expect_served(server.port);
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  const double answered_after = drip_until_answered(slow, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " +
                                                              std::string(200, 'a'));
  normal.join();
  EXPECT_GE(answered_after, 0.8);
  EXPECT_LT(answered_after, 4.0) << "bytes kept arriving, yet the head's deadline holds";
  const auto e = expect_api_error(slow.read_response(), 408, "RequestTimeoutError");
  EXPECT_NE(e.value("message", "").find("--header-timeout"), std::string::npos);
  EXPECT_TRUE(slow.wait_closed(seconds(5)));
  expect_served(server.port);
  expect_clean_exit(server);
}

TEST(ServerSlowClients, SlowBodyIsCutAtTheBodyTimeout) {
  auto server = start_server({"--latency-model", "fixed", "--body-timeout", "1s", "--ttft", "1ms", "--itl", "1ms"});
  HttpConnection slow(server.port);
  const std::string body = R"({"model":"llmload-mock","prompt":"slow body","max_tokens":1})";
  slow.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\n\r\n");
  const double answered_after = drip_until_answered(slow, body);
  EXPECT_GE(answered_after, 0.8);
  EXPECT_LT(answered_after, 4.0);
  const auto e = expect_api_error(slow.read_response(), 408, "RequestTimeoutError");
  EXPECT_NE(e.value("message", "").find("--body-timeout"), std::string::npos);
  EXPECT_TRUE(slow.wait_closed(seconds(5)));
  // A body that arrives in time is fine, even slowly.
  HttpConnection ok(server.port);
  ok.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
              "\r\n\r\n" + body.substr(0, 10));
  std::this_thread::sleep_for(milliseconds(100));  // slow, and 900 ms inside the timeout
  ok.send_raw(body.substr(10));
  EXPECT_EQ(ok.read_response().status, 200);
  expect_clean_exit(server);
}

TEST(ServerSlowClients, SilentConnectionsAreClosedWithoutAnAnswer) {
  auto server = start_server({"--header-timeout", "1s", "--keepalive-timeout", "1s"});
  // A new connection that sends nothing: closed at the header timeout, with no (unasked) 408.
  HttpConnection silent(server.port);
  auto start = Clock::now();
  auto got = silent.read_to_close(seconds(5));
  ASSERT_TRUE(got.has_value()) << "not closed";
  EXPECT_EQ(*got, "");
  EXPECT_GE(Clock::now() - start, milliseconds(800));
  // A keep-alive connection idle after a request: closed at the keep-alive timeout, silently.
  HttpConnection idle(server.port);
  idle.send_request("GET", "/health");
  EXPECT_EQ(idle.read_response().status, 200);
  start = Clock::now();
  got = idle.read_to_close(seconds(5));
  ASSERT_TRUE(got.has_value()) << "not closed";
  EXPECT_EQ(*got, "");
  EXPECT_GE(Clock::now() - start, milliseconds(800));
  // A connection that keeps sending requests is kept open past both timeouts (2 s; each pause
  // 900 ms inside the keep-alive timeout).
  HttpConnection busy(server.port);
  for (int i = 0; i < 20; ++i) {
    busy.send_request("GET", "/health");
    EXPECT_EQ(busy.read_response().status, 200);
    std::this_thread::sleep_for(milliseconds(100));
  }
  expect_clean_exit(server);
}

// --- connection limit ------------------------------------------------------------------------

TEST(ServerConnectionLimit, ConnectionsOverTheLimitGet503AndTheListenerKeepsGoing) {
  auto server = start_server({"--latency-model", "fixed", "--max-connections", "3", "--ttft", "1ms", "--itl", "1ms"});
  std::vector<std::unique_ptr<HttpConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<HttpConnection>(server.port));
    held.back()->send_request("GET", "/health");
    ASSERT_EQ(held.back()->read_response().status, 200);  // accepted and served; stays open
  }
  const auto start = Clock::now();
  constexpr int kRefused = 20;
  for (int i = 0; i < kRefused; ++i) {
    HttpConnection extra(server.port);
    const HttpResponse r = extra.read_response();  // the 503 comes without a request
    const auto e = expect_api_error(r, 503, "InternalServerError");
    EXPECT_NE(e.value("message", "").find("--max-connections"), std::string::npos);
    EXPECT_TRUE(extra.wait_closed(seconds(5)));
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  // A held connection is still served, and one freed slot admits a new client.
  held[0]->send_request("GET", "/health");
  EXPECT_EQ(held[0]->read_response().status, 200);
  held.pop_back();
  int status = 0;
  for (int attempt = 0; attempt < 50 && status != 200; ++attempt) {  // until the server sees the close
    HttpConnection next(server.port);
    next.send_request("GET", "/health");
    status = next.read_response().status;
    if (status != 200) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(status, 200);
  // The warning is rate-limited to one a second.
  pump_output(*server.proc, 100);
  const std::string err = server.proc->err();
  std::ptrdiff_t warnings = 0;
  for (std::size_t at = err.find("(--max-connections)"); at != std::string::npos;
       at = err.find("(--max-connections)", at + 1)) {
    ++warnings;
  }
  EXPECT_GE(warnings, 1) << err;
  EXPECT_LE(warnings, 1 + static_cast<std::ptrdiff_t>(elapsed) + 1) << err;
  expect_clean_exit(server);
}

// --- where the server may listen -------------------------------------------------------------

TEST(ServerListenRule, NonLoopbackAddressNeedsAllowRemote) {
  for (const std::string host : {"0.0.0.0", "::"}) {
    const auto start = Clock::now();
    const RunResult r = run({binary_path("llmload-server"), "--host", host, "--port", "0"}, seconds(10));
    EXPECT_NE(r.exit_code, 0) << host;
    EXPECT_NE(r.err.find("--allow-remote"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("loopback"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << "it must fail before binding: " << r.out;
    EXPECT_LT(Clock::now() - start, seconds(5));
  }
}

TEST(ServerListenRule, HelpShowsTheLimitsAndTheirDefaults) {
  const RunResult r = run({binary_path("llmload-server"), "--help"}, seconds(10));
  EXPECT_EQ(r.exit_code, 0);
  for (const std::string expected : {"--header-timeout", "--body-timeout", "--keepalive-timeout", "--max-connections",
                                     "--allow-remote", "30s", "60s", "120s", "10000"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << " missing from:\n" << r.out;
  }
}

}  // namespace
}  // namespace llmload::testing
