// Sharding: the shard rules (shard.hpp) and their application to a scenario (shard_plan.hpp).

#include "llmload/loadgen/shard.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/shard_plan.hpp"

namespace llmload {

// ---- rules -------------------------------------------------------------------------------------

std::int64_t shard_share(std::int64_t total, std::int64_t index, std::int64_t count) {
  if (count <= 1) return total;
  return total / count + (index < total % count ? 1 : 0);
}

std::string_view to_string(PartitionRule r) {
  return r == PartitionRule::kThinning ? "thinning" : "round-robin";
}

std::uint64_t shard_seed(std::uint64_t base_seed) { return mix_seed(base_seed ^ 0x7368617264696e67ULL); }  // "sharding"

std::int64_t shard_of(PartitionRule rule, std::uint64_t seed, std::uint64_t k, std::int64_t count) {
  if (count <= 1) return 0;
  const auto n = static_cast<std::uint64_t>(count);
  if (rule == PartitionRule::kRoundRobin) return static_cast<std::int64_t>(k % n);
  // SplitMix64 of (seed, k): uniform over 2^64, so the modulo bias is below n / 2^64.
  return static_cast<std::int64_t>(mix_seed(seed + 0x9E3779B97F4A7C15ULL * (k + 1)) % n);
}

// ---- --start-at ----------------------------------------------------------------------------

namespace {

ConfigError bad_start(std::string_view origin, std::string_view text, std::string_view why) {
  return ConfigError(fmt::format("bad {} '{}': {}; give an RFC 3339 UTC time such as 2025-06-01T12:00:00Z or Unix "
                                 "epoch seconds such as 1748779200 (e.g. --start-at $(date -u -d '+1 min' "
                                 "+%Y-%m-%dT%H:%M:%SZ))",
                                 origin, text, why));
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int digits_at(std::string_view s, std::size_t pos, std::size_t n, bool& ok) {
  if (pos + n > s.size() || !all_digits(s.substr(pos, n))) {
    ok = false;
    return 0;
  }
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) v = v * 10 + (s[pos + i] - '0');
  return v;
}

}  // namespace

WallTime parse_start_at(std::string_view text, std::string_view origin) {
  using namespace std::chrono;
  if (text.empty()) throw bad_start(origin, text, "empty");
  // Unix epoch seconds, optionally fractional.
  if (text.find_first_not_of("0123456789.") == std::string_view::npos) {
    const auto dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    if (!all_digits(whole) || (dot != std::string_view::npos && !all_digits(frac)) || whole.size() > 12) {
      throw bad_start(origin, text, "not a number of seconds since the epoch");
    }
    std::int64_t secs = 0;
    std::from_chars(whole.data(), whole.data() + whole.size(), secs);
    std::int64_t ns = 0;
    for (std::size_t i = 0; i < 9; ++i) ns = ns * 10 + (i < frac.size() ? frac[i] - '0' : 0);
    return WallTime(seconds(secs) + nanoseconds(ns));
  }
  // RFC 3339: YYYY-MM-DD('T'|'t'|' ')HH:MM:SS[.frac]('Z'|'z'|(+|-)HH:MM)
  bool ok = true;
  const int y = digits_at(text, 0, 4, ok);
  const int mo = digits_at(text, 5, 2, ok);
  const int d = digits_at(text, 8, 2, ok);
  const int h = digits_at(text, 11, 2, ok);
  const int mi = digits_at(text, 14, 2, ok);
  const int s = digits_at(text, 17, 2, ok);
  if (!ok || text.size() < 20 || text[4] != '-' || text[7] != '-' || text[13] != ':' || text[16] != ':' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ')) {
    throw bad_start(origin, text, "not a time of the form YYYY-MM-DDTHH:MM:SSZ");
  }
  std::size_t pos = 19;
  std::int64_t ns = 0;
  if (text[pos] == '.') {
    std::size_t digits = 0;
    ++pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
      if (digits < 9) ns = ns * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) throw bad_start(origin, text, "a '.' must be followed by digits");
    for (std::size_t i = digits; i < 9; ++i) ns *= 10;
  }
  std::int64_t offset_s = 0;
  const std::string_view zone = text.substr(pos);
  if (zone == "Z" || zone == "z") {
    offset_s = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const int oh = digits_at(zone, 1, 2, ok);
    const int om = digits_at(zone, 4, 2, ok);
    if (!ok || oh > 23 || om > 59) throw bad_start(origin, text, "bad UTC offset");
    offset_s = (zone[0] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else {
    throw bad_start(origin, text, zone.empty() ? "no time zone: end it with Z (UTC)" : "bad time zone: use Z or +HH:MM");
  }
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) throw bad_start(origin, text, "no such date or time");
  const sys_days days{ymd};
  const auto t = WallTime(duration_cast<nanoseconds>(days.time_since_epoch())) + hours(h) + minutes(mi) +
                 seconds(s) + nanoseconds(ns) - seconds(offset_s);
  return t;
}

std::string format_rfc3339(WallTime t) {
  using namespace std::chrono;
  const auto ms_total = floor<milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms_total >= 0 ? ms_total / 1000 : (ms_total - 999) / 1000);
  const auto ms = ms_total - static_cast<std::int64_t>(secs) * 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

double epoch_seconds(WallTime t) { return static_cast<double>(t.time_since_epoch().count()) / 1e9; }

// ---- plans -----------------------------------------------------------------------------------

PartitionRule partition_rule(const ScenarioConfig& cfg) {
  if (cfg.timed_arrivals || cfg.kind == ScenarioKind::kOffline) return PartitionRule::kRoundRobin;
  return cfg.arrivals.process == "constant" ? PartitionRule::kRoundRobin : PartitionRule::kThinning;
}

ShardSchedule partition_schedule(const Schedule& global, const ShardSpec& shard, PartitionRule rule,
                                 std::uint64_t seed, const WarmupSpec& warmup) {
  ShardSchedule out;
  if (warmup.by_time()) {
    out.schedule.window_start = warmup.duration;
  } else if (static_cast<std::size_t>(global.warmup_requests) < global.arrivals.size()) {
    out.schedule.window_start = global.arrivals[static_cast<std::size_t>(global.warmup_requests)];
  }
  for (std::size_t k = 0; k < global.arrivals.size(); ++k) {
    if (shard_of(rule, seed, k, shard.count) != shard.index) continue;
    out.schedule.arrivals.push_back(global.arrivals[k]);
    out.global_index.push_back(k);
    if (static_cast<std::int64_t>(k) < global.warmup_requests) ++out.schedule.warmup_requests;
  }
  return out;
}

namespace {

// Splits `value` (a count given by `flag`) for the shard. Every shard needs at least one: when some
// shard would get none, every shard refuses (so that no shard of the run starts alone).
std::int64_t split_at_least_one(std::int64_t value, const ShardSpec& s, std::string_view flag, std::string_view what) {
  if (value < s.count) {
    throw ConfigError(fmt::format("{} {} cannot be split over {} shards: every shard needs at least one {}; give {} {} "
                                  "or more, or {}",
                                  flag, value, s.count, what, flag, s.count, s.fewer_advice()));
  }
  return shard_share(value, s.index, s.count);
}

bool partitioned_schedule(const ScenarioConfig& cfg) {
  return cfg.open_loop() && cfg.turns == 1;
}

}  // namespace

ScenarioConfig shard_config(const ScenarioConfig& cfg) {
  ScenarioConfig local = cfg;
  const ShardSpec& s = cfg.shard;
  if (s.count < 1 || s.index < 0 || s.index >= s.count) {
    throw ConfigError(fmt::format("bad shard {} of {}: --shard-index must be in [0, --shard-count)", s.index, s.count));
  }
  if (!s.sharded()) return local;
  if (cfg.kind == ScenarioKind::kSingleStream) {
    throw ConfigError(fmt::format("scenario 'single-stream' sends one request at a time, so it cannot be split over {} "
                                  "shards: run it unsharded, or use --scenario concurrency --concurrency {} (one "
                                  "request in flight per shard)",
                                  s.count, s.count));
  }
  if (cfg.max_inflight) local.max_inflight = split_at_least_one(*cfg.max_inflight, s, "--max-inflight", "request slot");
  if (cfg.kind == ScenarioKind::kConcurrency) {
    local.concurrency = split_at_least_one(cfg.concurrency, s, "--concurrency", "request slot");
  }
  for (std::size_t i = 0; i < local.arrivals.stages.size(); ++i) {
    auto& st = local.arrivals.stages[i];
    if (!st.concurrency) continue;  // rate stages: thinned in the pacer
    st.value = static_cast<double>(split_at_least_one(static_cast<std::int64_t>(st.value), s,
                                                      fmt::format("--stages (stage {}) concurrency", i + 1),
                                                      "request slot"));
  }
  if (!partitioned_schedule(cfg)) {
    // Counted runs without a global schedule: split the counts.
    if (cfg.num_requests) {
      local.num_requests = split_at_least_one(*cfg.num_requests, s, "--num-requests", "request");
    }
    local.warmup.requests = shard_share(cfg.warmup.requests, s.index, s.count);
  }
  return local;
}

nlohmann::json describe_shard(const ScenarioConfig& global, const ScenarioConfig& local) {
  const ShardSpec& s = global.shard;
  nlohmann::json j = {{"index", s.index},
                      {"count", s.count},
                      {"start_at", s.start_at ? nlohmann::json(format_rfc3339(*s.start_at)) : nlohmann::json(nullptr)},
                      {"start_at_epoch_s", s.start_at ? nlohmann::json(epoch_seconds(*s.start_at)) : nlohmann::json(nullptr)}};
  std::string partition;
  if (global.kind == ScenarioKind::kStages) {
    partition = fmt::format("rate stages: {} of each stage's arrival stream; concurrency stages: split (floor(C/N), "
                            "one more for the first C mod N shards)",
                            partition_rule(global) == PartitionRule::kThinning ? "seeded thinning" : "round-robin");
  } else if (global.turns > 1) {
    partition = global.kind == ScenarioKind::kServer
                    ? std::string("multi-turn sessions: session starts dealt by seeded thinning; --num-requests and a "
                                  "--warmup count split (floor(R/N), one more for the first R mod N shards)")
                    : std::string("multi-turn sessions: concurrency, --num-requests and a --warmup count split "
                                  "(floor(X/N), one more for the first X mod N shards)");
  } else if (partitioned_schedule(global)) {
    partition = partition_rule(global) == PartitionRule::kThinning
                    ? std::string("seeded thinning of the global schedule: each global request goes to a shard drawn "
                                  "by a hash of (seed, request); for Poisson arrivals each shard issues an independent "
                                  "Poisson stream at rate/N and the shards together issue exactly the global schedule")
                    : std::string("round-robin: global request k goes to shard k mod N with its original intended "
                                  "time");
  } else {
    partition = "closed loop: --concurrency, --num-requests and a --warmup count split (floor(X/N), one more for the "
                "first X mod N shards); request k of shard i uses workload item k*N+i";
  }
  j["partition"] = partition;
  j["rule"] = partitioned_schedule(global) || global.turns > 1 || global.kind == ScenarioKind::kStages
                  ? nlohmann::json(to_string(partition_rule(global)))
                  : nlohmann::json("split");
  nlohmann::json share = nlohmann::json::object();
  if (global.kind == ScenarioKind::kConcurrency) share["concurrency"] = local.concurrency;
  if (local.max_inflight) share["max_inflight"] = *local.max_inflight;
  if (local.num_requests && !partitioned_schedule(global)) share["num_requests"] = *local.num_requests;
  if (!partitioned_schedule(global) && global.warmup.requests > 0) share["warmup_requests"] = local.warmup.requests;
  if (global.kind == ScenarioKind::kServer && !global.timed_arrivals && global.request_rate > 0) {
    share["expected_rate"] = global.request_rate / static_cast<double>(s.count);
  }
  j["share"] = share;
  return j;
}

std::uint64_t ShardPlan::global(std::uint64_t k) const {
  if (k < global_index.size()) return global_index[k];
  return k * static_cast<std::uint64_t>(count) + static_cast<std::uint64_t>(index);
}

ShardPlan plan_shard(const ScenarioConfig& local, const std::vector<Nanos>* timed_arrivals) {
  ShardPlan plan;
  plan.index = local.shard.sharded() ? local.shard.index : 0;
  plan.count = local.shard.sharded() ? local.shard.count : 1;
  if (local.shard.sharded() && partitioned_schedule(local)) {
    ShardSchedule part = partition_schedule(build_schedule(local, timed_arrivals), local.shard, partition_rule(local),
                                            shard_seed(local.seed), local.warmup);
    plan.global_index = std::move(part.global_index);
    plan.pacer = make_open_loop_pacer(std::move(part.schedule), local.max_inflight, local.duration, local.warmup,
                                      run_limits(local));  // --max-duration holds for a shard too
    return plan;
  }
  plan.pacer = make_pacer(local, timed_arrivals);
  return plan;
}

}  // namespace llmload
