#include "llmload/loadgen/schedule.hpp"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload {

namespace {
constexpr std::int64_t kMaxScheduledRequests = 50'000'000;
}

Nanos exponential_gap(double u, double mean_seconds) {
  const double s = -mean_seconds * std::log1p(-u);
  return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9)));
}

Schedule build_schedule(const ScenarioConfig& cfg) {
  Schedule s;
  if (!cfg.open_loop()) return s;
  if (cfg.kind == ScenarioKind::kOffline) {
    const std::int64_t n = cfg.warmup.requests + cfg.num_requests.value_or(0);
    s.arrivals.assign(static_cast<std::size_t>(n), Nanos(0));
    s.warmup_requests = cfg.warmup.requests;
    return s;
  }
  // Server: Poisson arrivals. A fixed-algorithm generator (mt19937_64, 53-bit uniform) so the
  // schedule is the same on every platform and standard library.
  std::mt19937_64 rng(arrival_seed(cfg.seed));
  const double mean = 1.0 / cfg.request_rate;
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  Nanos t(0);
  std::int64_t measured = 0;
  std::optional<Nanos> window_start;
  while (true) {
    t += exponential_gap(uniform(), mean);
    const auto i = static_cast<std::int64_t>(s.arrivals.size());
    if (i >= kMaxScheduledRequests) {
      throw ConfigError(fmt::format("the schedule would exceed {} requests: lower --request-rate, --duration or "
                                    "--num-requests", kMaxScheduledRequests));
    }
    const bool warm = cfg.warmup.by_time() ? t < cfg.warmup.duration : i < cfg.warmup.requests;
    if (warm) {
      s.arrivals.push_back(t);
      ++s.warmup_requests;
      continue;
    }
    if (!window_start) window_start = cfg.warmup.by_time() ? cfg.warmup.duration : t;
    if (cfg.duration && t > *window_start + *cfg.duration) break;
    s.arrivals.push_back(t);
    ++measured;
    if (cfg.num_requests && measured >= *cfg.num_requests) break;
  }
  return s;
}

}  // namespace llmload
