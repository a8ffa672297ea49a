// A scenario split over shards: every scenario's partition issues exactly the single run's load
// (the same intended times, the same workload items), each shard its part.
#include "llmload/loadgen/shard_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/schedule.hpp"
#include "sim.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using testing::config_error;
using testing::fixed_service;
using testing::simulate;

const TimePoint t0(5000s);

ScenarioConfig server(double rate, std::int64_t n, std::uint64_t seed = 7) {
  ScenarioConfig c;
  c.kind = ScenarioKind::kServer;
  c.request_rate = rate;
  c.num_requests = n;
  c.seed = seed;
  c.validate();
  return c;
}

ScenarioConfig with_shard(ScenarioConfig c, std::int64_t index, std::int64_t count) {
  c.shard.index = index;
  c.shard.count = count;
  return c;
}

// The union of the shards' parts, by global index: every global request exactly once, with its
// original intended time; each part in time order.
void expect_exact_partition(const Schedule& global, const std::vector<ShardSchedule>& parts) {
  std::map<std::uint64_t, Nanos> seen;
  std::int64_t warmup = 0;
  for (const auto& p : parts) {
    ASSERT_EQ(p.schedule.arrivals.size(), p.global_index.size());
    EXPECT_TRUE(std::is_sorted(p.schedule.arrivals.begin(), p.schedule.arrivals.end()));
    for (std::size_t k = 0; k < p.global_index.size(); ++k) {
      EXPECT_TRUE(seen.emplace(p.global_index[k], p.schedule.arrivals[k]).second) << "request in two shards";
    }
    warmup += p.schedule.warmup_requests;
    // The shard's warmup requests come first and are exactly its part of the global warmup.
    for (std::size_t k = 0; k < p.global_index.size(); ++k) {
      EXPECT_EQ(static_cast<std::int64_t>(k) < p.schedule.warmup_requests,
                static_cast<std::int64_t>(p.global_index[k]) < global.warmup_requests);
    }
  }
  ASSERT_EQ(seen.size(), global.arrivals.size());
  for (const auto& [g, t] : seen) EXPECT_EQ(t, global.arrivals[g]) << "request " << g << " moved";
  EXPECT_EQ(warmup, global.warmup_requests);
}

std::vector<ShardSchedule> partition_all(const ScenarioConfig& cfg, std::int64_t n,
                                         const std::vector<Nanos>* timed = nullptr) {
  const Schedule global = build_schedule(cfg, timed);
  std::vector<ShardSchedule> parts;
  for (std::int64_t i = 0; i < n; ++i) {
    parts.push_back(partition_schedule(global, with_shard(cfg, i, n).shard, partition_rule(cfg), shard_seed(cfg.seed),
                                       cfg.warmup));
  }
  return parts;
}

TEST(Partition, PoissonThinningIssuesExactlyTheGlobalSchedule) {
  ScenarioConfig cfg = server(50, 2000);
  cfg.warmup.requests = 20;
  EXPECT_EQ(partition_rule(cfg), PartitionRule::kThinning);
  const Schedule global = build_schedule(cfg);
  for (std::int64_t n : {1, 2, 3, 5}) {
    const auto parts = partition_all(cfg, n);
    expect_exact_partition(global, parts);
    for (const auto& p : parts) {
      ASSERT_TRUE(p.schedule.window_start.has_value());
      EXPECT_EQ(*p.schedule.window_start, global.arrivals[20]) << "every shard's window starts at the global one";
    }
  }
}

TEST(Partition, EachThinnedShardIsAPoissonStreamAtRateOverN) {
  // 30,000 arrivals at 100/s over 3 shards: each shard's gaps should be exponential with mean
  // 30 ms (CV 1, uncorrelated). Standard errors with ~10,000 gaps: mean 1%, CV ~0.014 (exponential
  // kurtosis 9), lag-1 correlation 0.01. Bounds at 4-5 standard errors; round-robin dealing would
  // give CV 1/sqrt(3) = 0.58 and fail.
  ScenarioConfig cfg = server(100, 30'000, 11);
  const auto parts = partition_all(cfg, 3);
  for (const auto& p : parts) {
    std::vector<double> gaps;
    for (std::size_t k = 1; k < p.schedule.arrivals.size(); ++k) {
      gaps.push_back(testing::secs(p.schedule.arrivals[k] - p.schedule.arrivals[k - 1]));
    }
    double mean = 0;
    for (double g : gaps) mean += g;
    mean /= static_cast<double>(gaps.size());
    double var = 0;
    double cov = 0;
    for (std::size_t k = 0; k < gaps.size(); ++k) {
      var += (gaps[k] - mean) * (gaps[k] - mean);
      if (k > 0) cov += (gaps[k] - mean) * (gaps[k - 1] - mean);
    }
    var /= static_cast<double>(gaps.size() - 1);
    cov /= static_cast<double>(gaps.size() - 2);
    EXPECT_NEAR(mean, 0.030, 0.030 * 0.04);
    EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.06);
    EXPECT_NEAR(cov / var, 0.0, 0.05);
  }
}

TEST(Partition, ConstantTraceAndOfflineDealRoundRobinKeepingIntendedTimes) {
  ScenarioConfig constant = server(20, 100);
  constant.arrivals.process = "constant";
  EXPECT_EQ(partition_rule(constant), PartitionRule::kRoundRobin);
  auto parts = partition_all(constant, 3);
  expect_exact_partition(build_schedule(constant), parts);
  for (std::size_t k = 0; k < parts[1].global_index.size(); ++k) EXPECT_EQ(parts[1].global_index[k], 3 * k + 1);
  // Each shard is itself a constant-rate stream at rate/3.
  EXPECT_EQ(parts[2].schedule.arrivals[1] - parts[2].schedule.arrivals[0], 150ms);

  ScenarioConfig trace;
  trace.kind = ScenarioKind::kServer;
  trace.timed_arrivals = true;
  trace.num_requests = 7;
  trace.validate();
  const std::vector<Nanos> times = {0ms, 5ms, 5ms, 9ms, 100ms, 101ms, 250ms};
  EXPECT_EQ(partition_rule(trace), PartitionRule::kRoundRobin);
  parts = partition_all(trace, 2, &times);
  expect_exact_partition(build_schedule(trace, &times), parts);
  EXPECT_EQ(parts[0].schedule.arrivals, (std::vector<Nanos>{0ms, 5ms, 100ms, 250ms}));
  EXPECT_EQ(parts[1].schedule.arrivals, (std::vector<Nanos>{5ms, 9ms, 101ms}));

  ScenarioConfig offline;
  offline.kind = ScenarioKind::kOffline;
  offline.num_requests = 9;
  offline.warmup.requests = 2;  // 11 requests: global 0 and 1 are warmup
  offline.validate();
  parts = partition_all(offline, 4);
  expect_exact_partition(build_schedule(offline), parts);
  EXPECT_EQ(parts[0].schedule.arrivals.size(), 3u);  // 0, 4, 8 (0 is warmup)
  EXPECT_EQ(parts[0].schedule.warmup_requests, 1);
  EXPECT_EQ(parts[3].schedule.arrivals.size(), 2u);  // 3, 7 (11 would be the 12th request)
  EXPECT_EQ(parts[3].schedule.warmup_requests, 0);
}

TEST(Partition, DurationBoundAndTimeWarmupSchedulesToo) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = 40;
  cfg.duration = 5s;
  cfg.warmup.duration = 1s;
  cfg.arrivals.process = "gamma";
  cfg.arrivals.burstiness = 0.5;
  cfg.validate();
  const auto parts = partition_all(cfg, 3);
  expect_exact_partition(build_schedule(cfg), parts);
  for (const auto& p : parts) EXPECT_EQ(p.schedule.window_start, 1s);
}

TEST(Partition, ShardPacerWindowStartsAtTheGlobalWindowStart) {
  ScenarioConfig cfg = server(20, 40);
  cfg.warmup.requests = 3;
  const Schedule global = build_schedule(cfg);
  for (std::int64_t i = 0; i < 3; ++i) {
    const ScenarioConfig local = shard_config(with_shard(cfg, i, 3));
    ShardPlan plan = plan_shard(local);
    const auto r = simulate(*plan.pacer, t0, fixed_service(10ms), t0 + 100s);
    ASSERT_TRUE(plan.pacer->window_start().has_value());
    EXPECT_EQ(*plan.pacer->window_start(), t0 + global.arrivals[3]);
    for (const auto& q : r.requests) {
      EXPECT_EQ(q.rel.intended, t0 + global.arrivals[plan.global(q.rel.index)]);
      EXPECT_EQ(q.rel.warmup, plan.global(q.rel.index) < 3);
    }
  }
}

TEST(ShardConfig, ClosedLoopSplitsConcurrencyCountsAndWarmupRemainderFirst) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 10;
  cfg.num_requests = 101;
  cfg.warmup.requests = 5;
  cfg.validate();
  std::int64_t c = 0, n = 0, w = 0;
  const std::int64_t expect_c[] = {3, 3, 2, 2};
  for (std::int64_t i = 0; i < 4; ++i) {
    const ScenarioConfig local = shard_config(with_shard(cfg, i, 4));
    EXPECT_EQ(local.concurrency, expect_c[i]);
    c += local.concurrency;
    n += *local.num_requests;
    w += local.warmup.requests;
  }
  EXPECT_EQ(c, 10);
  EXPECT_EQ(n, 101);
  EXPECT_EQ(w, 5);
  // Open loop: counts stay global (the global schedule is partitioned), the in-flight cap splits.
  ScenarioConfig open = server(10, 100);
  open.max_inflight = 5;
  const ScenarioConfig local = shard_config(with_shard(open, 1, 2));
  EXPECT_EQ(*local.num_requests, 100);
  EXPECT_EQ(*local.max_inflight, 2);
  EXPECT_EQ(local.request_rate, 10);
}

TEST(ShardConfig, WhatCannotBeSplitIsAnErrorNamingTheFlagAndTheFix) {
  ScenarioConfig single;
  single.kind = ScenarioKind::kSingleStream;
  single.validate();
  std::string e = config_error([&] { shard_config(with_shard(single, 0, 2)); });
  EXPECT_NE(e.find("single-stream"), std::string::npos) << e;
  EXPECT_NE(e.find("--scenario concurrency --concurrency 2"), std::string::npos) << e;

  ScenarioConfig conc;
  conc.kind = ScenarioKind::kConcurrency;
  conc.concurrency = 2;
  conc.num_requests = 10;
  conc.validate();
  e = config_error([&] { shard_config(with_shard(conc, 2, 3)); });
  EXPECT_NE(e.find("--concurrency 2 cannot be split over 3 shards"), std::string::npos) << e;
  EXPECT_NE(e.find("--concurrency 3 or more, or use fewer shards (--shard-count)"), std::string::npos) << e;
  // The shards of --workers: the advice names the flag the user gave.
  ScenarioConfig by_workers = with_shard(conc, 2, 3);
  by_workers.shard.made_by = ShardSpec::MadeBy::kWorkers;
  e = config_error([&] { shard_config(by_workers); });
  EXPECT_NE(e.find("or use fewer --workers"), std::string::npos) << e;
  EXPECT_EQ(e.find("--shard-count"), std::string::npos) << e;
  conc.concurrency = 3;
  conc.num_requests = 2;
  e = config_error([&] { shard_config(with_shard(conc, 2, 3)); });
  EXPECT_NE(e.find("--num-requests 2"), std::string::npos) << e;

  ScenarioConfig stages;
  stages.kind = ScenarioKind::kStages;
  stages.arrivals.stages = parse_stages("rate:5@1s,concurrency:2@1s");
  stages.validate();
  e = config_error([&] { shard_config(with_shard(stages, 2, 3)); });
  EXPECT_NE(e.find("stage 2"), std::string::npos) << e;

  ScenarioConfig bad = server(10, 10);
  e = config_error([&] { shard_config(with_shard(bad, 3, 3)); });
  EXPECT_NE(e.find("--shard-index"), std::string::npos) << e;
}

// Stages: the rate stages' arrivals of all shards together are the single run's; each shard holds
// its share of a concurrency stage.
TEST(Partition, StagesRateArrivalsUnionIsTheSingleRunsAndConcurrencySplits) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kStages;
  cfg.arrivals.stages = parse_stages("rate:40@2s,concurrency:6@1s,rate:20@2s");
  cfg.seed = 3;
  cfg.validate();
  auto rate_releases = [](const testing::SimResult& r, const ScenarioConfig& c) {
    std::vector<Nanos> out;
    for (const auto& q : r.requests) {
      if (!c.arrivals.stages[static_cast<std::size_t>(q.rel.stage)].concurrency) out.push_back(q.rel.intended - t0);
    }
    return out;
  };
  auto single_pacer = make_pacer(cfg);
  const auto single = simulate(*single_pacer, t0, fixed_service(100ms), t0 + 60s);
  std::vector<Nanos> expected = rate_releases(single, cfg);
  ASSERT_GT(expected.size(), 80u);
  std::vector<Nanos> got;
  for (std::int64_t i = 0; i < 3; ++i) {
    const ScenarioConfig local = shard_config(with_shard(cfg, i, 3));
    EXPECT_EQ(local.arrivals.stages[1].value, 2);
    auto p = make_pacer(local);
    const auto r = simulate(*p, t0, fixed_service(100ms), t0 + 60s);
    const auto mine = rate_releases(r, local);
    got.insert(got.end(), mine.begin(), mine.end());
    std::int64_t in_conc_stage = 0;
    for (const auto& q : r.requests) in_conc_stage += q.rel.stage == 1 ? 1 : 0;
    EXPECT_GT(in_conc_stage, 0);
  }
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got, expected);
}

// Open-loop sessions: the shards' session starts together are the single run's, and a
// duration-bounded shard cuts at the single run's window end.
TEST(Partition, ServerSessionStartsUnionIsTheSingleRuns) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kServer;
  cfg.request_rate = 8;
  cfg.turns = 3;
  cfg.think_time = 200ms;
  cfg.duration = 6s;
  cfg.seed = 9;
  cfg.validate();
  auto starts = [](const testing::SimResult& r) {
    std::vector<Nanos> out;
    for (const auto& q : r.requests) {
      if (q.rel.turn == 0) out.push_back(q.rel.intended - t0);
    }
    return out;
  };
  auto single_pacer = make_pacer(cfg);
  auto expected = starts(simulate(*single_pacer, t0, fixed_service(50ms), t0 + 60s));
  ASSERT_GT(expected.size(), 20u);
  std::vector<Nanos> got;
  for (std::int64_t i = 0; i < 2; ++i) {
    auto p = make_pacer(shard_config(with_shard(cfg, i, 2)));
    const auto mine = starts(simulate(*p, t0, fixed_service(50ms), t0 + 60s));
    got.insert(got.end(), mine.begin(), mine.end());
    EXPECT_EQ(*p->window_start(), t0 + expected.front());
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
}

// A finite workload of 5 items.
// A shard's local request k is the whole run's request plan.global(k): the run controller gives
// it that request's workload item, model and tools, and its record names that item.
TEST(ShardPlan, GlobalIsTheWholeRunsRequest) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 3;
  cfg.num_requests = 9;
  cfg.validate();
  const ShardPlan plan = plan_shard(shard_config(with_shard(cfg, 1, 3)));
  EXPECT_EQ(plan.global(0), 1u);
  EXPECT_EQ(plan.global(2), 7u);

  // Partitioned: the global index of the schedule, each global request in exactly one shard.
  const ScenarioConfig open = server(10, 30);
  std::vector<std::uint64_t> seen;
  for (int i = 0; i < 3; ++i) {
    const ShardPlan p = plan_shard(shard_config(with_shard(open, i, 3)));
    ASSERT_FALSE(p.global_index.empty());
    for (std::uint64_t k = 0; k < p.global_index.size(); ++k) seen.push_back(p.global(k));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_TRUE(std::adjacent_find(seen.begin(), seen.end()) == seen.end()) << "a global request in two shards";
  // Not sharded: the identity.
  const ShardPlan p3 = plan_shard(open);
  EXPECT_EQ(p3.global(4), 4u);
  EXPECT_EQ(p3.global_session(4), 4);
  // Sessions: each shard's own ids, none shared with another shard's.
  EXPECT_EQ(plan.global_session(0), 1);
  EXPECT_EQ(plan.global_session(2), 7);
  EXPECT_EQ(plan.global_session(-1), -1) << "no session";
}

TEST(DescribeShard, RecordsRuleAndShares) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = 5;
  cfg.num_requests = 50;
  cfg.validate();
  const ScenarioConfig g = with_shard(cfg, 1, 2);
  const auto j = describe_shard(g, shard_config(g));
  EXPECT_EQ(j["index"], 1);
  EXPECT_EQ(j["count"], 2);
  EXPECT_EQ(j["rule"], "split");
  EXPECT_EQ(j["share"]["concurrency"], 2);
  EXPECT_EQ(j["share"]["num_requests"], 25);
  const ScenarioConfig s = with_shard(server(30, 100), 0, 3);
  const auto js = describe_shard(s, shard_config(s));
  EXPECT_EQ(js["rule"], "thinning");
  EXPECT_DOUBLE_EQ(js["share"]["expected_rate"].get<double>(), 10.0);
}

}  // namespace
}  // namespace llmload
