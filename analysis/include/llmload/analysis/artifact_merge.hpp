#pragma once
// Merging the artifacts of a sharded run (`llmload merge`, llmload-mpi's rank 0) into one.
//
// Each shard measured on its own monotonic clock; its times are offsets from its own start, which
// every shard took at the same wall-clock --start-at. The merge never subtracts timestamps of
// different machines: it combines what each shard measured.
// - Latency histograms (latency.hlog): added exactly (HdrHistogram add, same layout), so every
//   percentile of the merged run is the one a single histogram of all requests would give.
//   Means and standard deviations are pooled exactly from each shard's count, mean and SD.
// - Counts, errors, tokens, SLO attainment and exceedances: recomputed from all shards' records
//   (requests.jsonl) with the single-run rules; the SLO verdict from the merged counts and
//   histograms.
// - Window: from the earliest shard window start to the latest end, as offsets from the common
//   start; throughput divides all shards' completions (and the output tokens each shard saw
//   arrive in its own window) by that length. Achieved send rate and the gap CV use the union of
//   the shards' send offsets (accurate to the shards' start skew, recorded per shard).
// - Conditions must agree (scenario, seeds, endpoint, model, workload, prompts, tool version,
//   definitions, shard count and start time), and the shards must be exactly 0..N-1; otherwise
//   MergeError says which field or shard and how to fix it.
// - The per-shard breakdown is kept (`shards` in result.json, a table in the report), and a
//   straggling shard (late start, late finish, a client that fell behind) is flagged.

#include <optional>
#include <stdexcept>
#include <string_view>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/run_metrics.hpp"

namespace llmload::analysis {

/// Artifacts that cannot be merged; the message names the shard (its directory), the field and
/// the fix.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One shard's artifact as read from its directory.
struct ShardArtifact {
  std::string name;                     // its directory, for messages
  nlohmann::json result;                // result.json
  std::vector<nlohmann::json> records;  // requests.jsonl, one object per line
  HlogFile hlog;                        // latency.hlog
};

/// A requests.jsonl line (record_json) back as a record: times from their ms values (to the
/// nanosecond), the error class from its name. Throws MergeError naming the missing/bad field.
RequestRecord record_from_json(const nlohmann::json& j);

/// A requests.jsonl file's records. A last line cut off mid-way (a run stopped while writing it)
/// is left out and its number kept in `cut_line`; blank lines are skipped. Throws MergeError
/// "line N: ..." for a line that is not a record.
struct RecordsFile {
  std::vector<RequestRecord> records;
  std::optional<std::size_t> cut_line;
};
RecordsFile parse_records_jsonl(std::string_view text);

struct MergedArtifact {
  RunMetrics metrics;
  nlohmann::json result;                // the merged result.json
  std::vector<nlohmann::json> records;  // every shard's records, in shard order, each with "shard"
  double start_epoch_s = 0;             // the common start (for the .hlog StartTime)
  std::vector<std::string> notes;       // stragglers and harmless differences, one line each
  std::string console;                  // the report: console_report() plus the shard table
};

/// Merges the shards of one run (any order). Throws MergeError when they are not the complete,
/// consistent set of one sharded run.
MergedArtifact merge_artifacts(const std::vector<ShardArtifact>& shards);

}  // namespace llmload::analysis
