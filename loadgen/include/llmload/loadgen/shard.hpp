#pragma once
// Sharding: one run split over N load generators (machines, pods, MPI ranks). Shard i of N issues
// its part of the same global schedule; every shard starts at a common wall-clock time and then
// measures on its own monotonic clock. This header holds the shard's identity and the pure rules
// every shard applies alike; shard_plan.hpp applies them to a scenario. See docs/distributed.md.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmload {

using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;

/// Which part of a run this process issues.
struct ShardSpec {
  std::int64_t index = 0;  // 0 <= index < count
  std::int64_t count = 1;  // 1: not sharded
  /// Common start on the system clock (--start-at): every shard sleeps until it, then runs on its
  /// steady clock. nullopt: start at once.
  std::optional<WallTime> start_at;
  /// Set by the settings layer when --shard-index / --shard-count were given (resolve_shard in
  /// the app fills the index from JOB_COMPLETION_INDEX when only the count was given).
  bool index_given = false;
  bool count_given = false;
  /// What made the shards, for advice in the user's terms: --shard-count, `llmload run --workers`'s
  /// processes, or llmload-mpi's ranks.
  enum class MadeBy { kShardFlags, kWorkers, kMpiRanks };
  MadeBy made_by = MadeBy::kShardFlags;

  bool sharded() const { return count > 1; }
  /// The advice for a run split too finely, in the flag the user gave.
  const char* fewer_advice() const {
    switch (made_by) {
      case MadeBy::kWorkers: return "use fewer --workers";
      case MadeBy::kMpiRanks: return "use fewer ranks (mpirun -np)";
      case MadeBy::kShardFlags: break;
    }
    return "use fewer shards (--shard-count)";
  }
};

/// Shard `index`'s part of `total` things split over `count` shards: floor(total / count), plus one
/// for the first total mod count shards (so the parts differ by at most one and sum to `total`).
/// Preconditions: total >= 0, 0 <= index < count.
std::int64_t shard_share(std::int64_t total, std::int64_t index, std::int64_t count);

/// How the requests of one global open-loop schedule are dealt to shards.
enum class PartitionRule {
  /// Global request k goes to shard k mod N: for deterministic lists (traces, timestamped datasets,
  /// offline, constant-rate arrivals). Each request keeps its original intended time.
  kRoundRobin,
  /// Global request k goes to the shard drawn from a seeded hash of k (uniform over the N shards,
  /// independent between requests): a random thinning. Thinning a Poisson process of rate R gives
  /// N independent Poisson processes of rate R/N, whose superposition is exactly the global
  /// schedule (for gamma arrivals the superposition is still exactly the global schedule).
  kThinning
};
std::string_view to_string(PartitionRule r);

/// The seed of the thinning hash, derived from the base seed (the same on every shard).
std::uint64_t shard_seed(std::uint64_t base_seed);

/// The shard that owns request `k` (0-based, in the order of the global stream) under `rule`.
std::int64_t shard_of(PartitionRule rule, std::uint64_t seed, std::uint64_t k, std::int64_t count);

/// Parses --start-at: an RFC 3339 time ("2025-06-01T12:00:00Z", fractional seconds and a numeric
/// offset such as "+02:00" accepted; 'T' may be a space) or Unix epoch seconds ("1748779200",
/// "1748779200.5"). Throws ConfigError naming `origin` with an example.
WallTime parse_start_at(std::string_view text, std::string_view origin = "--start-at");

/// RFC 3339 in UTC with milliseconds, e.g. "2025-06-01T12:00:00.000Z".
std::string format_rfc3339(WallTime t);

/// Seconds since the Unix epoch.
double epoch_seconds(WallTime t);

}  // namespace llmload
