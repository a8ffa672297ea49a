// LoRA adapters in the engine simulator, on virtual time: the GPU/CPU adapter caches, vLLM's
// max_loras admission rule, and the load time a step pays for an adapter that is not resident.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "llmload/server/engine/lora_cache.hpp"
#include "llmload/server/engine/simulate.hpp"

namespace llmload::server::lora_engine_test {

/// A tiny profile's scheduler with LoRA on: `max_loras` slots, `max_cpu_loras` in CPU memory,
/// no adapter preloaded, 5 ms per load from CPU memory and 50 ms more from disk.
SchedulerConfig lora_config(const Profile& p, std::int64_t max_loras, std::int64_t max_cpu_loras) {
  SchedulerConfig c;
  c.max_num_seqs = p.engine.max_num_seqs;
  c.max_num_batched_tokens = p.engine.max_num_batched_tokens;
  c.block_size = p.engine.block_size;
  c.num_blocks = p.num_blocks();
  c.enable_prefix_caching = false;
  c.lora.max_loras = max_loras;
  c.lora.max_cpu_loras = max_cpu_loras;
  c.lora.load_seconds = 0.005;
  c.lora.disk_load_seconds = 0.050;
  c.lora.adapter_parameters = lora_adapter_parameters(p.model, 16);
  c.lora.adapter_bytes = 2 * c.lora.adapter_parameters;
  return c;
}

SimArrival arrival(double at, std::uint64_t id, std::int32_t lora, std::int64_t prompt = 16, std::int64_t output = 8) {
  EngineRequest r;
  r.id = id;
  r.prompt_tokens = prompt;
  r.max_tokens = output;
  r.lora = lora;
  return SimArrival{at, r};
}

/// Loads per adapter over a run.
std::map<std::int32_t, int> loads_by_adapter(const SimResult& r, bool disk_only = false) {
  std::map<std::int32_t, int> out;
  for (const auto& s : r.steps) {
    for (const auto& l : s.lora_loads) {
      if (!disk_only || l.from_disk) ++out[l.adapter];
    }
  }
  return out;
}

/// [first scheduled, last token] of request i: it is in the running batch throughout.
std::pair<double, double> running_span(const SimResult& r, std::size_t i) {
  return {r.requests[i].scheduled_s, r.requests[i].token_times.back()};
}

bool overlap(std::pair<double, double> a, std::pair<double, double> b) {
  return a.first < b.second && b.first < a.second;
}

TEST(LoraCache, AResidentAdapterIsNotLoadedAgainAndLruEvictsTheOldest) {
  EngineLoraConfig c;
  c.max_loras = 2;
  c.max_cpu_loras = 2;
  LoraCache cache(c);
  auto loads = cache.activate({1});
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_TRUE(loads[0].from_disk);  // nothing preloaded
  EXPECT_TRUE(cache.activate({1}).empty());
  EXPECT_EQ(cache.activate({2}).size(), 1u);
  EXPECT_TRUE(cache.activate({1}).empty());  // 1 is now the most recent, 2 the oldest
  loads = cache.activate({3});
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_TRUE(loads[0].from_disk);
  EXPECT_TRUE(cache.on_gpu(1));
  EXPECT_FALSE(cache.on_gpu(2));
  EXPECT_FALSE(cache.in_cpu(2)) << "with max_cpu_loras 2, the third adapter pushes the oldest out of CPU memory";
}

TEST(LoraCache, MoreCpuSlotsTurnDiskLoadsIntoCpuLoads) {
  EngineLoraConfig c;
  c.max_loras = 1;
  c.max_cpu_loras = 3;
  LoraCache cache(c);
  EXPECT_TRUE(cache.activate({1})[0].from_disk);
  EXPECT_TRUE(cache.activate({2})[0].from_disk);
  const auto back = cache.activate({1});
  ASSERT_EQ(back.size(), 1u) << "one GPU slot: 1 was evicted by 2";
  EXPECT_FALSE(back[0].from_disk) << "but it stayed in CPU memory";
}

TEST(LoraCache, StartUpLoadsLeaveTheLastAdaptersResident) {
  EngineLoraConfig c;
  c.max_loras = 1;
  c.max_cpu_loras = 2;
  c.preloaded = {1, 2, 3};
  LoraCache cache(c);
  EXPECT_TRUE(cache.on_gpu(3));
  EXPECT_FALSE(cache.on_gpu(2));
  EXPECT_TRUE(cache.in_cpu(2));
  EXPECT_FALSE(cache.in_cpu(1));
  EXPECT_TRUE(cache.activate({3}).empty());
}

TEST(LoraCache, AdapterSizeFollowsRankAndModel) {
  const Profile p = load_profile("llama-3-8b-h100");
  const double params = lora_adapter_parameters(p.model, 16);
  // All seven linear modules of Llama-3-8B at rank 16: 16 x 81920 x 32 = 41.9 M parameters; the
  // estimate counts the embeddings in N too, so it comes out about 10% high.
  EXPECT_GT(params, 41.9e6);
  EXPECT_LT(params, 1.15 * 41.9e6);
  EXPECT_DOUBLE_EQ(lora_adapter_parameters(p.model, 32), 2 * params);
  EXPECT_GT(default_lora_disk_load_seconds(2 * params), default_lora_load_seconds(2 * params));
}

TEST(LoraScheduler, WithOneSlotTwoAdaptersNeverShareABatchButBaseRequestsDo) {
  const Profile p = load_profile("tiny");
  const auto c = lora_config(p, 1, 1);
  std::vector<SimArrival> arrivals;
  for (std::uint64_t i = 0; i < 12; ++i) arrivals.push_back(arrival(0.001 * static_cast<double>(i), i,
                                                                    static_cast<std::int32_t>(i % 3)));
  const SimResult r = simulate(c, CostModel(p), arrivals);
  bool base_with_adapter = false;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    ASSERT_EQ(r.requests[i].token_times.size(), 8u);
    for (std::size_t j = i + 1; j < arrivals.size(); ++j) {
      const auto a = arrivals[i].request.lora;
      const auto b = arrivals[j].request.lora;
      const bool together = overlap(running_span(r, i), running_span(r, j));
      if (a != 0 && b != 0 && a != b) {
        EXPECT_FALSE(together) << "requests " << i << " (adapter " << a << ") and " << j << " (adapter " << b << ")";
      }
      if (together && (a == 0) != (b == 0)) base_with_adapter = true;
    }
  }
  EXPECT_TRUE(base_with_adapter) << "base requests are not held back by max_loras";
}

TEST(LoraScheduler, AWaitingAdapterRequestDoesNotBlockTheRequestsBehindIt) {
  const Profile p = load_profile("tiny");
  const auto c = lora_config(p, 1, 1);
  // Adapter 1 runs long; adapter 2 arrives next and must wait; a base request behind it must not.
  const std::vector<SimArrival> arrivals = {arrival(0, 0, 1, 16, 200), arrival(0.0001, 1, 2, 16, 4),
                                            arrival(0.0002, 2, 0, 16, 4)};
  const SimResult r = simulate(c, CostModel(p), arrivals);
  EXPECT_LT(r.requests[2].scheduled_s, r.requests[0].token_times.back()) << "the base request ran beside adapter 1";
  EXPECT_GE(r.requests[1].scheduled_s, r.requests[0].token_times.back()) << "adapter 2 waited for adapter 1";
  EXPECT_LT(r.requests[2].token_times.back(), r.requests[1].scheduled_s);
}

TEST(LoraScheduler, AResidentAdapterIsLoadedOnceAndAgainAfterEviction) {
  const Profile p = load_profile("tiny");
  const auto c = lora_config(p, 1, 1);
  // Five requests of adapter 1 in a row: one load.
  std::vector<SimArrival> arrivals;
  for (std::uint64_t i = 0; i < 5; ++i) arrivals.push_back(arrival(0.5 * static_cast<double>(i), i, 1));
  SimResult r = simulate(c, CostModel(p), arrivals);
  EXPECT_EQ(loads_by_adapter(r)[1], 1);
  // 1, then 2 (evicts 1 from the only slot), then 1 again: 1 is loaded twice.
  arrivals = {arrival(0, 0, 1), arrival(0.5, 1, 2), arrival(1.0, 2, 1)};
  r = simulate(c, CostModel(p), arrivals);
  auto loads = loads_by_adapter(r);
  EXPECT_EQ(loads[1], 2);
  EXPECT_EQ(loads[2], 1);
  EXPECT_EQ(loads_by_adapter(r, /*disk_only=*/true)[1], 2) << "max_cpu_loras 1: the evicted adapter left CPU memory too";
  // With room for both in CPU memory the reload comes from there, not from disk.
  r = simulate(lora_config(p, 1, 2), CostModel(p), arrivals);
  EXPECT_EQ(loads_by_adapter(r)[1], 2);
  EXPECT_EQ(loads_by_adapter(r, /*disk_only=*/true)[1], 1);
}

TEST(LoraScheduler, TheLoadIsChargedToTheStepThatNeedsIt) {
  const Profile p = load_profile("tiny");
  const auto c = lora_config(p, 1, 1);
  const SimResult r = simulate(c, CostModel(p), {arrival(0, 0, 1, 16, 2), arrival(1.0, 1, 1, 16, 2)});
  // The first request's first step loads adapter 1 from disk; the second finds it resident.
  ASSERT_FALSE(r.steps.empty());
  const SimStep& first = r.steps.front();
  ASSERT_EQ(first.lora_loads.size(), 1u);
  EXPECT_DOUBLE_EQ(first.cost.lora_load_seconds, c.lora.load_seconds + c.lora.disk_load_seconds);
  const double ttft0 = r.requests[0].ttft();
  const double ttft1 = r.requests[1].ttft();
  EXPECT_NEAR(ttft0 - ttft1, c.lora.load_seconds + c.lora.disk_load_seconds, 1e-9);
  // A base request pays nothing and reads no adapter weights.
  const SimResult base = simulate(c, CostModel(p), {arrival(0, 0, 0, 16, 2)});
  EXPECT_EQ(base.steps.front().cost.lora_load_seconds, 0.0);
  EXPECT_EQ(base.steps.front().cost.lora_bytes, 0.0);
  EXPECT_GT(r.steps.back().cost.lora_bytes, 0.0);
}

TEST(LoraScheduler, ASkewedMixLoadsTheHotAdapterOnce) {
  const Profile p = load_profile("tiny");
  const auto c = lora_config(p, 2, 2);
  // Zipf-like over four adapters: 1 gets every other request, 2..4 share the rest. The hot
  // adapter always has requests running, so LRU never evicts it; the cold ones swap in turn.
  std::vector<SimArrival> arrivals;
  const std::int32_t cold[] = {2, 3, 2, 4, 2, 3};
  for (std::uint64_t i = 0; i < 48; ++i) {
    const std::int32_t lora = i % 2 == 0 ? 1 : cold[(i / 2) % 6];
    arrivals.push_back(arrival(0.002 * static_cast<double>(i), i, lora, 32, 24));
  }
  const SimResult r = simulate(c, CostModel(p), arrivals);
  const auto loads = loads_by_adapter(r);
  EXPECT_EQ(loads.at(1), 1);
  for (const std::int32_t adapter : {2, 3, 4}) {
    EXPECT_GE(loads.count(adapter), 1u) << "the cold adapters swap through the second slot: " << adapter;
  }
  for (const auto& q : r.requests) EXPECT_EQ(q.token_times.size(), 24u);
}

TEST(LoraScheduler, StatsNameTheRunningAndWaitingAdapters) {
  const Profile p = load_profile("tiny");
  Scheduler s(lora_config(p, 1, 1), CostModel(p));
  for (const auto& a : {arrival(0, 0, 2), arrival(0, 1, 1), arrival(0, 2, 0)}) s.add(a.request);
  (void)s.step();
  const SchedulerStats stats = s.stats();
  EXPECT_EQ(stats.running_loras, std::vector<std::int32_t>{2});
  EXPECT_EQ(stats.waiting_loras, std::vector<std::int32_t>{1});
  EXPECT_EQ(stats.running, 2) << "adapter 2 and the base request";
}

TEST(LoraScheduler, AnAdapterRequestWithoutLoraIsRefused) {
  const Profile p = load_profile("tiny");
  SchedulerConfig c = lora_config(p, 1, 1);
  c.lora = EngineLoraConfig{};
  Scheduler s(c, CostModel(p));
  EXPECT_THROW(s.add(arrival(0, 0, 1).request), std::invalid_argument);
}

}  // namespace llmload::server::lora_engine_test
