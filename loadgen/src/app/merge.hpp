#pragma once
// `llmload merge DIR... [--output DIR]`: reads the artifacts of a sharded run's shards, merges
// them (analysis/artifact_merge.hpp), prints the merged report like `llmload run` and writes the
// merged result.json, requests.jsonl and latency.hlog.

#include <string>
#include <vector>

#include "llmload/analysis/artifact_merge.hpp"

namespace llmload::app {

/// Reads one shard's directory. Throws analysis::MergeError naming the file and what is wrong.
analysis::ShardArtifact read_shard_artifact(const std::string& dir);

/// Merges the shard directories `dirs` into `output` (empty: print only). Returns the exit code
/// (0; 1 when writing failed; 2 for artifacts that cannot be merged, with the reason on stderr).
/// `print_report`: the merged report to stdout.
int merge_command(const std::vector<std::string>& dirs, const std::string& output, bool print_report = true);

}  // namespace llmload::app
