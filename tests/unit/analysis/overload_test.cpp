// Over-load over a run's window (analysis/overload.hpp) on synthetic request records: a stable
// open-loop run, one whose server serves slower than the arrivals, and the server's own queue.

#include "llmload/analysis/overload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace llmload::analysis;
using std::chrono::milliseconds;

// A request sent at t ms, started at `start` (first token 1 ms later) and done at `done`.
RequestRecord served(std::uint64_t index, double t, double start, double done) {
  RequestRecord r;
  r.index = index;
  r.in_window = true;
  r.t_intended = r.t_send.emplace(Nanos(static_cast<std::int64_t>(t * 1e6)));
  r.t_first = Nanos(static_cast<std::int64_t>((start + 1) * 1e6));
  r.t_last = r.t_done = Nanos(static_cast<std::int64_t>(done * 1e6));
  return r;
}

// Arrivals every `gap_ms` for `seconds`; each served FIFO by `servers` parallel servers in
// `service_ms` (a server too slow for the arrivals builds a queue).
std::vector<RequestRecord> run(double gap_ms, double seconds, double service_ms, int servers) {
  std::vector<RequestRecord> out;
  std::vector<double> free_at(static_cast<std::size_t>(servers), 0.0);
  for (int i = 0; i * gap_ms < seconds * 1e3; ++i) {
    const double t = i * gap_ms;
    auto it = std::min_element(free_at.begin(), free_at.end());
    const double start = std::max(t, *it);
    const double done = start + service_ms;
    *it = done;
    out.push_back(served(static_cast<std::uint64_t>(i), t, start, done));
  }
  return out;
}

TEST(overload, StableRunIsNotOverloaded) {
  const auto records = run(100, 60, 1000, 20);  // 10 req/s, 20 servers of 1 req/s: rho = 0.5
  const OverloadCheck c = detect_overload(records, Nanos(0), std::chrono::seconds(60), {});
  EXPECT_TRUE(c.checked);
  EXPECT_FALSE(c.overloaded) << c.reason;
  EXPECT_TRUE(c.completion_ratio_checked);
  EXPECT_GT(c.completion_ratio, 0.95);
}

TEST(overload, ServerSlowerThanArrivalsIsOverloaded) {
  const auto records = run(100, 60, 1000, 8);  // 10 req/s against 8 req/s
  const OverloadCheck c = detect_overload(records, Nanos(0), std::chrono::seconds(60), {});
  EXPECT_TRUE(c.overloaded);
  EXPECT_TRUE(c.in_flight.growing) << c.in_flight.reason;
  EXPECT_NE(c.reason.find("in flight"), std::string::npos) << c.reason;
  EXPECT_LT(c.completion_ratio, 0.9);
}

TEST(overload, GrowingServerQueueIsOverloaded) {
  const auto records = run(100, 60, 1000, 20);
  std::vector<QueueSample> waiting;
  for (int s = 0; s <= 60; ++s) waiting.push_back({static_cast<double>(s), static_cast<double>(s)});  // +1 per second
  const OverloadCheck c = detect_overload(records, Nanos(0), std::chrono::seconds(60), waiting);
  EXPECT_TRUE(c.server_waiting_checked);
  EXPECT_TRUE(c.overloaded);
  EXPECT_NE(c.reason.find("server waiting queue"), std::string::npos) << c.reason;
  // A flat queue does not.
  for (auto& w : waiting) w.waiting = 3;
  EXPECT_FALSE(detect_overload(records, Nanos(0), std::chrono::seconds(60), waiting).overloaded);
}

TEST(overload, TooShortWindowIsNotJudged) {
  const auto records = run(100, 1, 1000, 8);
  const OverloadCheck c = detect_overload(records, Nanos(0), milliseconds(500), {});
  EXPECT_FALSE(c.checked);
  EXPECT_FALSE(c.overloaded);
}

// Poisson arrivals at `rate` per second for `seconds`, each served by the first free of `servers`
// parallel servers in a time uniform in [service_ms x 0.8, service_ms x 1.2].
std::vector<RequestRecord> poisson_run(std::uint64_t seed, double rate, double seconds, double service_ms, int servers) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate / 1e3);
  std::uniform_real_distribution<double> service(0.8 * service_ms, 1.2 * service_ms);
  std::vector<RequestRecord> out;
  std::vector<double> free_at(static_cast<std::size_t>(servers), 0.0);
  for (double t = gap(rng); t < seconds * 1e3; t += gap(rng)) {
    auto it = std::min_element(free_at.begin(), free_at.end());
    const double start = std::max(t, *it);
    const double done = start + service(rng);
    *it = done;
    out.push_back(served(out.size(), t, start, done));
  }
  return out;
}

// The short windows of a capacity search (a few seconds, 0.1 s intervals shorter than a request):
// requests in flight are correlated from one interval to the next, and a stationary load must
// not read as growth. At half the servers' capacity (41 req/s, 16 servers of 0.19 s), at most 1%
// of seeds may be judged over-loaded (the test's alpha; 4.5% were before the rise had to exceed
// the chance wandering of in flight); 20% more load than the servers hold is found in 93%.
TEST(overload, ShortWindowsOfAStationaryPoissonLoadAreNotOverloaded) {
  const int seeds = 400;
  int over = 0;
  for (int s = 0; s < seeds; ++s) {
    const auto records = poisson_run(static_cast<std::uint64_t>(s), 41.4, 6, 186, 16);
    if (detect_overload(records, std::chrono::seconds(1), std::chrono::milliseconds(4800), {}).overloaded) ++over;
  }
  EXPECT_LE(over, seeds / 100) << over << " of " << seeds << " stationary runs judged over-loaded";
  int found = 0;
  for (int s = 0; s < seeds; ++s) {
    const auto records = poisson_run(static_cast<std::uint64_t>(s), 1.2 * 16 / 0.186, 6, 186, 16);
    if (detect_overload(records, std::chrono::seconds(1), std::chrono::milliseconds(4800), {}).overloaded) ++found;
  }
  // 379 of 400 (392 before in flight's rise also had to exceed its sampled wandering, which cut
  // the false over-loads at 95% load from 12.5% to 1%: AStationaryLoadNearCapacityIsNotOverloaded).
  EXPECT_GE(found, seeds * 93 / 100) << found << " of " << seeds << " over-loaded runs (120%) found";
}

}  // namespace

// Near capacity a stationary queue wanders slowly, over many intervals: in flight and the
// server's waiting queue must rise by more than their own sampled wandering (AR(1) around the
// fit). 95% load on 16 servers, the server queue sampled every second as a scraper does, over
// 30 s windows: before, in flight was judged growing for 25 of 200 seeds, the server queue for 18.
TEST(overload, AStationaryLoadNearCapacityIsNotOverloaded) {
  const int seeds = 200;
  const double service_ms = 186;
  const double rate = 0.95 * 16 / (service_ms / 1e3);
  // Waiting at second s: arrived by s, not started by s.
  auto waiting_of = [](const std::vector<RequestRecord>& records, int seconds) {
    std::vector<double> w(static_cast<std::size_t>(seconds) + 1, 0.0);
    for (const auto& r : records) {
      const double t = static_cast<double>(r.t_intended.count()) / 1e9;
      const double start = static_cast<double>(r.t_first->count()) / 1e9 - 1e-3;
      for (int s = static_cast<int>(std::ceil(t)); s <= seconds && s < start; ++s) ++w[static_cast<std::size_t>(s)];
    }
    std::vector<QueueSample> q;
    for (int s = 0; s <= seconds; ++s) q.push_back({static_cast<double>(s), w[static_cast<std::size_t>(s)]});
    return q;
  };
  int over = 0;
  int inflight_over = 0;
  for (int s = 0; s < seeds; ++s) {
    const auto records = poisson_run(static_cast<std::uint64_t>(1000 + s), rate, 40, service_ms, 16);
    const auto q = waiting_of(records, 40);
    const auto c = detect_overload(records, std::chrono::seconds(10), std::chrono::seconds(40), q);
    if (c.server_waiting_checked && c.server_waiting.growing) ++over;
    if (c.in_flight.growing) ++inflight_over;
  }
  EXPECT_LE(over, seeds / 50) << over << " of " << seeds << " stationary server queues judged growing";
  EXPECT_LE(inflight_over, seeds / 50) << inflight_over << " of " << seeds << " stationary runs' in flight judged growing";
  // A queue that builds (110% load) is still found.
  int found = 0;
  for (int s = 0; s < seeds; ++s) {
    const auto records = poisson_run(static_cast<std::uint64_t>(1000 + s), 1.1 * 16 / (service_ms / 1e3), 40, service_ms, 16);
    const auto q = waiting_of(records, 40);
    const auto c = detect_overload(records, std::chrono::seconds(10), std::chrono::seconds(40), q);
    if (c.server_waiting_checked && c.server_waiting.growing) ++found;
  }
  EXPECT_GE(found, seeds * 95 / 100) << found << " of " << seeds << " building server queues found";
}
