// llmload_ttft_truth: llmload's own TTFT next to llmload-server's ground truth, per request, for
// builds of llmload that do not yet record the server's "llmload" object in requests.jsonl
// (bench/client_ttft_error.sh uses it then; docs/benchmarks.md, "Client cost (issue 5)").
//
// It runs a closed-loop concurrency scenario through the same code as `llmload run`
// (RequestBuilder, RunController with its RequestTracker per request, AsioTransport, drive()), with
// one addition: a Transport decorator hands every observer callback on unchanged (first, so the
// tracker's timestamps are taken exactly as in llmload) and then looks for "first_token_s",
// "queue_s" and "last_token_s" in the body bytes (a substring search per read). Records and
// ground truth are paired by completion order. Output: one JSON line per request, with the
// fields of requests.jsonl that the error needs (index, warmup, ok, ttft_ms) and
// "server": {"queue_s", "first_token_s", "last_token_s"}.
//
// Usage: llmload_ttft_truth BASE_URL CONCURRENCY REQUESTS WARMUP INPUT_TOKENS OUTPUT_TOKENS OUT.jsonl
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include "llmload/loadgen/net/asio_transport.hpp"
#include "llmload/loadgen/net/driver.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/url.hpp"

namespace {

using namespace llmload;

struct Truth {
  std::optional<double> queue_s;
  std::optional<double> first_token_s;
  std::optional<double> last_token_s;
};

// Finds `"key":NUMBER` in text; nullopt when absent or cut off by the end of the text.
std::optional<double> number_after(std::string_view text, std::string_view key) {
  const auto at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + key.size();
  const std::size_t end = text.find_first_of(",}", i);
  if (end == std::string_view::npos) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(text.data() + i, text.data() + end, v);
  if (ec != std::errc() || p != text.data() + end) return std::nullopt;
  return v;
}

class TeeObserver final : public ResponseObserver {
 public:
  TeeObserver(ResponseObserver& inner, std::vector<Truth>& out) : inner_(inner), out_(out) {}
  void on_sent(TimePoint t) override { inner_.on_sent(t); }
  void on_header_field(std::string_view n, std::string_view v) override { inner_.on_header_field(n, v); }
  void on_headers(TimePoint t, int s, std::string_view ct) override { inner_.on_headers(t, s, ct); }
  bool on_body(TimePoint t, std::string_view bytes) override {
    const bool go_on = inner_.on_body(t, bytes);
    if (!truth_.first_token_s) {
      // The object may straddle two reads: search the end of the previous read plus this one.
      std::string_view text = bytes;
      std::string joined;
      if (!carry_.empty()) {
        joined = carry_ + std::string(bytes.substr(0, 512));
        text = joined;
      }
      if (text.find("\"llmload\"") != std::string_view::npos || bytes.find("\"llmload\"") != std::string_view::npos) {
        for (std::string_view s : {text, bytes}) {
          const auto at = s.find("\"llmload\"");
          if (at == std::string_view::npos) continue;
          const std::string_view obj = s.substr(at);
          if (auto f = number_after(obj, "\"first_token_s\":")) {
            truth_.first_token_s = f;
            truth_.queue_s = number_after(obj, "\"queue_s\":");
            truth_.last_token_s = number_after(obj, "\"last_token_s\":");
            break;
          }
        }
      }
      carry_.assign(bytes.substr(bytes.size() > 512 ? bytes.size() - 512 : 0));
    }
    return go_on;
  }
  void on_complete(TimePoint t, const TransportError& e) override {
    inner_.on_complete(t, e);  // RunController::complete appends the record now
    out_.push_back(truth_);
  }
  std::optional<TimePoint> deadline() const override { return inner_.deadline(); }
  TransportError on_deadline(TimePoint now) override { return inner_.on_deadline(now); }

 private:
  ResponseObserver& inner_;
  std::vector<Truth>& out_;
  Truth truth_;
  std::string carry_;
};

class TeeTransport final : public Transport {
 public:
  explicit TeeTransport(Transport& inner) : inner_(inner) {}
  void start(const HttpRequest& request, ResponseObserver& observer) override {
    auto tee = std::make_unique<TeeObserver>(observer, truths);
    TeeObserver& ref = *tee;
    tees_.push_back(std::move(tee));  // kept to the end of the run (small)
    inner_.start(request, ref);
  }
  void cancel_all() override { inner_.cancel_all(); }
  std::vector<Truth> truths;  // in completion order

 private:
  Transport& inner_;
  std::vector<std::unique_ptr<TeeObserver>> tees_;
};

std::string opt(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "null"; }
std::string ms(const std::optional<Nanos>& v) { return v ? fmt::format("{}", v->count() / 1e6) : "null"; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s BASE_URL CONCURRENCY REQUESTS WARMUP INPUT_TOKENS OUTPUT_TOKENS OUT.jsonl\n", argv[0]);
    return 2;
  }
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.base_url = argv[1];
  cfg.concurrency = std::atoll(argv[2]);
  cfg.num_requests = std::atoll(argv[3]);
  cfg.warmup.requests = std::atoll(argv[4]);
  cfg.input_tokens = std::atoll(argv[5]);
  cfg.output_tokens = std::atoll(argv[6]);
  cfg.endpoint = ApiKind::kChat;
  cfg.backend = "openai-chat";
  cfg.model = "llmload-mock";
  cfg.seed = 1;
  cfg.validate();
  const BaseUrl url = parse_base_url(cfg.base_url);

  boost::asio::io_context ioc;
  SteadyClock clock;
  net::TransportOptions topts;
  topts.timeout = cfg.timeout;
  topts.idle_timeout = cfg.idle_timeout;
  net::AsioTransport transport(ioc, clock, url, topts);
  TeeTransport tee(transport);
  RequestBuilder builder(cfg, url.path, url.host_header());
  auto pacer = make_pacer(cfg);
  RunController controller(cfg, clock, *pacer, tee, builder);
  net::DriveOptions dopts;
  net::drive(ioc, controller, dopts);

  const auto records = analysis::to_vector(controller.records());
  if (records.size() != tee.truths.size()) {
    std::fprintf(stderr, "records (%zu) and ground truths (%zu) do not pair up\n", records.size(), tee.truths.size());
    return 1;
  }
  std::ofstream f(argv[7]);
  std::size_t with_truth = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const auto& t = tee.truths[i];
    const auto ttft = r.ttft();
    f << fmt::format(R"({{"index":{},"warmup":{},"ok":{},"ttft_ms":{},"t_send_ms":{},"t_headers_ms":{},"server":{}}})",
                     r.index, r.warmup, r.ok(), ttft ? fmt::format("{}", ttft->count() / 1e6) : "null", ms(r.t_send),
                     ms(r.t_headers),
                     t.first_token_s ? fmt::format(R"({{"queue_s":{},"first_token_s":{},"last_token_s":{}}})",
                                                   opt(t.queue_s), opt(t.first_token_s), opt(t.last_token_s))
                                     : "null")
      << '\n';
    if (t.first_token_s) ++with_truth;
  }
  std::fprintf(stderr, "llmload_ttft_truth: %zu requests, %zu with the server's ground truth\n", records.size(),
               with_truth);
  return f ? 0 : 1;
}
