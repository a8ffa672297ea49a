// The MetricsScraper (loadgen/net/metrics_scraper.hpp) on loopback: against the real
// llmload-server under load (the series move, the server's TTFT count equals the requests made,
// the cross-check), through nginx over HTTPS, and against servers without a usable /metrics
// (404, HTML, refused, silent, gone mid-run): those give available=false or recorded errors,
// never an exception.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "llmload/loadgen/net/asio_transport.hpp"
#include "llmload/loadgen/net/metrics_scraper.hpp"
#include "llmload/loadgen/url.hpp"
#include "subprocess.hpp"
#include "tls_env.hpp"

namespace llmload::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// ------------------------------------------------------------------------------ helpers

// A loopback HTTP server that answers every request with one canned response and closes the
// connection (or, `silent`, reads the request and never answers). Records the request heads.
class CannedServer {
 public:
  CannedServer(std::string response, bool silent = false) : response_(std::move(response)), silent_(silent) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~CannedServer() {
    stop_ = true;
    thread_.join();
    for (int c : parked_) ::close(c);
    ::close(fd_);
  }
  CannedServer(const CannedServer&) = delete;
  CannedServer& operator=(const CannedServer&) = delete;

  std::string url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<std::string> heads() const {
    std::lock_guard lock(mu_);
    return heads_;
  }

 private:
  void loop() {
    while (!stop_) {  // bounded by the destructor
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string head;
      // Read the head: at most 64 KiB, at most 2 s.
      for (int i = 0; i < 100 && head.find("\r\n\r\n") == std::string::npos && head.size() < 65536; ++i) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 20) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        heads_.push_back(head);
      }
      if (silent_) {
        parked_.push_back(c);  // never answered; closed by the destructor
        continue;
      }
      std::size_t off = 0;
      while (off < response_.size()) {
        const ssize_t n = ::write(c, response_.data() + off, response_.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
  }

  std::string response_;
  bool silent_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> heads_;
  std::vector<int> parked_;
};

std::string http_response(int status, const std::string& reason, const std::string& type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

net::ScraperOptions options_for(const std::string& base_url) {
  net::ScraperOptions o;
  o.url = parse_base_url(base_url);
  o.interval = 20ms;
  o.timeout = 2s;
  o.settle_timeout = 2s;
  return o;
}

// One streamed completion; records when it was sent and when its first bytes arrived.
class Stream final : public ResponseObserver {
 public:
  void on_sent(TimePoint t) override { sent = t; }
  void on_headers(TimePoint, int s, std::string_view) override { status = s; }
  bool on_body(TimePoint t, std::string_view bytes) override {
    if (!first) first = t;
    body.append(bytes);
    return true;
  }
  void on_complete(TimePoint, const TransportError& e) override {
    error = e;
    done = true;
  }
  TimePoint sent{};
  std::optional<TimePoint> first;
  int status = 0;
  std::string body;
  TransportError error;
  bool done = false;
};

// Sends `n` streamed completions of `max_tokens` tokens at once and waits for all of them.
// Returns the client's mean TTFT in ms (send -> first body bytes).
double drive_load(const std::string& base_url, int n, int max_tokens, std::vector<Stream>& streams) {
  boost::asio::io_context ioc;
  SteadyClock clock;
  net::TransportOptions topts;
  topts.timeout = 30s;
  net::AsioTransport transport(ioc, clock, parse_base_url(base_url), topts);
  streams = std::vector<Stream>(static_cast<std::size_t>(n));
  const json body = {{"model", "llmload-mock"},
                     {"prompt", "the quick brown fox jumps over the lazy dog"},
                     {"max_tokens", max_tokens},
                     {"stream", true},
                     {"ignore_eos", true}};
  for (auto& s : streams) {
    HttpRequest req;
    req.target = "/v1/completions";
    req.headers = {{"Host", parse_base_url(base_url).host_header()}, {"Content-Type", "application/json"}};
    req.body = body.dump();
    transport.start(req, s);
  }
  ioc.run();
  double total_ms = 0;
  for (const auto& s : streams) {
    EXPECT_TRUE(s.done && s.error.ok()) << s.error.message;
    EXPECT_EQ(s.status, 200);
    EXPECT_TRUE(s.first.has_value());
    if (s.first) total_ms += std::chrono::duration<double, std::milli>(*s.first - s.sent).count();
  }
  return total_ms / n;
}

// ------------------------------------------------------------------- against llmload-server

// The engine simulator on the CPU roofline: requests of 48 tokens take a few hundred ms, long
// enough for several 20 ms scrapes to see them running.
TEST(scrape, series_move_under_load_and_server_ttft_counts_the_requests) {
  auto server = start_server({"--device", "cpu", "--seed", "1"});
  auto opts = options_for(server.base_url);
  opts.server_hint = "llmload";  // /v1/models owned_by
  net::MetricsScraper scraper(opts);
  ASSERT_TRUE(scraper.probe()) << scraper.reason();
  EXPECT_TRUE(scraper.available());
  EXPECT_EQ(scraper.reason(), "");
  scraper.start();  // the before snapshot
  scraper.set_t0(SteadyClock().now());  // the run starts after it

  constexpr int kRequests = 8;
  constexpr int kTokens = 48;
  std::vector<Stream> streams;
  const double client_mean_ttft_ms = drive_load(server.base_url, kRequests, kTokens, streams);
  scraper.stop();
  scraper.stop();  // idempotent

  const json j = scraper.to_json();
  SCOPED_TRACE(j.dump(1));
  EXPECT_TRUE(j["available"].get<bool>());
  EXPECT_EQ(j["flavor"], "llmload-server");
  EXPECT_EQ(j["endpoint"], server.base_url + "/metrics");
  EXPECT_EQ(j["errors"], 0);
  EXPECT_DOUBLE_EQ(j["interval_s"].get<double>(), 0.02);

  // Before: idle. During: running > 0 at some point, KV cache in use. After: idle again.
  EXPECT_DOUBLE_EQ(j["before"]["running"].get<double>(), 0);
  EXPECT_LE(j["before"]["t_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["after"]["running"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["after"]["waiting"].get<double>(), 0);
  const auto& s = j["series"];
  const std::size_t points = s["t_s"].size();
  EXPECT_GE(points, 4u);  // before, after and scrapes during the load
  for (const char* key : {"running", "waiting", "kv_cache_usage", "preemptions", "generation_tokens"}) {
    EXPECT_EQ(s[key].size(), points) << key;
  }
  for (std::size_t i = 1; i < points; ++i) EXPECT_GT(s["t_s"][i].get<double>(), s["t_s"][i - 1].get<double>());
  double max_running = 0;
  double max_kv = 0;
  for (std::size_t i = 0; i < points; ++i) {
    max_running = std::max(max_running, s["running"][i].get<double>());
    max_kv = std::max(max_kv, s["kv_cache_usage"][i].get<double>());
  }
  EXPECT_GE(max_running, 1.0);
  EXPECT_LE(max_running, kRequests);
  EXPECT_GT(max_kv, 0.0);
  EXPECT_DOUBLE_EQ(j["peak"]["running"].get<double>(), max_running);
  // Counters are deltas since the before snapshot: they start at 0 and never go down.
  EXPECT_DOUBLE_EQ(s["generation_tokens"][0].get<double>(), 0);
  for (std::size_t i = 1; i < points; ++i) {
    EXPECT_GE(s["generation_tokens"][i].get<double>(), s["generation_tokens"][i - 1].get<double>());
  }
  EXPECT_DOUBLE_EQ(s["generation_tokens"][points - 1].get<double>(), kRequests * kTokens);
  EXPECT_DOUBLE_EQ(j["delta"]["requests_finished"].get<double>(), kRequests);
  EXPECT_DOUBLE_EQ(j["delta"]["generation_tokens"].get<double>(), kRequests * kTokens);

  // The server's histograms between the snapshots: exactly the requests made.
  EXPECT_EQ(j["server_ttft"]["metric"], "vllm:time_to_first_token_seconds");
  EXPECT_DOUBLE_EQ(j["server_ttft"]["count"].get<double>(), kRequests);
  EXPECT_GT(j["server_ttft"]["mean_ms"].get<double>(), 0);
  EXPECT_LE(j["server_ttft"]["p50_ms"].get<double>(), j["server_ttft"]["p99_ms"].get<double>());
  EXPECT_DOUBLE_EQ(j["server_e2e"]["count"].get<double>(), kRequests);
  EXPECT_DOUBLE_EQ(j["server_queue"]["count"].get<double>(), kRequests);
  EXPECT_DOUBLE_EQ(j["server_itl"]["count"].get<double>(), kRequests * (kTokens - 1));

  // Client vs server: the client's clock starts before the server's (it sends, then the server
  // receives) and stops after it (the server writes, then the client reads). The margin only
  // covers converting the kernel's receive timestamps to the monotonic clock.
  const auto c = net::cross_check_ttft(client_mean_ttft_ms, client_mean_ttft_ms, j, kRequests);
  EXPECT_TRUE(c["available"].get<bool>()) << c.dump();
  EXPECT_TRUE(c["count_matches"].get<bool>());
  EXPECT_GE(c["mean_diff_ms"].get<double>(), -1.0);
  EXPECT_FALSE(c["caveat"].get<std::string>().empty());

  // The raw snapshots.
  EXPECT_NE(scraper.before_text().find("vllm:num_requests_running"), std::string::npos);
  EXPECT_NE(scraper.after_text().find("vllm:time_to_first_token_seconds_bucket"), std::string::npos);
  server.proc->signal(SIGTERM);
  EXPECT_EQ(server.proc->wait(10s), 0);
}

// Before and after only (interval 0): no thread, the same histograms.
TEST(scrape, before_and_after_only) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms"});
  auto opts = options_for(server.base_url);
  opts.interval = 0ms;
  net::MetricsScraper scraper(opts);
  scraper.start();  // probes itself
  EXPECT_TRUE(scraper.available());
  std::vector<Stream> streams;
  drive_load(server.base_url, 3, 4, streams);
  scraper.stop();
  const json j = scraper.to_json();
  EXPECT_EQ(j["flavor"], "vllm");  // no hint: vLLM's names
  EXPECT_GE(j["scrapes"].get<int>(), 2);  // before, after (and the settling scrapes between)
  EXPECT_EQ(j["series"]["t_s"].size(), j["scrapes"].get<std::size_t>());
  EXPECT_DOUBLE_EQ(j["server_ttft"]["count"].get<double>(), 3);
}

// The server dies during the run: the scrapes fail and are counted, stop() takes no after
// snapshot, nothing throws.
TEST(scrape, server_gone_mid_run_is_recorded) {
  auto server = start_server({"--latency-model", "fixed"});
  auto opts = options_for(server.base_url);
  opts.timeout = 500ms;
  net::MetricsScraper scraper(opts);
  ASSERT_TRUE(scraper.probe());
  scraper.start();
  server.proc->signal(SIGTERM);
  EXPECT_EQ(server.proc->wait(10s), 0);
  std::this_thread::sleep_for(100ms);  // a few 20 ms slots
  EXPECT_NO_THROW(scraper.stop());
  const json j = scraper.to_json();
  EXPECT_TRUE(j["available"].get<bool>());
  EXPECT_GE(j["errors"].get<int>(), 1);
  EXPECT_FALSE(j["error_messages"].empty());
  EXPECT_TRUE(j["after"].is_null());
  EXPECT_TRUE(j["server_ttft"].is_null());
  EXPECT_FALSE(j["notes"].empty());
  EXPECT_FALSE(net::cross_check_ttft(10, 10, j)["available"].get<bool>());
}

// ----------------------------------------------------------------- servers without /metrics

void expect_unavailable(net::MetricsScraper& scraper, const std::string& says) {
  EXPECT_NO_THROW(EXPECT_FALSE(scraper.probe()));
  EXPECT_FALSE(scraper.available());
  EXPECT_NO_THROW(scraper.start());
  EXPECT_NO_THROW(scraper.stop());
  const json j = scraper.to_json();
  EXPECT_FALSE(j["available"].get<bool>());
  const std::string reason = j["reason"].get<std::string>();
  EXPECT_EQ(reason.rfind("not available: ", 0), 0u) << reason;
  EXPECT_NE(reason.find(says), std::string::npos) << reason;
  EXPECT_EQ(scraper.reason(), reason);
  EXPECT_FALSE(net::cross_check_ttft(10, 10, j)["available"].get<bool>());
}

TEST(scrape, not_found_is_not_available) {
  CannedServer s(http_response(404, "Not Found", "application/json", "{\"detail\":\"Not Found\"}"));
  net::MetricsScraper scraper(options_for(s.url()));
  expect_unavailable(scraper, "HTTP 404");
  EXPECT_EQ(s.heads().size(), 1u);  // probed once; start() and stop() send nothing
}

TEST(scrape, html_page_is_not_available) {
  CannedServer s(http_response(200, "OK", "text/html", "<html><body>Welcome</body></html>\n"));
  net::MetricsScraper scraper(options_for(s.url()));
  expect_unavailable(scraper, "not the Prometheus text format: line 1");
}

TEST(scrape, empty_body_is_not_available) {
  CannedServer s(http_response(200, "OK", "text/plain", ""));
  net::MetricsScraper scraper(options_for(s.url()));
  expect_unavailable(scraper, "holds no metrics");
}

TEST(scrape, refused_connection_is_not_available) {
  const int port = free_port();  // nothing listens there
  net::MetricsScraper scraper(options_for("http://127.0.0.1:" + std::to_string(port)));
  expect_unavailable(scraper, "GET http://127.0.0.1:" + std::to_string(port) + "/metrics");
}

TEST(scrape, silent_server_times_out) {
  CannedServer s("", /*silent=*/true);
  auto opts = options_for(s.url());
  opts.timeout = 200ms;
  net::MetricsScraper scraper(opts);
  const auto t = std::chrono::steady_clock::now();
  expect_unavailable(scraper, "timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t, 10s);  // bounded by the scrape timeout, not hung
}

// The run's API key and extra headers go with the scrape; the path keeps the base URL's prefix.
TEST(scrape, sends_auth_headers_and_prefix) {
  CannedServer s(http_response(200, "OK", "text/plain; version=0.0.4",
                               "# TYPE up gauge\nup 1\nhttp_requests_total{code=\"200\"} 5\n"));
  auto opts = options_for(s.url("/proxy/v1"));
  opts.api_key = "sk-test";
  opts.headers = {{"X-Team", "perf"}};
  opts.interval = 0ms;
  opts.settle_timeout = 0ms;
  net::MetricsScraper scraper(opts);
  ASSERT_TRUE(scraper.probe()) << scraper.reason();
  EXPECT_EQ(scraper.url(), s.url("/proxy/metrics"));
  scraper.start();
  scraper.stop();
  const auto heads = s.heads();
  ASSERT_EQ(heads.size(), 3u);  // probe, before, after
  for (const auto& h : heads) {
    EXPECT_EQ(h.rfind("GET /proxy/metrics HTTP/1.1\r\n", 0), 0u) << h;
    EXPECT_NE(h.find("Authorization: Bearer sk-test\r\n"), std::string::npos) << h;
    EXPECT_NE(h.find("X-Team: perf\r\n"), std::string::npos) << h;
  }
  const json j = scraper.to_json();
  EXPECT_TRUE(j["available"].get<bool>());
  EXPECT_EQ(j["flavor"], "unknown");
  EXPECT_TRUE(j["series"]["running"][0].is_null());
  EXPECT_TRUE(j["server_ttft"].is_null());
}

// ------------------------------------------------------------------------------------- TLS

TEST(scrape, https_through_nginx) {
  if (const std::string missing = tls_tools_missing(); !missing.empty()) GTEST_SKIP() << missing;
  TlsEnv env;
  auto opts = options_for(env.good_url());
  opts.ca_cert = env.pki.ca_pem;
  opts.interval = 0ms;
  net::MetricsScraper scraper(opts);
  ASSERT_TRUE(scraper.probe()) << scraper.reason();
  scraper.start();
  scraper.stop();
  EXPECT_EQ(scraper.to_json()["flavor"], "vllm");
  EXPECT_GE(scraper.to_json()["scrapes"].get<int>(), 2);
  EXPECT_EQ(scraper.to_json()["errors"], 0);

  // The same server without its CA: the certificate is refused, recorded, not thrown.
  net::MetricsScraper untrusted(options_for(env.good_url()));
  expect_unavailable(untrusted, "certificate");
  // --insecure accepts it.
  auto insecure = options_for(env.good_url());
  insecure.insecure = true;
  net::MetricsScraper ok(insecure);
  EXPECT_TRUE(ok.probe()) << ok.reason();
}

}  // namespace
}  // namespace llmload::testing
