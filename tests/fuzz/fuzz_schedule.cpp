// Fuzz target: the schedule and the pacer (issue 16) under random and extreme rates, stage plans,
// arrival processes, ramps, warmups, bounds and seeds. A configuration validate() accepts must
// give a pacer that, driven to its end on a simulated clock with requests taking a random time,
// releases in index order, never before the run's start, never at or after --max-duration, no
// more than its plan (a count, or the arrivals a rate can give in its time), and whose window
// never has a negative length. Only ConfigError may escape validate().

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fuzz_check.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/scenario.hpp"

namespace {

using llmload::Nanos;
using llmload::ScenarioConfig;
using llmload::ScenarioKind;
using llmload::TimePoint;

constexpr std::size_t kMaxReleases = 5000;  // a simulation this long proves what it can

double any_rate(FuzzedDataProvider& in) { return std::pow(10.0, in.ConsumeFloatingPointInRange(-13.0, 6.0)); }
Nanos any_duration(FuzzedDataProvider& in) {  // 1 us .. ~3 h
  return Nanos(static_cast<std::int64_t>(std::pow(10.0, in.ConsumeFloatingPointInRange(3.0, 13.0))));
}
double seconds(Nanos d) { return std::chrono::duration<double>(d).count(); }

// The most arrivals a rate of `r`/s can give in `d`, generously (no process draws 5x its mean
// plus 100 in a fuzz run).
double arrivals_bound(double r, Nanos d) { return 5.0 * r * seconds(d) + 100.0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.scenario_explicit = true;
  const int kind = in.ConsumeIntegralInRange(0, 3);
  std::string stages_text;
  switch (kind) {
    case 0:
      cfg.kind = ScenarioKind::kServer;
      cfg.request_rate = any_rate(in);
      cfg.arrivals.process = in.PickValueInArray({"poisson", "gamma", "constant"});
      cfg.arrivals.burstiness = std::pow(10.0, in.ConsumeFloatingPointInRange(-3.0, 3.0));
      if (in.ConsumeBool()) {
        cfg.arrivals.ramp = in.PickValueInArray({"linear", "exponential"});
        cfg.arrivals.ramp_duration = any_duration(in);
        cfg.arrivals.ramp_start_rate = in.ConsumeBool() ? 0.0 : any_rate(in);
      }
      if (in.ConsumeBool()) cfg.max_inflight = in.ConsumeIntegralInRange<std::int64_t>(1, 256);
      break;
    case 1:
      cfg.kind = ScenarioKind::kConcurrency;
      cfg.concurrency = in.ConsumeIntegralInRange<std::int64_t>(1, 256);
      break;
    case 2:
      cfg.kind = ScenarioKind::kOffline;
      if (in.ConsumeBool()) cfg.max_inflight = in.ConsumeIntegralInRange<std::int64_t>(1, 256);
      break;
    default: {
      cfg.kind = ScenarioKind::kStages;
      const int n = in.ConsumeIntegralInRange(1, 4);
      for (int i = 0; i < n; ++i) {
        if (!stages_text.empty()) stages_text += ",";
        const Nanos d = any_duration(in);
        stages_text += in.ConsumeBool()
                           ? fmt::format("rate:{:g}@{}us", any_rate(in), std::max<std::int64_t>(1, d.count() / 1000))
                           : fmt::format("concurrency:{}@{}us", in.ConsumeIntegralInRange(1, 64),
                                         std::max<std::int64_t>(1, d.count() / 1000));
      }
      try {
        cfg.arrivals.stages = llmload::parse_stages(stages_text);
      } catch (const llmload::ConfigError&) {
        return 0;
      }
      break;
    }
  }
  if (kind != 3) {
    if (in.ConsumeBool()) {
      cfg.num_requests = in.ConsumeIntegralInRange<std::int64_t>(1, 3000);
    } else {
      cfg.duration = any_duration(in);
    }
  }
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 1:
      cfg.warmup.requests = in.ConsumeIntegralInRange<std::int64_t>(1, 100);
      break;
    case 2:
      cfg.warmup.duration = any_duration(in);
      break;
    default:
      break;
  }
  if (in.ConsumeBool()) cfg.max_duration = any_duration(in);
  if (in.ConsumeBool()) cfg.min_requests = in.ConsumeIntegralInRange<std::int64_t>(1, 3000);
  if (in.ConsumeBool()) cfg.min_duration = any_duration(in);
  cfg.seed = in.ConsumeIntegral<std::uint64_t>();
  const Nanos service = any_duration(in);
  try {
    cfg.validate();
  } catch (const llmload::ConfigError&) {
    return 0;
  }

  // Plans of more than ~100,000 arrivals are valid (up to validate()'s bound) but take seconds to
  // build under the sanitizers: the fuzzer looks at smaller ones.
  double expected = 0;
  if (cfg.kind == ScenarioKind::kServer && cfg.duration) {
    expected = std::max(cfg.request_rate, cfg.arrivals.ramp_start_rate) *
               seconds(*cfg.duration + cfg.warmup.duration + cfg.min_duration.value_or(Nanos(0)));
  }
  for (const auto& st : cfg.arrivals.stages) expected += st.concurrency ? 0.0 : st.value * seconds(st.duration);
  if (expected > 1e5) return 0;
  if (std::getenv("FUZZ_SCHEDULE_VERBOSE") != nullptr) {
    std::fprintf(stderr, "kind %d rate %g process %s burst %g ramp %s stages '%s' concurrency %lld max_inflight %lld\n",
                 static_cast<int>(cfg.kind), cfg.request_rate, cfg.arrivals.process.c_str(), cfg.arrivals.burstiness,
                 cfg.arrivals.ramp.c_str(), stages_text.c_str(), static_cast<long long>(cfg.concurrency),
                 static_cast<long long>(cfg.max_inflight.value_or(-1)));
  }
  auto pacer = llmload::make_pacer(cfg);
  const TimePoint t0(std::chrono::seconds(1));
  pacer->begin(t0);
  TimePoint now = t0;
  std::priority_queue<std::pair<TimePoint, std::uint64_t>, std::vector<std::pair<TimePoint, std::uint64_t>>,
                      std::greater<>>
      inflight;
  std::uint64_t released = 0;
  std::uint64_t steps = 0;
  std::int64_t measured = 0;
  TimePoint last_intended = t0;
  const bool open_loop = cfg.kind == ScenarioKind::kServer || cfg.kind == ScenarioKind::kOffline;
  while (released < kMaxReleases) {
    while (auto r = pacer->next(now)) {
      FUZZ_CHECK(r->index == released);  // in index order, none skipped
      FUZZ_CHECK(r->intended >= t0);      // never before the start: no negative offset
      FUZZ_CHECK(r->intended <= now);     // released when due, not early
      if (cfg.max_duration) {
        // Nothing is released at or after the hard bound (open loop: by its intended time).
        FUZZ_CHECK((open_loop ? r->intended : now) < t0 + *cfg.max_duration);
      }
      if (open_loop && cfg.kind == ScenarioKind::kServer && !cfg.max_inflight) {
        FUZZ_CHECK(r->intended >= last_intended);  // arrivals in time order
      }
      last_intended = std::max(last_intended, r->intended);
      if (!r->warmup) ++measured;
      inflight.emplace(now + service, r->index);
      if (++released >= kMaxReleases) break;
    }
    if (released >= kMaxReleases) break;
    if (++steps > 4 * kMaxReleases) break;
    std::optional<TimePoint> next = pacer->wake_time();
    if (next && *next <= now) next.reset();  // due but held by a cap: only a completion frees it
    if (!inflight.empty()) next = next ? std::min(*next, inflight.top().first) : inflight.top().first;
    if (!next) break;
    now = std::max(now, *next);
    while (!inflight.empty() && inflight.top().first <= now) {
      pacer->on_complete(inflight.top().second, inflight.top().first);
      inflight.pop();
    }
  }
  // The plan's count: a request bound, with its minimum, is never exceeded (a stage plan has its
  // own length, checked below; a minimum duration extends a run by time, not by count).
  if (cfg.num_requests && !cfg.sequential && cfg.kind != ScenarioKind::kStages && !cfg.min_duration) {
    const std::int64_t plan = std::max(*cfg.num_requests, cfg.min_requests.value_or(0));
    if (measured > plan) {
      std::fprintf(stderr,
                   "kind %d rate %g concurrency %lld num_requests %lld min_requests %lld warmup %lld/%.6fs duration "
                   "%.6fs min_duration %.6fs max_duration %.6fs service %.6fs turns %lld measured %lld\n",
                   static_cast<int>(cfg.kind), cfg.request_rate, static_cast<long long>(cfg.concurrency),
                   static_cast<long long>(*cfg.num_requests), static_cast<long long>(cfg.min_requests.value_or(-1)),
                   static_cast<long long>(cfg.warmup.requests), seconds(cfg.warmup.duration),
                   cfg.duration ? seconds(*cfg.duration) : -1.0, cfg.min_duration ? seconds(*cfg.min_duration) : -1.0,
                   cfg.max_duration ? seconds(*cfg.max_duration) : -1.0, seconds(service),
                   static_cast<long long>(cfg.turns), static_cast<long long>(measured));
    }
    FUZZ_CHECK(measured <= plan);
  }
  // A rate's time bound: no more arrivals than the rate can give (issue 16: a rate of 1e-12 in a
  // stage plan released 100,000 requests in 8 s).
  if (released < kMaxReleases) {
    double bound = 0;
    if (cfg.kind == ScenarioKind::kStages) {
      for (const auto& st : cfg.arrivals.stages) {
        bound += st.concurrency ? st.value * (seconds(st.duration) / std::max(seconds(service), 1e-9) + 2)
                                : arrivals_bound(st.value, st.duration);
      }
      bound += static_cast<double>(cfg.warmup.requests);
      if (static_cast<double>(released) > bound) std::fprintf(stderr, "stages %s: released %llu, bound %g\n",
                                                              stages_text.c_str(), static_cast<unsigned long long>(released), bound);
      FUZZ_CHECK(static_cast<double>(released) <= bound);
    } else if (cfg.kind == ScenarioKind::kServer && cfg.duration && !cfg.min_requests && !cfg.min_duration &&
               cfg.arrivals.ramp == "none" && (cfg.arrivals.process != "gamma" || cfg.arrivals.burstiness >= 0.5)) {
      // (Gamma gaps of a small shape come in clusters: any count is possible in a short window.)
      bound = arrivals_bound(cfg.request_rate, *cfg.duration + cfg.warmup.duration) +
              static_cast<double>(cfg.warmup.requests);
      if (static_cast<double>(released) > bound) {
        std::fprintf(stderr, "server %s rate %g burstiness %g duration %gs warmup %lld/%gs: released %llu, bound %g\n",
                     cfg.arrivals.process.c_str(), cfg.request_rate, cfg.arrivals.burstiness, seconds(*cfg.duration),
                     static_cast<long long>(cfg.warmup.requests), seconds(cfg.warmup.duration),
                     static_cast<unsigned long long>(released), bound);
      }
      FUZZ_CHECK(static_cast<double>(released) <= bound);
    }
  }
  // The window never has a negative length.
  if (auto ws = pacer->window_start()) {
    FUZZ_CHECK(*ws >= t0);
    if (auto we = pacer->window_end()) FUZZ_CHECK(*we >= *ws);
  }
  return 0;
}
