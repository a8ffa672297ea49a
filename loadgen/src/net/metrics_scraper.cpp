#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "llmload/loadgen/net/metrics_scraper.hpp"
#include "response_collector.hpp"

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "llmload/loadgen/net/asio_transport.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload::net {

namespace asio = boost::asio;
namespace prom = analysis::prom;

namespace {

double seconds_of(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }


struct Fetched {
  std::optional<prom::Exposition> exposition;  // set on success
  std::string body;
  std::string error;  // set on failure
  TimePoint t{};      // when the server rendered it (estimate)
};

}  // namespace

struct MetricsScraper::Impl {
  explicit Impl(ScraperOptions o) : options(std::move(o)), recording(options.max_points), collector(options.max_body_bytes) {
    target = options.path.empty() ? options.url.path + "/metrics" : options.path;
    if (target.empty() || target.front() != '/') target.insert(target.begin(), '/');
    endpoint = options.url.scheme + "://" + options.url.host_header() + target;
    recording.set_endpoint(endpoint);
    recording.set_hint(options.server_hint);
    recording.set_interval(std::chrono::duration<double>(options.interval).count());
    t0 = options.t0;
  }

  ScraperOptions options;
  std::string target;
  std::string endpoint;
  SteadyClock clock;
  asio::io_context ioc;
  asio::steady_timer timer{ioc};
  std::unique_ptr<AsioTransport> transport;  // after ioc and clock: destroyed before them
  std::thread thread;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;  // guards what follows (the loop thread writes, to_json reads)
  prom::ServerMetricsRecording recording;
  std::optional<TimePoint> t0;
  std::string before_body;
  std::string after_body;
  std::optional<Fetched> probed;  // the probe's answer, the "before" fallback
  bool did_probe = false;
  bool started = false;
  bool stopped = false;

  // Loop-thread state.
  ResponseCollector collector;
  TimePoint scrape_start{};
  TimePoint next_due{};

  HttpRequest request() const {
    HttpRequest req;
    req.method = "GET";
    req.target = target;
    req.set_headers(options.url.host_header(), {{"Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1"}},
                    options.api_key, options.headers);
    return req;
  }

  // What a completed exchange gave.
  Fetched finish(const ResponseCollector& c, TimePoint started_at) const {
    Fetched f;
    f.t = started_at;
    if (c.t_sent && c.t_headers) f.t = *c.t_sent + (*c.t_headers - *c.t_sent) / 2;
    const std::string what = "GET " + endpoint;
    if (!c.complete) {
      f.error = what + ": no answer";
    } else if (c.overflow) {
      f.error = fmt::format("{}: the response is larger than {} bytes", what, options.max_body_bytes);
    } else if (!c.error.ok()) {
      f.error = what + ": " + c.error.message;
    } else if (c.status != 200) {
      f.error = fmt::format("{} returned HTTP {}{}", what, c.status,
                            c.status == 401 || c.status == 403 ? " (the server refused the credentials)"
                            : c.status == 404                  ? " (the server has no /metrics)"
                                                               : "");
    } else {
      std::string err;
      auto e = prom::try_parse_exposition(c.body, &err);
      if (!e) {
        f.error = what + ": not the Prometheus text format: " + err;
      } else if (e->sample_count() == 0) {
        f.error = what + ": the response holds no metrics";
      } else {
        f.exposition = std::move(e);
        f.body = c.body;
      }
    }
    return f;
  }

  // One scrape on the caller's thread (only while the loop thread is not running).
  Fetched fetch_blocking() {
    try {
      collector.reset();
      collector.done = nullptr;
      const TimePoint t = clock.now();
      transport->start(request(), collector);
      ioc.restart();
      ioc.run();
      return finish(collector, t);
    } catch (const std::exception& e) {
      Fetched f;
      f.t = clock.now();
      f.error = "GET " + endpoint + ": " + e.what();
      return f;
    }
  }

  bool probe() {
    {
      std::lock_guard lock(mu);
      if (did_probe) return recording.available();
      did_probe = true;
    }
    try {
      TransportOptions topts;
      topts.timeout = options.timeout;
      topts.idle_timeout = options.timeout;
      topts.connect_timeout = options.timeout;
      topts.ca_cert = options.ca_cert;
      topts.insecure = options.insecure;
      transport = std::make_unique<AsioTransport>(ioc, clock, options.url, topts);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu);
      recording.set_unavailable(fmt::format("GET {}: {}", endpoint, e.what()));
      return false;
    }
    Fetched f = fetch_blocking();
    std::lock_guard lock(mu);
    if (!f.exposition) {
      recording.set_unavailable(f.error);
      return false;
    }
    probed = std::move(f);
    return true;
  }

  // Records a finished interval scrape (loop thread).
  void record_point(Fetched f) {
    std::lock_guard lock(mu);
    if (f.exposition) {
      recording.add_point(*f.exposition, seconds_of(f.t));
    } else {
      recording.add_error(f.error);
    }
  }

  void arm_timer() {
    if (stopping) return;
    const TimePoint now = clock.now();
    if (next_due <= now) {
      // Fixed rate: the next slot after now (a slow scrape skips slots).
      const auto behind = (now - next_due) / options.interval;
      next_due += options.interval * (behind + 1);
    }
    timer.expires_at(next_due);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      scrape_async();
    });
  }

  void scrape_async() {
    collector.reset();
    collector.done = [this] {
      if (stopping) return;  // canceled by stop(): not an error
      record_point(finish(collector, scrape_start));
      // Re-arm outside the transport's completion (it may still touch the exchange).
      asio::post(ioc, [this] { arm_timer(); });
    };
    scrape_start = clock.now();
    transport->start(request(), collector);
  }

  void start() {
    if (!probe()) return;
    {
      std::lock_guard lock(mu);
      if (started) return;
      started = true;
      if (!t0) t0 = clock.now();
    }
    Fetched f = fetch_blocking();
    {
      std::lock_guard lock(mu);
      if (f.exposition) {
        before_body = std::move(f.body);
        recording.set_before(std::move(*f.exposition), seconds_of(f.t));
      } else {
        recording.add_error(f.error);
        before_body = probed->body;
        recording.set_before(*probed->exposition, seconds_of(probed->t));
      }
    }
    if (options.interval <= Nanos(0)) return;
    next_due = clock.now() + options.interval;
    arm_timer();
    thread = std::thread([this] {
      try {
        ioc.restart();
        ioc.run();
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        recording.add_error(std::string("the scraper's thread stopped: ") + e.what());
      } catch (...) {
        std::lock_guard lock(mu);
        recording.add_error("the scraper's thread stopped (unknown exception)");
      }
    });
  }

  // Ends the loop thread (no more interval scrapes).
  void halt() {
    stopping = true;
    if (!thread.joinable()) return;
    asio::post(ioc, [this] {
      timer.cancel();
      transport->cancel_all();
    });
    thread.join();
    // If the thread ended early (an exception), the handler above never ran: run it now, so that
    // it cannot cancel the next blocking scrape.
    ioc.restart();
    ioc.poll();
  }

  void stop() {
    {
      std::lock_guard lock(mu);
      if (!started || stopped) return;
      stopped = true;
    }
    halt();
    // The after snapshot, once the server is settled: nothing running or waiting, and the
    // finished-request and token counters unchanged since the previous scrape (a server counts
    // a request as finished a moment after the client has read its end). Bounded: each fetch
    // takes at most `timeout`, and the loop ends at settle_until.
    constexpr auto kSettleStep = std::chrono::milliseconds(50);
    const TimePoint settle_until = clock.now() + options.settle_timeout;
    std::optional<Fetched> last;
    std::optional<prom::StandardValues> prev;
    for (int attempt = 0; attempt < 100000; ++attempt) {
      Fetched f = fetch_blocking();
      if (!f.exposition) {
        std::lock_guard lock(mu);
        recording.add_error(f.error);
        break;
      }
      const auto v = prom::standard_values(*f.exposition);
      const bool busy = v.running.value_or(0) + v.waiting.value_or(0) > 0;
      const bool stable = prev && prev->requests_finished == v.requests_finished &&
                          prev->generation_tokens == v.generation_tokens;
      if ((!busy && stable) || clock.now() + kSettleStep > settle_until) {
        last = std::move(f);
        break;
      }
      {
        std::lock_guard lock(mu);
        recording.add_point(*f.exposition, seconds_of(f.t));
      }
      prev = v;
      std::this_thread::sleep_for(kSettleStep);
    }
    if (last) {
      std::lock_guard lock(mu);
      after_body = std::move(last->body);
      recording.set_after(std::move(*last->exposition), seconds_of(last->t));
    }
  }
};

MetricsScraper::MetricsScraper(ScraperOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

MetricsScraper::~MetricsScraper() {
  try {
    impl_->halt();
  } catch (...) {
    // A destructor never throws; the thread is gone either way.
  }
}

bool MetricsScraper::probe() {
  try {
    return impl_->probe();
  } catch (const std::exception& e) {
    std::lock_guard lock(impl_->mu);
    impl_->recording.set_unavailable(std::string("probe failed: ") + e.what());
    return false;
  }
}

bool MetricsScraper::available() const {
  std::lock_guard lock(impl_->mu);
  return impl_->did_probe && impl_->recording.available();
}

std::string MetricsScraper::reason() const {
  std::lock_guard lock(impl_->mu);
  if (!impl_->did_probe) return "not available: /metrics was not probed";
  return impl_->recording.reason();
}

void MetricsScraper::start() {
  try {
    impl_->start();
  } catch (const std::exception& e) {
    std::lock_guard lock(impl_->mu);
    impl_->recording.add_error(std::string("start failed: ") + e.what());
  }
}

void MetricsScraper::stop() {
  try {
    impl_->stop();
  } catch (const std::exception& e) {
    std::lock_guard lock(impl_->mu);
    impl_->recording.add_error(std::string("stop failed: ") + e.what());
  }
}

void MetricsScraper::set_t0(TimePoint t0) {
  std::lock_guard lock(impl_->mu);
  impl_->t0 = t0;
}

nlohmann::json MetricsScraper::to_json() const {
  std::lock_guard lock(impl_->mu);
  if (!impl_->did_probe) {
    return {{"available", false}, {"reason", "not available: /metrics was not probed"}, {"endpoint", impl_->endpoint}};
  }
  const double t0 = impl_->t0 ? seconds_of(*impl_->t0) : 0.0;
  nlohmann::json j = impl_->recording.to_json(t0);
  if (j.value("available", false)) j["timeout_s"] = std::chrono::duration<double>(impl_->options.timeout).count();
  return j;
}

std::string MetricsScraper::before_text() const {
  std::lock_guard lock(impl_->mu);
  return impl_->before_body;
}

std::string MetricsScraper::after_text() const {
  std::lock_guard lock(impl_->mu);
  return impl_->after_body;
}

std::string MetricsScraper::url() const { return impl_->endpoint; }

}  // namespace llmload::net
