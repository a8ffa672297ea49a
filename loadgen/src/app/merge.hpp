#pragma once
// `llmload merge DIR... [--output DIR]`: reads the artifacts of a sharded run's shards, merges
// them (analysis/artifact_merge.hpp), prints the merged report like `llmload run` and writes the
// merged result.json, requests.jsonl and latency.hlog.

#include <functional>
#include <string>
#include <vector>

#include "llmload/analysis/artifact_merge.hpp"

namespace llmload::app {

/// Reads the shards' directories, each requests.jsonl parsed once into a store
/// (ShardArtifact::loaded), in parallel (one thread per core at most). First every shard's
/// result.json and latency.hlog, then whether the shards are one run's complete set
/// (analysis::check_shard_set), and only then the records. Throws analysis::MergeError naming the
/// file and what is wrong: within each of the three steps, of the shards that fail it, the first
/// in `dirs` order (a shard without latency.hlog is reported before another's bad line).
std::vector<analysis::ShardArtifact> read_shard_artifacts(const std::vector<std::string>& dirs);

/// Merges the shard directories `dirs` into `output` (empty: print only; else also the report
/// files). Returns the exit code: 0; 1 when writing failed; 2 for artifacts that cannot be merged,
/// with the reason on stderr; 6 when the merged run measured nothing (no request succeeded); with
/// `fail_on_slo`, 3/4/5 for the merged run's SLO verdict FAIL/INCONCLUSIVE or its INVALIDity
/// (2 when the shards were run without --slo). `print_report`: the merged report to stdout.
/// What a caller other than `llmload merge` adds (`llmload run --workers`).
struct MergeExtras {
  /// Amends the merged result.json before anything is written (e.g. conditions.workers).
  std::function<void(nlohmann::json&)> amend;
  /// The "merged into ..." and "report written to ..." notes on stderr.
  bool notes = true;
  /// `llmload merge` without --overwrite: an --output that holds a run's result.json,
  /// requests.jsonl or latency.hlog is an error (the merge would replace another run's results).
  bool keep_existing_results = false;
};
int merge_command(const std::vector<std::string>& dirs, const std::string& output, bool print_report = true,
                  bool fail_on_slo = false, const MergeExtras& extras = {});

}  // namespace llmload::app
