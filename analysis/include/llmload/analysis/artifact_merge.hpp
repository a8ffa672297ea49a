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

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/hdr_log.hpp"
#include "llmload/analysis/record_range.hpp"
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
  /// requests.jsonl: its path, read a line at a time by every pass over the records (issue 20:
  /// the merge's memory does not grow with the number of requests) ...
  std::string records_file;
  /// ... or, when records_file is empty, its lines held in memory (one object per line).
  std::vector<nlohmann::json> records;
  /// The same records read once (for_each_shard_record) into a store of the caller's (`llmload
  /// merge`: a RecordStore, compact, spilled to a temporary file): when set, every pass reads
  /// them from here instead of parsing each line's JSON again.
  std::shared_ptr<const RecordSource> loaded;
  /// Whether every line of records_file names its shard ("shard"), as a worker's or a shard's
  /// run writes them: the merged requests.jsonl then copies the lines as they are.
  bool lines_name_shard = false;
  HlogFile hlog;                        // latency.hlog
};

/// One pass over a shard's requests.jsonl lines as the merge reads them (blank lines skipped; a
/// line that is not JSON or not a record: MergeError naming the shard and the line): each line's
/// record, and whether the line names its shard. For filling ShardArtifact::loaded.
void for_each_shard_record(const ShardArtifact& a,
                           const std::function<void(const RequestRecord&, bool names_shard)>& visit);

/// Every shard's records in shard order (conditions.shard.index), as the merged requests.jsonl
/// lists them, read one at a time (a line that is not JSON or not a record: MergeError naming the
/// shard and the line), from a shard's `loaded` store where it has one. The shards must outlive it.
class MergedRecords : public RecordSource {
 public:
  explicit MergedRecords(const std::vector<ShardArtifact>& shards);
  explicit MergedRecords(std::vector<const ShardArtifact*> in_order);
  /// Reads every shard once to count (and check) the records.
  std::size_t size() const override;
  std::unique_ptr<RecordCursor> open() const override;
  /// The merged requests.jsonl: each shard's lines in order, with "shard" added where missing
  /// (copied as they are from a loaded shard whose lines all name it).
  void write_jsonl(std::ostream& out) const;

 private:
  std::vector<const ShardArtifact*> shards_;
  mutable std::optional<std::size_t> size_;
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

/// One line of a requests.jsonl by those rules (the one place they are): kRecord with `out` set,
/// kBlank (skipped), or kCut (the file's last line, `unterminated`, and not JSON). Throws
/// MergeError "line N: ..." for any other line that is not a record.
enum class RecordLine { kRecord, kBlank, kCut };
RecordLine parse_record_line(std::string_view line, std::size_t line_no, bool unterminated, RequestRecord& out);

struct MergedArtifact {
  RunMetrics metrics;
  nlohmann::json result;                // the merged result.json
  std::int64_t record_count = 0;        // every shard's records (MergedRecords reads them)
  double start_epoch_s = 0;             // the common start (for the .hlog StartTime)
  std::vector<std::string> notes;       // stragglers and harmless differences, one line each
  std::string console;                  // the report: console_report() plus the shard table
};

/// Checks that the shards are the complete, consistent set of one sharded run (their result.json:
/// one shard count, each index once, none missing, the fields that must match matching); throws
/// MergeError naming the shards and the fix. Needs no records: a merge checks this before it
/// reads them.
void check_shard_set(const std::vector<ShardArtifact>& shards);

/// Merges the shards of one run (any order). Throws MergeError when they are not the complete,
/// consistent set of one sharded run (check_shard_set), or their records do not agree with it.
MergedArtifact merge_artifacts(const std::vector<ShardArtifact>& shards);

}  // namespace llmload::analysis
