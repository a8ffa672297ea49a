#pragma once
// A requests.jsonl read a record at a time (issue 20, "flat memory"): the report of a run of any
// length reads its requests without holding them. The constructor reads the file once, checking
// every line by the rules of parse_records_jsonl (artifact_merge.hpp: blank lines skipped, a last
// line cut off mid-way left out and named, any other line that is not a record a MergeError
// "line N: ..."), and counts the records; each pass (open()) reads the file again, a line at a
// time, and yields those records (no more: a file that grew since gives every pass the same).
// Memory: one line and one record, whatever the file's length.
//
// Given a RecordKeeper factory, the constructor's read also keeps each record there, and every
// pass reads the keeper instead of the file: the JSON is parsed once (issue 20: `llmload report`
// of 100,000 records parsed them four times), and a file changed after that first read is not
// noticed. A keeper that could not keep them as it should (problem(): e.g. no temporary file) is
// dropped, and each pass reads the file again, so memory stays flat either way.
//
// Threading: passes may run one after another or nested, on one thread.

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "llmload/analysis/record_range.hpp"

namespace llmload::analysis {

/// A requests.jsonl that cannot be opened or read, or that changed between two passes: bad input
/// (the report names the file), not an internal error.
class RecordFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class JsonlRecordSource : public RecordSource {
 public:
  /// Throws MergeError "line N: ..." (a line that is not a record) or RecordFileError "PATH:
  /// cannot be read (...)" (a file that cannot be opened or read). A pass throws RecordFileError
  /// naming the file when it changed under it or can no longer be read (without a keeper), or when
  /// the keeper's records cannot be read back.
  explicit JsonlRecordSource(std::string path, const RecordKeeperFactory& keep = {});
  std::size_t size() const override { return count_; }
  std::unique_ptr<RecordCursor> open() const override;
  /// The number of the last line when it was cut off (left out), as RecordsFile::cut_line.
  const std::optional<std::size_t>& cut_line() const { return cut_line_; }

 private:
  std::string path_;
  std::size_t count_ = 0;
  std::optional<std::size_t> cut_line_;
  std::unique_ptr<RecordKeeper> kept_;  // null: each pass reads the file
};

}  // namespace llmload::analysis
