// The real transport (AsioTransport) on loopback, driven directly (no CLI): HTTPS through nginx
// in front of llmload-server, certificate and host name verification, the connect timeout, and
// the observer deadlines (the seam the first-token and inter-token timeouts use).
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/net/asio_transport.hpp"
#include "llmload/loadgen/net/io_error.hpp"
#include "llmload/loadgen/url.hpp"
#include "tls_env.hpp"

namespace llmload::testing {
namespace {

using namespace std::chrono_literals;
using analysis::ErrorClass;
using net::AsioTransport;
using net::TransportOptions;

// Records everything the transport reports; deadlines come from `deadline_fn` when set.
class TestObserver final : public ResponseObserver {
 public:
  void on_sent(TimePoint t) override {
    ++sent;
    t_sent = t;
  }
  void on_headers(TimePoint, int s, std::string_view) override {
    ++headers;
    status = s;
  }
  bool on_body(TimePoint t, std::string_view bytes) override {
    ++bodies;
    if (!t_first_body) t_first_body = t;
    t_last_body = t;
    body.append(bytes);
    return true;
  }
  void on_complete(TimePoint t, const TransportError& e) override {
    ++completions;
    t_done = t;
    error = e;
  }
  std::optional<TimePoint> deadline() const override {
    ++deadline_asks;
    return deadline_fn ? deadline_fn(*this) : std::nullopt;
  }
  TransportError on_deadline(TimePoint now) override {
    ++deadline_calls;
    t_deadline = now;
    return TransportError{deadline_class, "test deadline passed"};
  }

  std::function<std::optional<TimePoint>(const TestObserver&)> deadline_fn;
  ErrorClass deadline_class = ErrorClass::kFirstTokenTimeout;

  int sent = 0;
  int headers = 0;
  int bodies = 0;
  int completions = 0;
  int deadline_calls = 0;
  mutable int deadline_asks = 0;
  int status = 0;
  std::string body;
  TransportError error;
  std::optional<TimePoint> t_sent;
  std::optional<TimePoint> t_first_body;
  std::optional<TimePoint> t_last_body;
  std::optional<TimePoint> t_done;
  std::optional<TimePoint> t_deadline;

  Nanos elapsed() const { return t_done && t_sent ? *t_done - *t_sent : Nanos::max(); }
};

// A streaming completion request for llmload-server (the model it serves by default).
HttpRequest completion(const BaseUrl& url, int max_tokens, const std::string& fault = "") {
  HttpRequest r;
  r.method = "POST";
  r.target = url.path + "/v1/completions";
  r.headers = {{"Host", url.host_header()}, {"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
  if (!fault.empty()) r.headers.emplace_back("X-Llmload-Fault", fault);
  r.body = nlohmann::json{{"model", "llmload-mock"},
                          {"prompt", "one two three four"},
                          {"max_tokens", max_tokens},
                          {"stream", true},
                          {"stream_options", {{"include_usage", true}}}}
               .dump();
  return r;
}

// What an SSE completion stream held.
struct StreamSummary {
  int token_events = 0;       // events with a non-empty choices array
  int usage_completion = -1;  // usage.completion_tokens of the usage event
  bool done = false;          // data: [DONE] seen
};

StreamSummary summarize(const std::string& body) {
  StreamSummary s;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event.rfind("data: ", 0) != 0) continue;
    const std::string data = event.substr(6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("choices") && !j["choices"].empty()) ++s.token_events;
    if (j.contains("usage") && j["usage"].is_object()) s.usage_completion = j["usage"]["completion_tokens"];
  }
  return s;
}

// One transport on its own io_context and the real clock; run() drives one request to its end
// (bounded: a test never hangs).
struct Client {
  explicit Client(const std::string& base_url, TransportOptions options = {})
      : url(parse_base_url(base_url)), transport(ioc, clock, url, std::move(options)) {}

  void run(const HttpRequest& req, TestObserver& obs, std::chrono::seconds bound = 10s) {
    transport.start(req, obs);
    ioc.restart();
    ioc.run_for(bound);
    ASSERT_EQ(obs.completions, 1) << "the request did not complete within " << bound.count() << " s";
  }

  boost::asio::io_context ioc;
  SteadyClock clock;
  BaseUrl url;
  AsioTransport transport;
};

TransportOptions with_ca(const std::string& ca) {
  TransportOptions o;
  o.ca_cert = ca;
  o.connect_timeout = 5s;
  o.idle_timeout = 10s;
  o.timeout = 20s;
  return o;
}

// ---------------------------------------------------------------------------------------------
// HTTPS through nginx

class TlsTransport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = tls_tools_missing();
    if (skip_.empty()) env_ = new TlsEnv();
  }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  static TlsEnv* env_;
  static std::string skip_;
};
TlsEnv* TlsTransport::env_ = nullptr;
std::string TlsTransport::skip_;

TEST_F(TlsTransport, StreamsWithExactTokenCountsAndReusesTheConnection) {
  Client c(env_->good_url(), with_ca(env_->pki.ca_pem));
  constexpr int kRequests = 10;
  int streamed = 0;  // requests whose events arrived in pieces, not in one read
  for (int i = 0; i < kRequests; ++i) {
    TestObserver obs;
    c.run(completion(c.url, 12), obs);
    ASSERT_TRUE(obs.error.ok()) << obs.error.message;
    EXPECT_EQ(obs.status, 200);
    const auto s = summarize(obs.body);
    EXPECT_EQ(s.token_events, 12) << obs.body;
    EXPECT_EQ(s.usage_completion, 12);
    EXPECT_TRUE(s.done);
    if (obs.bodies >= 2) ++streamed;
  }
  // Streamed, not buffered by the proxy: a buffering proxy gives every response in one read. (A
  // stall of the 55 ms a body takes lets one arrive whole: all but two must come in pieces.)
  EXPECT_GE(streamed, kRequests - 2);
  // Sequential requests over keep-alive TLS connections.
  EXPECT_LT(c.transport.connections_opened(), static_cast<std::size_t>(kRequests));
  EXPECT_EQ(c.transport.connections_opened(), 1u);
}

TEST_F(TlsTransport, ServerClosingAnIdleTlsConnectionCostsNothing) {
  // nginx closes idle keep-alive connections after 200 ms (close_notify, then FIN): the pooled
  // connection is found closed and replaced, and the request does not fail.
  Client c("https://127.0.0.1:" + std::to_string(env_->proxy->short_keepalive_port()), with_ca(env_->pki.ca_pem));
  for (int i = 0; i < 2; ++i) {
    TestObserver obs;
    c.run(completion(c.url, 3), obs);
    ASSERT_TRUE(obs.error.ok()) << i << ": " << obs.error.message;
    EXPECT_EQ(summarize(obs.body).token_events, 3);
    if (i == 0) std::this_thread::sleep_for(800ms);
  }
  EXPECT_EQ(c.transport.connections_opened(), 2u);
}

TEST_F(TlsTransport, VerifiesAHostNameSentBySni) {
  Client c(env_->good_url("localhost"), with_ca(env_->pki.ca_pem));
  TestObserver obs;
  c.run(completion(c.url, 3), obs);
  ASSERT_TRUE(obs.error.ok()) << obs.error.message;
  EXPECT_EQ(summarize(obs.body).token_events, 3);
}

TEST_F(TlsTransport, UntrustedCertificateFailsWithTheReasonAndTheWaysOut) {
  TransportOptions o = with_ca("");  // the system's CAs, which do not include the test CA
  Client c(env_->good_url(), o);
  TestObserver obs;
  c.run(completion(c.url, 3), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kConnect);
  const std::string& m = obs.error.message;
  EXPECT_NE(m.find("certificate verify failed ("), std::string::npos) << m;
  EXPECT_NE(m.find("--ca-cert"), std::string::npos) << m;
  EXPECT_NE(m.find("--insecure"), std::string::npos) << m;
  EXPECT_NE(m.find("127.0.0.1:" + std::to_string(env_->proxy->good_port())), std::string::npos) << m;
  EXPECT_EQ(obs.sent, 0);
  EXPECT_EQ(obs.headers, 0);
}

TEST_F(TlsTransport, InsecureSkipsVerification) {
  TransportOptions o = with_ca("");
  o.insecure = true;
  for (const std::string& url : {env_->good_url(), env_->other_url()}) {
    Client c(url, o);
    TestObserver obs;
    c.run(completion(c.url, 4), obs);
    ASSERT_TRUE(obs.error.ok()) << url << ": " << obs.error.message;
    EXPECT_EQ(summarize(obs.body).token_events, 4);
  }
}

TEST_F(TlsTransport, CertificateForAnotherNameFailsVerification) {
  // Signed by the trusted CA, but for other.invalid only: neither 127.0.0.1 nor localhost match.
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    Client c(env_->other_url(host), with_ca(env_->pki.ca_pem));
    TestObserver obs;
    c.run(completion(c.url, 3), obs);
    EXPECT_EQ(obs.error.cls, ErrorClass::kConnect) << host;
    const std::string& m = obs.error.message;
    EXPECT_NE(m.find("certificate verify failed"), std::string::npos) << m;
    EXPECT_NE(m.find("mismatch"), std::string::npos) << m;  // OpenSSL: "IP address mismatch" / "hostname mismatch"
    EXPECT_NE(m.find("is not for '" + host + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("--insecure"), std::string::npos) << m;
  }
}

TEST_F(TlsTransport, HttpsToAPlainHttpServerFailsTheHandshake) {
  Client c("https://127.0.0.1:" + std::to_string(env_->server.port), with_ca(env_->pki.ca_pem));
  TestObserver obs;
  c.run(completion(c.url, 3), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kConnect);
  EXPECT_NE(obs.error.message.find("TLS handshake"), std::string::npos) << obs.error.message;
}

TEST_F(TlsTransport, ObserverDeadlineEndsATlsExchangeAndTheConnectionIsNotReused) {
  Client c(env_->good_url(), with_ca(env_->pki.ca_pem));
  TestObserver obs;
  obs.deadline_fn = [](const TestObserver& o) -> std::optional<TimePoint> {
    if (o.bodies > 0) return std::nullopt;
    return *o.t_sent + 200ms;
  };
  c.run(completion(c.url, 3, "slow-first-byte=5s"), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kFirstTokenTimeout) << obs.error.message;
  EXPECT_EQ(obs.deadline_calls, 1);
  EXPECT_LT(obs.elapsed(), 3s);
  // The next request works, on a new connection.
  TestObserver next;
  c.run(completion(c.url, 3), next);
  ASSERT_TRUE(next.error.ok()) << next.error.message;
  EXPECT_EQ(summarize(next.body).token_events, 3);
  EXPECT_EQ(c.transport.connections_opened(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Options and the connect timeout (no nginx needed)

TEST(TlsOptions, HttpsBaseUrls) {
  auto u = parse_base_url("HTTPS://example.com/v1");
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.port, "443");
  EXPECT_EQ(u.host_header(), "example.com");
  EXPECT_EQ(u.to_string(), "https://example.com");
  EXPECT_EQ(parse_base_url("https://h:8443").host_header(), "h:8443");
  EXPECT_EQ(parse_base_url("http://h").port, "80");
  EXPECT_THROW(parse_base_url("ftp://h"), ConfigError);
}

TEST(TlsOptions, TlsStreamTruncatedIsIncomplete) {
  const boost::system::error_code truncated = boost::asio::ssl::error::stream_truncated;
  EXPECT_EQ(net::classify_io_error(ErrorClass::kProtocol, truncated), ErrorClass::kIncomplete);  // before the head
  EXPECT_EQ(net::classify_io_error(ErrorClass::kIncomplete, truncated), ErrorClass::kIncomplete);  // in the body
}

TEST(TlsOptions, BadCaCertFileIsAConfigErrorNamingTheFile) {
  TempDir dir;
  const std::string missing = dir.file("missing.pem");
  const std::string not_pem = dir.file("not-a-cert.pem");
  {
    std::ofstream(not_pem) << "this is not a certificate\n";
  }
  const std::string empty = dir.file("empty.pem");
  {
    std::ofstream out(empty);
  }
  for (const auto& file : {missing, not_pem, empty}) {
    boost::asio::io_context ioc;
    SteadyClock clock;
    TransportOptions o;
    o.ca_cert = file;
    try {
      AsioTransport t(ioc, clock, parse_base_url("https://127.0.0.1:9"), o);
      ADD_FAILURE() << "no ConfigError for " << file;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--ca-cert"), std::string::npos) << e.what();
    }
  }
}

TEST(TlsOptions, ConnectTimeoutCoversTheTlsHandshake) {
  SilentListener silent;  // TCP connects; the handshake never gets an answer
  TransportOptions o;
  o.connect_timeout = 300ms;
  o.idle_timeout = 20s;
  o.timeout = 30s;
  Client c("https://127.0.0.1:" + std::to_string(silent.port()), o);
  TestObserver obs;
  const auto start = c.clock.now();
  c.run(completion(c.url, 3), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kConnectTimeout) << obs.error.message;
  EXPECT_EQ(obs.error.message, "connect to 127.0.0.1:" + std::to_string(silent.port()) +
                                   " timed out after 0.3 s (--connect-timeout)");
  EXPECT_LT(*obs.t_done - start, 5s);
  EXPECT_EQ(obs.sent, 0);
}

TEST(TlsOptions, ConnectTimeoutCoversTcpConnect) {
  FullBacklogListener full;
  if (!full.works()) GTEST_SKIP() << "this kernel answers connections beyond a full backlog";
  TransportOptions o;
  o.connect_timeout = 300ms;
  o.idle_timeout = 20s;
  o.timeout = 30s;
  Client c("http://127.0.0.1:" + std::to_string(full.port()), o);
  TestObserver obs;
  const auto start = c.clock.now();
  c.run(completion(c.url, 3), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kConnectTimeout) << obs.error.message;
  EXPECT_NE(obs.error.message.find("(--connect-timeout)"), std::string::npos) << obs.error.message;
  EXPECT_LT(*obs.t_done - start, 5s);
}

TEST(TlsOptions, WithoutAConnectTimeoutTheIdleTimeoutBoundsConnecting) {
  SilentListener silent;
  TransportOptions o;
  o.connect_timeout = Nanos::zero();
  o.idle_timeout = 300ms;
  o.timeout = 30s;
  Client c("https://127.0.0.1:" + std::to_string(silent.port()), o);
  TestObserver obs;
  c.run(completion(c.url, 3), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kIdleTimeout) << obs.error.message;
}

TEST(TlsOptions, TotalTimeoutDuringTheHandshakeIsATimeout) {
  SilentListener silent;
  TransportOptions o;
  o.connect_timeout = 10s;
  o.idle_timeout = 10s;
  o.timeout = 300ms;
  Client c("https://127.0.0.1:" + std::to_string(silent.port()), o);
  TestObserver obs;
  c.run(completion(c.url, 3), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kTimeout) << obs.error.message;
}

// ---------------------------------------------------------------------------------------------
// Observer deadlines over plain HTTP (llmload-server alone)

class TransportDeadline : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerHandle(start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "5ms"}));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static TransportOptions options() {
    TransportOptions o;
    o.connect_timeout = 5s;
    o.idle_timeout = 20s;
    o.timeout = 30s;
    return o;
  }
  static ServerHandle* server_;
};
ServerHandle* TransportDeadline::server_ = nullptr;

TEST_F(TransportDeadline, FirstTokenDeadlineEndsASlowRequest) {
  Client c(server_->base_url, options());
  TestObserver warm;
  c.run(completion(c.url, 2), warm);  // a pooled connection first
  ASSERT_TRUE(warm.error.ok()) << warm.error.message;
  ASSERT_EQ(c.transport.connections_opened(), 1u);

  TestObserver obs;
  obs.deadline_fn = [](const TestObserver& o) -> std::optional<TimePoint> {
    if (o.bodies > 0) return std::nullopt;
    return *o.t_sent + 50ms;
  };
  c.run(completion(c.url, 3, "slow-first-byte=5s"), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kFirstTokenTimeout);
  EXPECT_EQ(obs.error.message, "test deadline passed");
  EXPECT_EQ(obs.deadline_calls, 1);
  EXPECT_EQ(obs.headers, 0);
  ASSERT_TRUE(obs.t_deadline);
  EXPECT_GE(*obs.t_deadline - *obs.t_sent, 50ms);
  EXPECT_LT(obs.elapsed(), 3s);

  // The slow request's connection was closed, not pooled: the next one connects anew.
  TestObserver next;
  c.run(completion(c.url, 2), next);
  ASSERT_TRUE(next.error.ok()) << next.error.message;
  EXPECT_EQ(c.transport.connections_opened(), 2u);
}

TEST_F(TransportDeadline, DeadlineThatKeepsMovingOnNeverFires) {
  Client c(server_->base_url, options());
  TestObserver obs;
  // Each piece of progress pushes the deadline on; the stream (300 tokens, 5 ms apart: 1.5 s)
  // lasts much longer than one gap of 600 ms, so a timer that was not re-armed would fire.
  obs.deadline_fn = [](const TestObserver& o) -> std::optional<TimePoint> {
    return (o.t_last_body ? *o.t_last_body : *o.t_sent) + 600ms;
  };
  c.run(completion(c.url, 300), obs);
  ASSERT_TRUE(obs.error.ok()) << obs.error.message;
  EXPECT_EQ(obs.deadline_calls, 0);
  EXPECT_EQ(summarize(obs.body).token_events, 300);
  EXPECT_GE(obs.deadline_asks, 1 + obs.bodies);  // after on_sent and after every on_body
  EXPECT_GT(obs.elapsed(), 600ms);
}

TEST_F(TransportDeadline, InterTokenDeadlineFiresOnAStall) {
  Client c(server_->base_url, options());
  TestObserver obs;
  obs.deadline_class = ErrorClass::kInterTokenTimeout;
  obs.deadline_fn = [](const TestObserver& o) -> std::optional<TimePoint> {
    return (o.t_last_body ? *o.t_last_body : *o.t_sent) + 1s;
  };
  c.run(completion(c.url, 10, "stall=5s@4"), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kInterTokenTimeout);
  EXPECT_EQ(obs.deadline_calls, 1);
  EXPECT_EQ(obs.status, 200);
  EXPECT_EQ(summarize(obs.body).token_events, 4);  // the tokens before the stall
  ASSERT_TRUE(obs.t_deadline && obs.t_last_body);
  EXPECT_GE(*obs.t_deadline - *obs.t_last_body, 1s);
  EXPECT_LT(obs.elapsed(), 4s);
}

TEST_F(TransportDeadline, DeadlineMovedEarlierReArmsTheTimer) {
  Client c(server_->base_url, options());
  TestObserver obs;
  obs.deadline_class = ErrorClass::kInterTokenTimeout;
  // Far away until the first body; then fixed at first body + 200 ms (earlier than before).
  obs.deadline_fn = [](const TestObserver& o) -> std::optional<TimePoint> {
    if (!o.t_first_body) return *o.t_sent + 20s;
    return *o.t_first_body + 200ms;
  };
  c.run(completion(c.url, 10, "stall=5s@2"), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kInterTokenTimeout);
  EXPECT_EQ(obs.deadline_calls, 1);
  ASSERT_TRUE(obs.t_deadline && obs.t_first_body);
  EXPECT_GE(*obs.t_deadline - *obs.t_first_body, 200ms);
  EXPECT_LT(obs.elapsed(), 4s);
}

TEST_F(TransportDeadline, TotalTimeoutStillWinsOverALaterDeadline) {
  TransportOptions o = options();
  o.timeout = 300ms;
  Client c(server_->base_url, o);
  TestObserver obs;
  obs.deadline_fn = [](const TestObserver& ob) -> std::optional<TimePoint> { return *ob.t_sent + 10s; };
  c.run(completion(c.url, 3, "slow-first-byte=5s"), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kTimeout) << obs.error.message;
  EXPECT_EQ(obs.deadline_calls, 0);
}

TEST_F(TransportDeadline, CancelAllCancelsAWaitingRequest) {
  Client c(server_->base_url, options());
  TestObserver obs;
  obs.deadline_fn = [](const TestObserver& ob) -> std::optional<TimePoint> { return *ob.t_sent + 10s; };
  boost::asio::steady_timer later(c.ioc, 200ms);
  later.async_wait([&](const boost::system::error_code&) { c.transport.cancel_all(); });
  c.run(completion(c.url, 3, "slow-first-byte=5s"), obs);
  EXPECT_EQ(obs.error.cls, ErrorClass::kCanceled) << obs.error.message;
  EXPECT_EQ(obs.deadline_calls, 0);
}

// Kernel receive timestamps: a response that arrives while the event loop is busy keeps the
// time it arrived, not the time the loop got to it. The same run with them off shows the loop's
// delay, so the test can tell the two apart (it compares the two, never an absolute time).
TEST_F(TransportDeadline, KernelReceiveTimesAreNotDelayedByABusyEventLoop) {
  auto first_body_delay = [&](bool kernel) {
    TransportOptions o = options();
    o.kernel_timestamps = kernel;
    Client c(server_->base_url, o);
    TestObserver warm;
    c.run(completion(c.url, 1), warm);  // connected (and the stack's timestamping on) first
    EXPECT_TRUE(warm.error.ok()) << warm.error.message;
    TestObserver obs;
    // Right after the request goes out, the loop is blocked for 2 s; the first token comes
    // ~20 ms after the request (--ttft 20ms; a stalled server may add hundreds of ms).
    boost::asio::steady_timer block(c.ioc);
    block.expires_after(1ms);
    block.async_wait([](const boost::system::error_code&) { std::this_thread::sleep_for(2s); });
    c.run(completion(c.url, 2), obs);
    EXPECT_TRUE(obs.error.ok()) << obs.error.message;
    return obs.t_first_body && obs.t_sent ? *obs.t_first_body - *obs.t_sent : Nanos::max();
  };
  const Nanos loop_time = first_body_delay(false);
  const Nanos kernel_time = first_body_delay(true);
  EXPECT_GE(loop_time, 1900ms) << "the blocked loop delays the read";
  EXPECT_LT(kernel_time + 1s, loop_time) << "kernel " << kernel_time.count() << " ns, loop " << loop_time.count();
}


// ---------------------------------------------------------------------------------------------
// The plain-TCP receive path (issue 20): a connection's socket is registered once in the
// transport's epoll set; each readable socket costs one read, and a short read is not followed
// by a read that only finds the socket empty. These tests check what the reads deliver and
// count them (TransportStats); they compare times only with each other, never with a constant.

// A one-connection HTTP server on a thread: accepts, reads the request head, then writes each
// piece after `pause`, noting (on the steady clock, as the transport's) when each write began,
// and closes.
class ScriptedServer {
 public:
  ScriptedServer(std::vector<std::string> pieces, Nanos pause) : pieces_(std::move(pieces)), pause_(pause) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 4) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("ScriptedServer: cannot listen on loopback");
    }
    port_ = ntohs(a.sin_port);
    wrote_.resize(pieces_.size());
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    ::shutdown(listener_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // When the write of each piece began (valid once the request completed).
  const std::vector<TimePoint>& wrote() const { return wrote_; }

 private:
  void serve() {
    const int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<std::size_t>(n));
    }
    SteadyClock clock;
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      if (pause_ > Nanos::zero()) std::this_thread::sleep_for(pause_);
      wrote_[i] = clock.now();
      (void)::send(fd, pieces_[i].data(), pieces_[i].size(), MSG_NOSIGNAL);
    }
    ::close(fd);
  }
  std::vector<std::string> pieces_;
  Nanos pause_;
  std::vector<TimePoint> wrote_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// Keeps every read (its time and bytes).
class ReadLog final : public ResponseObserver {
 public:
  void on_sent(TimePoint) override {}
  void on_headers(TimePoint, int s, std::string_view) override { status = s; }
  bool on_body(TimePoint t, std::string_view bytes) override {
    body.append(bytes);
    ends.emplace_back(body.size(), t);
    return true;
  }
  void on_complete(TimePoint, const TransportError& e) override {
    ++completions;
    error = e;
  }
  // The time of the read that delivered the body's byte at `offset`.
  TimePoint time_of(std::size_t offset) const {
    for (const auto& [end, t] : ends) {
      if (offset < end) return t;
    }
    return TimePoint::max();
  }
  int status = 0;
  int completions = 0;
  std::string body;
  std::vector<std::pair<std::size_t, TimePoint>> ends;  // body size after each read, its time
  TransportError error;
};

HttpRequest get(const BaseUrl& url) {
  HttpRequest r;
  r.method = "GET";
  r.target = "/stream";
  r.headers = {{"Host", url.host_header()}};
  return r;
}

void run_log(Client& c, ReadLog& log) {
  c.transport.start(get(c.url), log);
  c.ioc.restart();
  c.ioc.run_for(10s);
  ASSERT_EQ(log.completions, 1) << "the request did not complete within 10 s";
}

// Each SSE event reaches the client in three writes, 50 ms apart: the event's time is the time of
// the read that completed it (after its last piece was written), not that of an earlier read,
// and each piece costs one read. (The pause is what a stalled client must not outlast: a read
// 50 ms late would take the next piece too, with its time. CI saw stalls of tens of ms.)
TEST(PlainReceivePath, EventSplitOverSeveralWritesKeepsTheTimeOfItsLastPiece) {
  constexpr int kEvents = 5;
  std::vector<std::string> pieces{
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"};
  std::string expected;
  std::vector<std::size_t> last_piece(kEvents);  // index of each event's last piece
  for (int k = 0; k < kEvents; ++k) {
    const std::string event = "data: {\"token\": " + std::to_string(k) + ", \"text\": \"abcdefghijklmnop\"}\n\n";
    expected += event;
    const std::string chunk = fmt::format("{:x}\r\n", event.size()) + event + "\r\n";
    const std::size_t third = chunk.size() / 3;
    pieces.push_back(chunk.substr(0, third));
    pieces.push_back(chunk.substr(third, third));
    pieces.push_back(chunk.substr(2 * third));
    last_piece[static_cast<std::size_t>(k)] = pieces.size() - 1;
  }
  pieces.push_back("0\r\n\r\n");
  ScriptedServer server(pieces, 50ms);
  TransportOptions o;
  o.idle_timeout = 20s;
  o.timeout = 30s;
  Client c(server.url(), o);
  ReadLog log;
  run_log(c, log);
  ASSERT_TRUE(log.error.ok()) << log.error.message;
  EXPECT_EQ(log.status, 200);
  ASSERT_EQ(log.body, expected);
  std::size_t end = 0;
  for (int k = 0; k < kEvents; ++k) {
    end = log.body.find("\n\n", end) + 2;
    const TimePoint t = log.time_of(end - 1);
    const std::size_t last = last_piece[static_cast<std::size_t>(k)];
    // Later than the write of the piece before its last (50 ms before the last one)...
    EXPECT_GT(t, server.wrote()[last - 1]) << "event " << k;
    // ... and earlier than the next piece's write (50 ms after).
    EXPECT_LT(t, server.wrote()[last + 1]) << "event " << k;
  }
  const net::TransportStats st = c.transport.stats();
  EXPECT_EQ(st.registrations, 1u);  // the socket entered the epoll set once
  // One read per piece written (the head and the end included), none more: no read that only
  // finds the socket empty after the request went out or after a short read.
  // (An empty read needs a piece to land in the microseconds between the wake-up and the read of
  // the one before, 50 ms earlier.)
  EXPECT_LE(st.reads, pieces.size());
  EXPECT_EQ(st.empty_reads, 0u);
}

// A body that ends with the connection (no length, no chunks), the last bytes and the FIN
// together, before and after the client waits: the end is seen (a FIN that came with the last
// bytes raises no new event, so the client reads on after a hang-up event).
TEST(PlainReceivePath, LastBytesArrivingWithTheCloseEndTheResponse) {
  for (const Nanos pause : {Nanos::zero(), Nanos(5ms)}) {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    const std::string body = "data: one\n\ndata: two\n\n";
    ScriptedServer server({head, body}, pause);
    TransportOptions o;
    o.idle_timeout = 20s;
    o.timeout = 30s;
    Client c(server.url(), o);
    ReadLog log;
    run_log(c, log);
    EXPECT_TRUE(log.error.ok()) << log.error.message;
    EXPECT_EQ(log.body, body);
  }
}

// Many streams on one transport: every token arrives, each connection is registered once, and
// the reads are at most one per token event and end of stream (the server writes each token by
// itself), however many sockets each wake-up finds ready.
TEST_F(TransportDeadline, ConcurrentStreamsRegisterOnceAndReadOncePerArrival) {
  Client c(server_->base_url, options());
  constexpr int kStreams = 20;
  constexpr int kTokens = 40;
  std::vector<TestObserver> obs(kStreams);
  for (auto& o : obs) c.transport.start(completion(c.url, kTokens), o);
  c.ioc.restart();
  c.ioc.run_for(20s);
  for (auto& o : obs) {
    ASSERT_EQ(o.completions, 1);
    ASSERT_TRUE(o.error.ok()) << o.error.message;
    EXPECT_EQ(summarize(o.body).token_events, kTokens);
  }
  const net::TransportStats st = c.transport.stats();
  EXPECT_EQ(st.registrations, c.transport.connections_opened());
  // Per stream: the head, kTokens token events, the usage event, [DONE] and the end (the server
  // may write some of them together; never more reads than writes).
  EXPECT_LE(st.reads - st.empty_reads, static_cast<std::uint64_t>(kStreams * (kTokens + 4)));
  EXPECT_GE(st.wakeups, 1u);
}

// A pooled connection is looked at before it carries a request (a server's keep-alive timeout
// may have closed it while nobody watched): one still open is reused, one the server closed is
// replaced before the request goes out, so the request neither fails nor is sent twice.
TEST(PlainPool, AnIdleConnectionIsLookedAtAndOneTheServerClosedIsReplaced) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "1ms", "--keepalive-timeout", "2s"});
  TransportOptions o;
  o.connect_timeout = 5s;
  o.idle_timeout = 20s;
  o.timeout = 30s;
  Client c(server.base_url, o);
  auto one = [&] {
    TestObserver obs;
    c.run(completion(c.url, 2), obs);
    EXPECT_TRUE(obs.error.ok()) << obs.error.message;
    EXPECT_EQ(summarize(obs.body).token_events, 2);
  };
  one();
  std::this_thread::sleep_for(20ms);  // idle, well within the server's keep-alive timeout
  one();
  net::TransportStats st = c.transport.stats();
  EXPECT_EQ(c.transport.connections_opened(), 1u);
  EXPECT_EQ(st.idle_checks, 1u);
  EXPECT_EQ(st.stale, 0u);
  std::this_thread::sleep_for(3s);  // the server closes the idle connection after 2 s
  one();
  st = c.transport.stats();
  EXPECT_EQ(c.transport.connections_opened(), 2u);  // replaced (stale, below), not sent on and retried
  EXPECT_EQ(st.idle_checks, 2u);
  EXPECT_EQ(st.stale, 1u);
}

}  // namespace
}  // namespace llmload::testing
