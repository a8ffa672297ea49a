#include "llmload/loadgen/scenario.hpp"

#include "llmload/analysis/sequential_slo.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "llmload/analysis/stats.hpp"
#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/schedule.hpp"

namespace llmload {

std::string_view to_string(ScenarioKind k) {
  switch (k) {
    case ScenarioKind::kSingleStream: return "single-stream";
    case ScenarioKind::kServer: return "server";
    case ScenarioKind::kOffline: return "offline";
    case ScenarioKind::kConcurrency: return "concurrency";
    case ScenarioKind::kStages: return "stages";
  }
  return "unknown";
}

ScenarioKind parse_scenario_kind(std::string_view s) {
  std::string v(s);
  std::replace(v.begin(), v.end(), '_', '-');
  if (v == "single-stream" || v == "singlestream") return ScenarioKind::kSingleStream;
  if (v == "server") return ScenarioKind::kServer;
  if (v == "offline") return ScenarioKind::kOffline;
  if (v == "concurrency") return ScenarioKind::kConcurrency;
  if (v == "stages") return ScenarioKind::kStages;
  throw ConfigError(
      fmt::format("unknown scenario '{}': use one of single-stream, server, offline, concurrency, stages", s));
}

WarmupSpec parse_warmup(std::string_view s) {
  WarmupSpec w;
  if (s.empty() || s == "0") return w;
  if (s == "auto") {
    w.automatic = true;
    return w;
  }
  if (has_duration_unit(s)) {
    try {
      w.duration = parse_duration(s);
    } catch (const DurationParseError& e) {
      throw ConfigError(fmt::format("bad --warmup '{}': {}", s, e.what()));
    }
    return w;
  }
  std::int64_t n = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size() || n < 0) {
    throw ConfigError(fmt::format(
        "bad --warmup '{}': give a number of requests (e.g. 20), a duration with a unit (e.g. 5s), or auto", s));
  }
  w.requests = n;
  return w;
}

namespace {

// Warmup auto, the minimums, the hard maximum and the error-rate threshold (docs/statistics.md,
// "Phases, minimums and validity").
void validate_phases(const ScenarioConfig& c, std::int64_t max_requests) {
  const ScenarioKind kind = c.kind;
  const WarmupSpec& warmup = c.warmup;
  const auto& min_duration = c.min_duration;
  const auto& max_duration = c.max_duration;
  const auto& min_requests = c.min_requests;
  const auto& duration = c.duration;
  const ShardSpec& shard = c.shard;
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
  };
  // --warmup auto: the start of steady state is detected from the run's own interval series.
  if (warmup.automatic) {
    need(kind != ScenarioKind::kOffline,
         "--warmup auto needs requests released over time, but scenario 'offline' releases everything at once: give "
         "--warmup as a number of requests, e.g. --warmup 20");
    need(kind != ScenarioKind::kStages,
         "--warmup auto looks for one steady state, but a stage plan changes the load on purpose: give --warmup as a "
         "time or a number of requests, e.g. --warmup 10s");
    need(!shard.sharded() && !shard.count_given,
         "--warmup auto is decided from the whole run's series, which no shard sees: give --warmup as a time or a "
         "number of requests, e.g. --warmup 10s");
  }
  // MLPerf-style minimums and the hard maximum.
  if (min_duration) need(min_duration->count() > 0, "bad --min-duration: must be positive, e.g. --min-duration 60s");
  if (max_duration) need(max_duration->count() > 0, "bad --max-duration: must be positive, e.g. --max-duration 10m");
  if (min_requests) {
    need(*min_requests >= 1 && *min_requests <= max_requests - warmup.requests,
         fmt::format("bad --min-requests {}: must be between 1 and {} (every request is kept in memory)", *min_requests,
                     max_requests - warmup.requests));
  }
  need(std::isfinite(c.max_error_rate) && c.max_error_rate >= 0 && c.max_error_rate <= 1,
       fmt::format("bad --max-error-rate {}: give a fraction between 0 and 1, e.g. 0.05", c.max_error_rate));
  if ((min_duration || min_requests) && (shard.sharded() || shard.count_given)) {
    throw ConfigError(
        "--min-duration and --min-requests do not apply to a sharded run: each shard issues its fixed part of the "
        "run's plan; size the run itself with --num-requests or --duration");
  }
  if (max_duration) {
    const std::string fix = "raise --max-duration";
    const std::string warm = warmup.by_time() ? fmt::format(" plus the {} warmup", format_duration(warmup.duration)) : "";
    need(!warmup.by_time() || warmup.duration < *max_duration,
         fmt::format("--warmup {} leaves nothing of --max-duration {} to measure: {} or shorten the warmup",
                     format_duration(warmup.duration), format_duration(*max_duration), fix));
    if (min_duration) {
      need(warmup.duration + *min_duration <= *max_duration,
           fmt::format("--min-duration {}{} cannot fit in --max-duration {}: {} or lower --min-duration",
                       format_duration(*min_duration), warm, format_duration(*max_duration), fix));
    }
    if (duration) {
      need(warmup.duration + *duration <= *max_duration,
           fmt::format("--duration {}{} cannot fit in --max-duration {}: {} or shorten --duration",
                       format_duration(*duration), warm, format_duration(*max_duration), fix));
    }
    if (kind == ScenarioKind::kStages) {
      Nanos total(0);
      for (const auto& st : c.arrivals.stages) total += st.duration;
      need(total <= *max_duration, fmt::format("the stage plan lasts {}, longer than --max-duration {}: {} or shorten "
                                               "the stages",
                                               format_duration(total), format_duration(*max_duration), fix));
    }
  }
  // A server run kept issuing for --min-duration: bound what it sends (every request is kept in memory).
  if (min_duration && kind == ScenarioKind::kServer && !c.timed_arrivals) {
    const double peak = std::max(c.request_rate, c.arrivals.ramp_start_rate);
    const double expected = peak * to_seconds(*min_duration + warmup.duration);
    need(expected <= static_cast<double>(max_requests),
         fmt::format("--request-rate {} for --min-duration {} would send about {:.0f} requests, above {}: lower the "
                     "rate or the minimum",
                     c.request_rate, format_duration(*min_duration), expected, max_requests));
  }
}

}  // namespace

std::int64_t default_num_requests(const std::optional<analysis::SloSpec>& slo) {
  constexpr std::int64_t kBase = analysis::kConfidentP99Samples;  // a p99 that is not low-confidence
  if (!slo || slo->empty()) return kBase;
  // Enough for the SLO's early-stopping PASS even when half the allowed share of requests
  // exceed a bound (at p99: 0.5% of them), so a passing server gets a conclusive PASS.
  const double p = slo->percentile / 100.0;
  for (std::int64_t n = kBase; n < 1'000'000; n += 100) {
    const auto allowed = static_cast<std::int64_t>(0.5 * (1.0 - p) * static_cast<double>(n));
    if (analysis::early_stopping_min_requests(allowed, p, 0.99) <= n) return n;
  }
  return 1'000'000;
}

Secrets ScenarioConfig::secrets() const {
  Secrets s;
  s.add(api_key);
  for (const auto& [name, value] : headers) s.add_header_value(value);
  return s;
}

void ScenarioConfig::validate() {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw ConfigError(msg);
  };
  // Every request of a run is kept in memory (its record), so the count is bounded.
  constexpr std::int64_t kMaxRequests = 50'000'000;
  constexpr double kMaxStageConcurrency = 1'000'000;
  // The lowest rate a schedule holds: gaps of hours stay far inside its nanosecond range (below
  // about 1e-10 per second one gap overflows it).
  constexpr double kMinRate = 1e-4;
  need(base_url.rfind("http://", 0) == 0 || base_url.rfind("https://", 0) == 0,
       fmt::format("bad --base-url '{}': give an http:// URL, e.g. http://127.0.0.1:8000", base_url));
  constexpr std::int64_t kMaxTokens = 10'000'000;  // far beyond any context length; bounds prompt memory
  need(input_tokens >= 1 && input_tokens <= kMaxTokens,
       fmt::format("bad --input-tokens {}: must be between 1 and {}", input_tokens, kMaxTokens));
  need(output_tokens >= 1 && output_tokens <= kMaxTokens,
       fmt::format("bad --output-tokens {}: must be between 1 and {}", output_tokens, kMaxTokens));
  if (num_requests) need(*num_requests >= 1, fmt::format("bad --num-requests {}: must be at least 1", *num_requests));
  if (duration) need(duration->count() > 0, "bad --duration: must be positive, e.g. 30s");
  need(timeout.count() > 0, "bad --timeout: must be positive, e.g. 10m");
  need(idle_timeout.count() > 0, "bad --idle-timeout: must be positive, e.g. 60s");
  need(schedule_spin <= std::chrono::milliseconds(10),
       "bad --schedule-spin: at most 10ms (it is CPU spent per scheduled send), e.g. 100us, or 0 to turn it off");
  // Scenario, arrival process, ramp, stages, sessions and the in-flight cap.
  const std::string_view scen = to_string(kind);
  switch (kind) {
    case ScenarioKind::kServer:
      need(timed_arrivals || (std::isfinite(request_rate) && request_rate > 0),
           "scenario 'server' needs --request-rate R (requests per second, > 0), e.g. --request-rate 10");
      need(timed_arrivals || request_rate >= kMinRate,
           fmt::format("bad --request-rate {}: below {} requests per second (one in {:.1f} hours), the schedule's "
                       "range; e.g. --request-rate 0.5",
                       request_rate, kMinRate, 1.0 / kMinRate / 3600));
      break;
    case ScenarioKind::kOffline:
      need(!duration || num_requests,
           "scenario 'offline' releases every request at start, so it needs --num-requests (a --duration alone "
           "does not say how many)");
      break;
    case ScenarioKind::kConcurrency:
      need(concurrency >= 1, fmt::format("bad --concurrency {}: must be at least 1", concurrency));
      break;
    case ScenarioKind::kSingleStream:
      concurrency = 1;
      break;
    case ScenarioKind::kStages: {
      need(!arrivals.stages.empty(),
           "scenario 'stages' needs --stages, e.g. --stages rate:5@30s,rate:10@30s,concurrency:16@60s");
      Nanos total(0);
      double expected_requests = 0;  // of the rate stages
      for (std::size_t i = 0; i < arrivals.stages.size(); ++i) {
        const auto& st = arrivals.stages[i];
        need(std::isfinite(st.value) && st.value > 0 && (!st.concurrency || st.value == std::floor(st.value)),
             fmt::format("bad --stages: stage {} needs a {} above 0, e.g. --stages rate:5@30s,concurrency:16@60s", i + 1,
                         st.concurrency ? "whole-number concurrency" : "rate"));
        need(st.concurrency || st.value >= kMinRate,
             fmt::format("bad --stages: stage {} asks for rate {}, below {} requests per second, the schedule's range",
                         i + 1, st.value, kMinRate));
        need(!st.concurrency || st.value <= kMaxStageConcurrency,
             fmt::format("bad --stages: stage {} asks for concurrency {}, above {}", i + 1, st.value, kMaxStageConcurrency));
        need(st.duration.count() > 0,
             fmt::format("bad --stages: stage {} needs a positive duration, e.g. rate:5@30s", i + 1));
        total += st.duration;
        if (!st.concurrency) expected_requests += st.value * to_seconds(st.duration);
      }
      // Every request is kept in memory (its record): bound what the rate stages will send.
      need(expected_requests <= static_cast<double>(kMaxRequests),
           fmt::format("bad --stages: the rate stages would send about {:.0f} requests, above {}: lower the rates or "
                       "durations, or split the run",
                       expected_requests, kMaxRequests));
      need(!num_requests && !duration,
           "scenario 'stages' runs for the sum of its stage durations: drop --num-requests and --duration");
      need(!warmup.by_time() || warmup.duration < total,
           fmt::format("--warmup {} would cover the whole stage plan ({}): give a shorter warmup",
                       format_duration(warmup.duration), format_duration(total)));
      need(turns == 1, "multi-turn sessions (--turns) are not supported with scenario 'stages'");
      break;
    }
  }
  if (kind != ScenarioKind::kServer && request_rate > 0) {
    throw ConfigError(fmt::format("--request-rate applies only to --scenario server (this run is '{}')", scen));
  }
  if (kind != ScenarioKind::kStages && !arrivals.stages.empty()) {
    throw ConfigError(fmt::format("--stages applies only to --scenario stages (this run is '{}')", scen));
  }
  if (timed_arrivals) {
    need(kind == ScenarioKind::kServer,
         fmt::format("a workload with its own arrival times replays open loop: use --scenario server (this run is "
                     "'{}')", scen));
  }

  // In-flight cap: open-loop scenarios (vLLM's --max-concurrency with --request-rate).
  if (max_inflight) {
    need(*max_inflight >= 1, fmt::format("bad --max-inflight {}: must be at least 1, e.g. --max-inflight 64", *max_inflight));
    need(kind == ScenarioKind::kServer || kind == ScenarioKind::kOffline || kind == ScenarioKind::kStages,
         fmt::format("--max-inflight applies to scenarios server, offline and stages; scenario '{}' already holds "
                     "--concurrency requests in flight",
                     scen));
  }

  // Arrival process.
  const ArrivalProcess process = parse_arrival_process(arrivals.process);
  need(std::isfinite(arrivals.burstiness) && arrivals.burstiness > 0,
       fmt::format("bad --burstiness {}: must be above 0 (1 is Poisson, below 1 burstier, above 1 more regular), e.g. "
                   "--burstiness 0.5",
                   arrivals.burstiness));
  need(arrivals.burstiness == 1.0 || process == ArrivalProcess::kGamma,
       fmt::format("--burstiness applies to --arrival-process gamma (this run uses '{}'), e.g. --arrival-process gamma "
                   "--burstiness 0.5",
                   arrivals.process));
  const bool generated_arrivals = (kind == ScenarioKind::kServer && !timed_arrivals) || kind == ScenarioKind::kStages;
  need(process == ArrivalProcess::kPoisson || generated_arrivals,
       timed_arrivals ? std::string("--arrival-process (and --burstiness) does not apply: the workload gives every arrival time")
                      : fmt::format("--arrival-process {} (and --burstiness) applies to scenarios server and stages (this run is '{}')",
                                    arrivals.process, scen));

  // Ramp.
  const RampKind ramp = parse_ramp(arrivals.ramp);
  need(arrivals.ramp_duration.count() >= 0, "bad --ramp-duration: must be positive, e.g. --ramp-duration 60s");
  need(arrivals.ramp_start_rate == 0 || arrivals.ramp_start_rate >= kMinRate,
       fmt::format("bad --ramp-start-rate {}: below {} requests per second, the schedule's range (0: a tenth of "
                   "--request-rate)",
                   arrivals.ramp_start_rate, kMinRate));
  need(std::isfinite(arrivals.ramp_start_rate) && arrivals.ramp_start_rate >= 0,
       "bad --ramp-start-rate: must be a rate in requests per second, >= 0 (0: a tenth of --request-rate), e.g. "
       "--ramp-start-rate 1");
  if (ramp == RampKind::kNone) {
    need(arrivals.ramp_duration.count() == 0,
         "--ramp-duration is set but --ramp is none: add --ramp linear or --ramp exponential");
    need(arrivals.ramp_start_rate == 0, "--ramp-start-rate is set but --ramp is none: add --ramp linear or --ramp exponential");
  } else {
    need(kind == ScenarioKind::kServer && !timed_arrivals,
         timed_arrivals ? std::string("--ramp does not apply: the workload gives every arrival time")
                        : fmt::format("--ramp applies only to --scenario server (this run is '{}')", scen));
    need(arrivals.ramp_duration.count() > 0,
         fmt::format("--ramp {} needs --ramp-duration, e.g. --ramp {} --ramp-duration 60s", arrivals.ramp, arrivals.ramp));
  }

  // Without streaming every token arrives in one body: no time between tokens is observed, and a
  // TPOT of 0 met any bound (a 1 ms bound PASSed against a 10 ms-per-token server).
  need(stream || !slo || !slo->tpot,
       "a TPOT bound needs streaming: with --no-stream (--stream false) every token arrives at once and TPOT is not "
       "measured; drop tpot from --slo (or --goodput), or stream");

  // Multi-turn sessions.
  need(turns >= 1, fmt::format("bad --turns {}: must be at least 1 (1: no sessions), e.g. --turns 4", turns));
  need(think_time.count() >= 0, "bad --think-time: must be zero or positive, e.g. --think-time 2s");
  need(think_time.count() == 0 || turns > 1, "--think-time applies to multi-turn sessions: add --turns N (N > 1)");
  if (kind == ScenarioKind::kServer && !timed_arrivals && turns > 1 && duration && !num_requests) {
    // Sessions are started lazily (not from a precomputed schedule): bound them here.
    const double peak = std::max(request_rate, arrivals.ramp_start_rate);
    const double expected = peak * to_seconds(*duration + warmup.duration) * static_cast<double>(turns);
    need(expected <= static_cast<double>(kMaxRequests),
         fmt::format("--request-rate {} sessions/s of {} turns for {} would send about {:.0f} requests, above {}: "
                     "lower the rate or --duration, or give --num-requests",
                     request_rate, turns, format_duration(*duration), expected, kMaxRequests));
  }
  // Stages set the run's length themselves; a trace's length is its own.
  if (!num_requests && !duration && kind != ScenarioKind::kStages && !timed_arrivals) {
    // --slo and no size: run until the verdict is conclusive, unless the run's length is fixed
    // otherwise (offline releases everything at once; shards and minimums set their own). With
    // --warmup auto the measured requests are known only after the run (the detected warmup is
    // cut off then), so the looks could not count them: a fixed SLO-sized run instead.
    sequential = slo && !slo->empty() && kind != ScenarioKind::kOffline && !shard.sharded() && !shard.count_given &&
                 !min_requests && !min_duration && !warmup.automatic;
    if (sequential) {
      num_requests = analysis::SequentialSlo::first_look_size(*slo);
      sequential_cap = *num_requests << (kSequentialMaxLooks - 1);
      if (!max_duration) max_duration = (warmup.by_time() ? warmup.duration : Nanos(0)) + kSequentialMaxDuration;
    } else {
      num_requests = default_num_requests(slo);
    }
  }
  if (warmup.requests > kMaxRequests || (num_requests && *num_requests > kMaxRequests - warmup.requests) ||
      sequential_cap > kMaxRequests - warmup.requests) {
    throw ConfigError(fmt::format("--num-requests plus --warmup requests must stay below {}: split the run",
                                  kMaxRequests));
  }
  if (kind == ScenarioKind::kOffline && warmup.by_time()) {
    throw ConfigError("scenario 'offline' releases everything at once: give --warmup as a number of requests, not a time");
  }
  validate_phases(*this, kMaxRequests);
  validate_probe(*this);
}


bool ScenarioConfig::input_tokens_used() const {
  const bool random = workload.dataset.empty() || workload.dataset == "random";
  return random && workload.genai_scenario.empty() && workload.input_dist.empty();
}

bool ScenarioConfig::output_tokens_used() const {
  const std::string& d = workload.dataset;
  if (d.empty() || d == "random") return workload.genai_scenario.empty() && workload.output_dist.empty();
  return d == "custom" || d == "gsm8k" || d == "mmlu";
}

bool ScenarioConfig::request_rate_used() const {
  return kind == ScenarioKind::kServer && !timed_arrivals && workload.dataset != "trace";
}

std::uint64_t arrival_seed(std::uint64_t base) { return mix_seed(base ^ 0x6172726976616c73ULL); }  // "arrivals"
std::uint64_t data_seed(std::uint64_t base) { return mix_seed(base ^ 0x646174617365656bULL); }

}  // namespace llmload
