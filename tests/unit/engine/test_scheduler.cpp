// The engine's behaviour on virtual time: every test plays a workload through the scheduler and
// the cost model with simulate() (no clock, no sleeping) and checks what a vLLM user would see.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "llmload/server/engine/simulate.hpp"

namespace llmload::server {
namespace {

SchedulerConfig config_of(const Profile& p) {
  return SchedulerConfig{p.engine.max_num_seqs, p.engine.max_num_batched_tokens, p.engine.block_size, p.num_blocks(),
                         p.engine.enable_prefix_caching};
}

std::vector<SimArrival> burst(std::int64_t n, std::int64_t prompt, std::int64_t output, double at = 0,
                              std::uint64_t first_id = 0) {
  std::vector<SimArrival> out;
  for (std::int64_t i = 0; i < n; ++i) {
    out.push_back(SimArrival{at, EngineRequest{first_id + static_cast<std::uint64_t>(i), prompt, output, {}}});
  }
  return out;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// Invariants every run must keep.
void check_invariants(const SimResult& r, const std::vector<SimArrival>& arrivals, const SchedulerConfig& c) {
  ASSERT_EQ(r.requests.size(), arrivals.size());
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    const auto& req = r.requests[i];
    EXPECT_EQ(static_cast<std::int64_t>(req.token_times.size()), arrivals[i].request.max_tokens) << "request " << i;
    EXPECT_TRUE(std::is_sorted(req.token_times.begin(), req.token_times.end()));
    EXPECT_GE(req.scheduled_s, req.arrival_s);
    if (!req.token_times.empty()) {
      EXPECT_GT(req.token_times.front(), req.scheduled_s);
    }
  }
  for (const auto& s : r.steps) {
    EXPECT_LE(s.cost.tokens, c.max_num_batched_tokens);
    EXPECT_GT(s.cost.tokens, 0);
    EXPECT_LE(s.running, c.max_num_seqs);
    EXPECT_LE(s.kv_cache_usage, 1.0);
  }
}

TEST(Scheduler, TpotGrowsWithTheNumberOfRunningRequests) {
  const Profile p = load_profile("llama-3-8b-h100");
  const CostModel cost(p);
  double previous = 0;
  for (const std::int64_t batch : {1, 8, 32, 128, 256}) {
    const auto arrivals = burst(batch, 1024, 128);
    const SimResult r = simulate(config_of(p), cost, arrivals);
    check_invariants(r, arrivals, config_of(p));
    std::vector<double> tpots;
    for (const auto& q : r.requests) tpots.push_back(q.tpot());
    const double tpot = mean(tpots);
    EXPECT_GT(tpot, previous) << "batch " << batch;
    previous = tpot;
  }
  // One request decodes at the weight-read floor plus overhead: ~8 ms per token.
  const SimResult single = simulate(config_of(p), cost, burst(1, 128, 64));
  EXPECT_NEAR(single.requests[0].tpot(), 16.06e9 / (0.7 * 3.35e12) + 1e-3, 0.5e-3);
}

TEST(Scheduler, TtftGrowsWithQueueingOnceMaxNumSeqsIsReached) {
  Profile p = load_profile("tiny");
  p.engine.max_num_seqs = 4;
  const CostModel cost(p);
  const auto arrivals = burst(12, 32, 50);
  const SimResult r = simulate(config_of(p), cost, arrivals);
  check_invariants(r, arrivals, config_of(p));
  // The first four run at once; the others wait for a slot: no queue time, then rising queue time.
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(r.requests[static_cast<std::size_t>(i)].queue_time(), 0.0);
  for (int i = 4; i < 12; ++i) EXPECT_GT(r.requests[static_cast<std::size_t>(i)].queue_time(), 0.0);
  EXPECT_GT(r.requests[11].ttft(), 2.5 * r.requests[0].ttft());
  EXPECT_GT(r.requests[11].ttft(), r.requests[4].ttft());
  for (const auto& s : r.steps) EXPECT_LE(s.running, 4);
}

TEST(Scheduler, TtftGrowsWithQueueingOnceTheKvCacheIsFull) {
  Profile p = load_profile("tiny");  // 4096 tokens of KV, 16 sequences
  const CostModel cost(p);
  // Prompts of 1000 tokens: only four fit in the cache at once, although 16 could run.
  const auto arrivals = burst(8, 1000, 20);
  const SimResult r = simulate(config_of(p), cost, arrivals);
  check_invariants(r, arrivals, config_of(p));
  std::int64_t max_running = 0;
  for (const auto& s : r.steps) max_running = std::max(max_running, s.running);
  EXPECT_LE(max_running, 4);
  EXPECT_GT(r.requests[7].queue_time(), r.requests[0].queue_time());
  EXPECT_GT(r.requests[7].ttft(), 2 * r.requests[0].ttft());
  EXPECT_EQ(r.preemptions_total, 0) << "admission waits for blocks; nothing had to be preempted";
}

TEST(Scheduler, LongPromptsRaiseTheItlOfRequestsDecodingBesideThem) {
  Profile p = load_profile("llama-3-8b-h100");
  const CostModel cost(p);
  auto arrivals = burst(8, 64, 400);
  // A 8192-token prompt arrives while the eight are decoding: chunked over 4+ steps of 2048.
  arrivals.push_back(SimArrival{0.5, EngineRequest{100, 8000, 4, {}}});
  const SimResult r = simulate(config_of(p), cost, arrivals);
  check_invariants(r, arrivals, config_of(p));
  const auto& decoder = r.requests[0];
  const auto itls = decoder.itls();
  const double long_first_token = r.requests.back().token_times.front();
  double before = 0;
  double during = 0;
  int n_before = 0;
  int n_during = 0;
  for (std::size_t i = 1; i < decoder.token_times.size(); ++i) {
    const double t = decoder.token_times[i];
    if (t < 0.5) {
      before += itls[i - 1];
      ++n_before;
    } else if (t <= long_first_token) {
      during += itls[i - 1];
      ++n_during;
    }
  }
  ASSERT_GT(n_before, 10);
  ASSERT_GE(n_during, 3);
  // Prefill chunks of ~2000 tokens are compute-bound: ~50 ms steps instead of ~8 ms.
  EXPECT_GT(during / n_during, 3 * (before / n_before));
  // The long prompt needed ceil(8000 / (2048 - 8)) = 4 steps before its first token.
  std::int64_t prefill_steps = 0;
  for (const auto& s : r.steps) prefill_steps += s.cost.prefill_tokens > 0 && s.start_s >= 0.5 ? 1 : 0;
  EXPECT_EQ(prefill_steps, 4);
}

TEST(Scheduler, PreemptionsAppearWhenTheKvCacheIsExceededAndEveryoneStillFinishes) {
  Profile p = load_profile("tiny");  // 256 blocks of 16
  const CostModel cost(p);
  // 16 requests of 100-token prompts are admitted at once (1600 tokens), then grow to 500 tokens
  // each (8000 > 4096): the newest are preempted and recomputed later.
  const auto arrivals = burst(16, 100, 400);
  const SimResult r = simulate(config_of(p), cost, arrivals);
  check_invariants(r, arrivals, config_of(p));
  EXPECT_GT(r.preemptions_total, 0);
  std::int64_t per_request = 0;
  for (const auto& q : r.requests) per_request += q.preemptions;
  EXPECT_EQ(per_request, r.preemptions_total);
  // The oldest request is never the victim.
  EXPECT_EQ(r.requests[0].preemptions, 0);
  EXPECT_GT(r.requests[15].preemptions, 0);
  double peak = 0;
  for (const auto& s : r.steps) peak = std::max(peak, s.kv_cache_usage);
  EXPECT_GT(peak, 0.9);
}

TEST(Scheduler, NoPreemptionWhenEverythingFits) {
  const Profile p = load_profile("tiny");
  const SimResult r = simulate(config_of(p), CostModel(p), burst(4, 100, 400));
  EXPECT_EQ(r.preemptions_total, 0);
}

TEST(Scheduler, ChunkedPrefillSplitsALongPromptOverTheTokenBudget) {
  const Profile p = load_profile("tiny");  // budget 256 tokens per step
  const auto arrivals = burst(1, 1000, 3);
  const SimResult r = simulate(config_of(p), CostModel(p), arrivals);
  check_invariants(r, arrivals, config_of(p));
  // ceil(1000 / 256) = 4 prefill steps, the token comes at the end of the 4th; then 2 decodes.
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_EQ(r.steps[0].cost.prefill_tokens, 256);
  EXPECT_EQ(r.steps[3].cost.prefill_tokens, 1000 - 3 * 256);
  EXPECT_DOUBLE_EQ(r.requests[0].token_times[0], r.steps[3].start_s + r.steps[3].seconds);
}

TEST(Scheduler, PrefixCachingServesASharedPrefixFromTheCache) {
  const Profile p = load_profile("tiny");
  std::vector<std::uint32_t> ids(512);
  std::iota(ids.begin(), ids.end(), 7u);
  const auto hashes = prompt_block_hashes(ids, 16);
  ASSERT_EQ(hashes.size(), 32u);
  std::vector<SimArrival> arrivals = {SimArrival{0, EngineRequest{1, 512, 4, hashes}},
                                      SimArrival{1.0, EngineRequest{2, 512, 4, hashes}}};
  // A third request shares only the first half of the prefix.
  std::vector<std::uint32_t> half = ids;
  for (std::size_t i = 256; i < half.size(); ++i) half[i] += 100000;
  arrivals.push_back(SimArrival{2.0, EngineRequest{3, 512, 4, prompt_block_hashes(half, 16)}});
  const SimResult r = simulate(config_of(p), CostModel(p), arrivals);
  check_invariants(r, arrivals, config_of(p));
  EXPECT_EQ(r.requests[0].cached_tokens, 0);
  EXPECT_EQ(r.requests[1].cached_tokens, 511);  // all cached but the last token, recomputed
  EXPECT_EQ(r.requests[2].cached_tokens, 256);
  EXPECT_LT(r.requests[1].ttft(), r.requests[0].ttft());
  EXPECT_EQ(r.prefix_hit_tokens, 511 + 256);
  EXPECT_EQ(r.prefix_queried_tokens, 3 * 512);

  Profile off = p;
  off.engine.enable_prefix_caching = false;
  const SimResult none = simulate(config_of(off), CostModel(off), arrivals);
  EXPECT_EQ(none.requests[1].cached_tokens, 0);
  EXPECT_NEAR(none.requests[1].ttft(), none.requests[0].ttft(), 1e-9);
}

TEST(Scheduler, BlockHashesAreChainedOverThePrefix) {
  std::vector<std::uint32_t> a(48, 1);
  std::vector<std::uint32_t> b = a;
  b[3] = 2;  // differs in the first block: every later block hash differs too
  const auto ha = prompt_block_hashes(a, 16);
  const auto hb = prompt_block_hashes(b, 16);
  ASSERT_EQ(ha.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NE(ha[i], hb[i]);
  EXPECT_NE(ha[1], ha[2]) << "equal blocks at different depths hash differently";
  EXPECT_EQ(prompt_block_hashes(std::vector<std::uint32_t>(15, 1), 16).size(), 0u);
}

TEST(Scheduler, AbortFreesTheRequestsBlocks) {
  const Profile p = load_profile("tiny");
  Scheduler s(config_of(p), CostModel(p));
  s.add(EngineRequest{1, 1000, 100, {}});
  s.add(EngineRequest{2, 10, 100, {}});
  (void)s.step();
  EXPECT_GT(s.stats().used_blocks, 0);
  s.abort(1);
  s.abort(2);
  s.abort(99);  // unknown: ignored
  EXPECT_FALSE(s.has_work());
  EXPECT_EQ(s.stats().used_blocks, 0);
}

TEST(Scheduler, RejectsRequestsLargerThanTheCacheAndDuplicateIds) {
  const Profile p = load_profile("tiny");
  Scheduler s(config_of(p), CostModel(p));
  EXPECT_THROW(s.add(EngineRequest{1, 4000, 200, {}}), std::invalid_argument);
  s.add(EngineRequest{2, 10, 10, {}});
  EXPECT_THROW(s.add(EngineRequest{2, 10, 10, {}}), std::invalid_argument);
}

TEST(Scheduler, IsDeterministic) {
  const Profile p = load_profile("tiny");
  const auto arrivals = burst(20, 150, 300);
  const SimResult a = simulate(config_of(p), CostModel(p), arrivals);
  const SimResult b = simulate(config_of(p), CostModel(p), arrivals);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) EXPECT_EQ(a.requests[i].token_times, b.requests[i].token_times);
}

TEST(Scheduler, ThroughputSaturatesAsTheBatchGrows) {
  // Output tokens per second rise with batch size and flatten: the knee of a capacity curve.
  const Profile p = load_profile("llama-3-8b-h100");
  double previous = 0;
  std::vector<double> tput;
  for (const std::int64_t batch : {1, 16, 64, 256}) {
    const SimResult r = simulate(config_of(p), CostModel(p), burst(batch, 256, 256));
    tput.push_back(static_cast<double>(batch * 256) / r.end_s);
    EXPECT_GT(tput.back(), previous);
    previous = tput.back();
  }
  EXPECT_GT(tput[1] / tput[0], 8.0);   // near-free batching while memory-bound
  EXPECT_LT(tput[3] / tput[2], 4.0);   // sub-linear once KV reads and compute dominate
}

}  // namespace
}  // namespace llmload::server
