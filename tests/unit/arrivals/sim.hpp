#pragma once
// A discrete-event driver for pacers in tests: it does what net::drive does (release everything
// due, sleep until wake_time() or the next completion, re-poll after each completion), on
// simulated time, with service times chosen by the test. Never real time.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/pacer.hpp"

namespace llmload::testing {

using namespace std::chrono_literals;

struct SimRequest {
  Release rel;
  TimePoint sent;                 // when the pacer released it
  std::optional<TimePoint> done;  // its completion
};

struct SimResult {
  std::vector<SimRequest> requests;  // in release order (index)
  std::int64_t max_in_flight = 0;
  bool exhausted = false;
  TimePoint end{};  // time of the last event
};

/// Runs `p` from `t0` until it is exhausted and nothing is in flight, or until `horizon`.
/// `service(release, sent)` gives each request's service time.
inline SimResult simulate(Pacer& p, TimePoint t0, const std::function<Nanos(const Release&, TimePoint)>& service,
                          TimePoint horizon) {
  SimResult res;
  std::multimap<TimePoint, std::uint64_t> completions;  // time -> index
  std::int64_t in_flight = 0;
  TimePoint now = t0;
  p.begin(t0);
  auto release_due = [&] {
    while (auto r = p.next(now)) {
      EXPECT_EQ(r->index, res.requests.size()) << "releases must be in index order";
      res.requests.push_back(SimRequest{*r, now, std::nullopt});
      completions.emplace(now + service(*r, now), r->index);
      ++in_flight;
      res.max_in_flight = std::max(res.max_in_flight, in_flight);
    }
  };
  release_due();
  while (true) {
    if (p.exhausted() && completions.empty()) break;
    std::optional<TimePoint> next_t = p.wake_time();
    if (!completions.empty() && (!next_t || completions.begin()->first < *next_t)) next_t = completions.begin()->first;
    if (!next_t || *next_t > horizon) break;
    now = std::max(now, *next_t);
    release_due();
    while (!completions.empty() && completions.begin()->first <= now) {
      const auto [t, idx] = *completions.begin();
      completions.erase(completions.begin());
      res.requests[idx].done = t;
      --in_flight;
      p.on_complete(idx, t);
      release_due();
    }
  }
  res.exhausted = p.exhausted();
  res.end = now;
  return res;
}

inline std::function<Nanos(const Release&, TimePoint)> fixed_service(Nanos d) {
  return [d](const Release&, TimePoint) { return d; };
}

/// The message of the ConfigError that `f` throws ("" if none).
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

struct GapStats {
  double mean = 0;
  double cv = 0;
};
inline GapStats gap_stats(const std::vector<Nanos>& arrivals) {
  std::vector<double> gaps;
  Nanos prev{0};
  for (auto t : arrivals) {
    gaps.push_back(std::chrono::duration<double>(t - prev).count());
    prev = t;
  }
  double mean = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size() - 1);
  return GapStats{mean, std::sqrt(var) / mean};
}

inline double secs(Nanos d) { return std::chrono::duration<double>(d).count(); }

}  // namespace llmload::testing
