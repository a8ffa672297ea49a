#pragma once
// The probe stream (--probe-rate) across runs: each trial's probe numbers, their medians over
// trials, the sweep's probe table (a quiet user's latency as the load rises) and a sharded run's
// merged probe section (docs/metrics.md "Probe stream").

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/artifact_merge.hpp"

namespace llmload::app {

/// A run's probe numbers from its result.json (its `probe` section): measured, failed, p50 and
/// p99 TTFT, the unloaded reference's p50 TTFT (ms). Null when the run had no probe stream.
nlohmann::json probe_trial_entry(const nlohmann::json& result);

/// The probe numbers of the trials of one load, and their medians.
class ProbeColumn {
 public:
  /// One trial's probe_trial_entry (null: nothing).
  void add(const nlohmann::json& entry);
  bool empty() const { return ttft_p50_ms_.empty(); }
  /// {"trials", "measured", "failed", "ttft_p50_ms", "ttft_p99_ms", "baseline_ttft_p50_ms",
  /// "ttft_p50_vs_baseline"}: medians across trials (counts summed); null when empty.
  nlohmann::json to_json() const;

 private:
  std::vector<double> ttft_p50_ms_, ttft_p99_ms_, baseline_ttft_p50_ms_;
  std::int64_t measured_ = 0, failed_ = 0, trials_ = 0;
};

/// The trials artifact's `probe`: the medians across trials of each trial's probe numbers (each
/// trial's own section is in its result.json); null when no trial had probes.
nlohmann::json probe_trials_json(const std::vector<nlohmann::json>& entries);

/// The sweep's probe table, one row per load (its label and column), with the growth of the p50
/// TTFT over the unloaded reference and over the lowest load; "" when no load had probes.
std::string probe_sweep_table(const std::vector<std::pair<std::string, const ProbeColumn*>>& rows);

/// `llmload merge`: the probe stream is shard 0's (at the whole rate), so the merged run's probe
/// section is shard 0's; adds the probe lines to the merged console. Returns shard 0's directory
/// when it has probes ("" otherwise), for copy_probes_file. `dirs[i]` is shards[i]'s directory.
std::string merge_probe_section(analysis::MergedArtifact& merged, const std::vector<analysis::ShardArtifact>& shards,
                                const std::vector<std::string>& dirs);
/// Copies `from`/probes.jsonl into `to` (nothing when there is none); false when that failed.
bool copy_probes_file(const std::string& from, const std::string& to);

}  // namespace llmload::app
