#pragma once
// A scenario's shard (cfg.shard) applied to its schedule, counts and workload. Pure logic.
//
// Partition per scenario (docs/distributed.md):
// - server (Poisson or gamma arrivals, ramps included): every shard builds the same global
//   schedule from the seed and keeps the requests the seeded thinning hash deals to it
//   (PartitionRule::kThinning); constant-rate arrivals, trace replay and timestamped datasets
//   deal request k to shard k mod N (kRoundRobin). Requests keep their original intended times;
//   the warmup is the global warmup's requests; the window starts where the global one does.
// - offline: global request k to shard k mod N; --max-inflight split as below.
// - concurrency: --concurrency C gives shard i shard_share(C, i, N) (floor(C/N), one more for the
//   first C mod N shards); --num-requests and a --warmup count split the same way.
// - stages: rate stages thinned per stage (their streams as in a single run), concurrency stages
//   split as above.
// - multi-turn sessions: open-loop session starts thinned; closed-loop sessions split as
//   concurrency; --num-requests and a --warmup count split.
// - single-stream (one request at a time) cannot be split: an error.
// Request contents: shard-local request k uses the workload item of its global request (the
// partition's global index; for the closed-loop cases k * N + i), so no two shards send the same
// prompt and a partitioned schedule sends exactly the single run's prompts.

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/schedule.hpp"
#include "llmload/loadgen/shard.hpp"
#include "llmload/loadgen/workload.hpp"

namespace llmload {

/// The rule used for the open-loop arrivals of `cfg` (validated).
PartitionRule partition_rule(const ScenarioConfig& cfg);

/// One shard's part of a global open-loop schedule.
struct ShardSchedule {
  Schedule schedule;                       // the owned requests in global order, original times
  std::vector<std::uint64_t> global_index;  // global_index[k]: the global request of local request k
};

/// The requests of `global` that `shard` owns under `rule` (seeded by `seed`, see shard_seed).
/// warmup_requests counts the owned requests among the global warmup; window_start is the
/// global window's start (the end of a time warmup, else the first measured global arrival)
/// so that every shard's window starts where a single run's would.
ShardSchedule partition_schedule(const Schedule& global, const ShardSpec& shard, PartitionRule rule,
                                 std::uint64_t seed, const WarmupSpec& warmup);

/// The configuration shard cfg.shard runs with: splits what is split (see the file comment) and
/// leaves rates, durations and seeds global. `cfg` must be validated. Throws ConfigError when the
/// scenario cannot be split this way (single-stream; a concurrency, in-flight cap or request
/// count smaller than the shard count), naming the flag and the fix.
ScenarioConfig shard_config(const ScenarioConfig& cfg);

/// What the artifact records of the partition (conditions.shard): rule, description, the shard's
/// shares.
nlohmann::json describe_shard(const ScenarioConfig& global, const ScenarioConfig& local);

/// The pacer of a shard and how its requests map to global requests.
struct ShardPlan {
  std::unique_ptr<Pacer> pacer;
  /// Partitioned open-loop schedules: the global request of each local one. Empty otherwise.
  std::vector<std::uint64_t> global_index;
  std::int64_t index = 0;
  std::int64_t count = 1;
  /// The global request (workload item) of local request `k`: global_index[k] when partitioned,
  /// else k * count + index (k when not sharded).
  std::uint64_t global(std::uint64_t k) const;
  /// The whole run's id of local session `s`: s * count + index (s when not sharded), so that no
  /// two shards' sessions share an id (in the merged requests.jsonl) or the deal of models and
  /// tools keyed by it. Sessions start in each shard's own order: not the ids one process gives.
  std::int64_t global_session(std::int64_t s) const { return s < 0 ? s : s * count + index; }
};

/// The pacer for `local` (= shard_config(global), or any unsharded config) with `timed_arrivals`
/// as for make_pacer.
ShardPlan plan_shard(const ScenarioConfig& local, const std::vector<Nanos>* timed_arrivals = nullptr);

}  // namespace llmload
