#pragma once
// Where a run keeps its finished requests while it runs, so that its memory stays flat however
// long it runs (issue 16's soak): the records (and, for --warmup auto, each request's output
// events) are kept in memory up to a batch, then appended in a compact binary form to an
// anonymous temporary file (removed by the system when the process ends, even on SIGKILL), in
// $TMPDIR or else a directory on disk (common/temp_file.hpp). Once the run is over, the analysis
// reads them back in the order they were appended, one at a time (issue 20): the store is an
// analysis::RecordSource, and every analysis pass
// (a range-for over RecordRange(store)) reads the file again, so memory does not grow with the run.
//
// The file is written from a thread of its own (BackgroundAppender): the event loop that appends
// a record never waits for the disk. If the temporary file cannot be created, the store keeps
// every record in memory from then on and says why (spill_error). If a write to it fails (no
// space), the bytes not written stay in memory in the same compact form and read back as if they
// had been written: nothing is lost, and spill_error says why memory grows.
//
// Threading: one thread (the writer thread is the appender's own).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/loadgen/background_appender.hpp"

namespace llmload {

class RecordStore : public analysis::RecordKeeper {
 public:
  /// `keep_chunks`: also keep each record's output events (for a later re-accumulation).
  /// `batch`: records held in memory before a batch is appended to the file.
  /// `spill_fd`: the file to spill to, taken by the store (tests: /dev/full); -1: an anonymous
  /// temporary file made at the first spill.
  explicit RecordStore(bool keep_chunks, std::size_t batch = 1024, int spill_fd = -1);
  ~RecordStore() override;
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  void append(const analysis::RequestRecord& r, std::span<const analysis::ChunkArrival> chunks);
  /// A record without its output events (analysis::RecordKeeper: a requests.jsonl kept once parsed).
  void keep(const analysis::RequestRecord& r) override { append(r, {}); }
  /// The appending is over (a store filled once, then only read: a report's, a merge's shard):
  /// the spill file's writer thread is stopped (BackgroundAppender::finish), the file kept for
  /// the passes. A later append still works (its spilled bytes are then kept in memory).
  void finish_appending();
  void kept_all() override { finish_appending(); }
  std::optional<std::string> problem() const override { return spill_error(); }
  /// Whether the spill file's writer thread runs (from the first spill until finish_appending).
  bool spill_writer_running() const;
  std::size_t size() const override { return count_; }

  /// A pass over every record in append order (spilled ones read back first), one at a time;
  /// several passes may be open at once.
  std::unique_ptr<analysis::RecordCursor> open() const override;
  /// Every record, in memory (small runs and tests; the analysis reads RecordRange(store)).
  std::vector<analysis::RequestRecord> records() const;
  /// Calls `visit(i, record, chunks)` for every record i in append order with its output events
  /// (empty unless keep_chunks). Reads the file again: nothing of it stays in memory.
  void for_each_chunks(const std::function<void(std::size_t, const analysis::RequestRecord&,
                                                std::span<const analysis::ChunkArrival>)>& visit) const;
  /// --warmup auto's cut: from now on every record intended before `cut` reads back as warmup
  /// (out of the window), as analysis::mark_warmup_before would have marked it.
  void mark_warmup_before(analysis::Nanos cut) { warmup_cut_ = cut; }
  /// Whether a record may read back other than as it was appended (a warmup cut was set).
  bool relabeled() const { return warmup_cut_.has_value(); }

  /// Records handed to the temporary file so far (written, being written, or kept in memory
  /// after a failed write).
  std::size_t spilled() const { return spilled_; }
  /// Why records are kept in memory (no temporary file, or a write to it failed), if they are.
  std::optional<std::string> spill_error() const;
  /// The temporary file's directory when what is written there is held in memory (a tmpfs that
  /// $TMPDIR names, or a /tmp in memory with no /var/tmp on disk); nullopt on disk or no file yet.
  const std::optional<std::string>& spill_memory_dir() const { return memory_dir_; }

 private:
  class Cursor;
  void spill();
  void apply_cut(analysis::RequestRecord& r) const;

  bool keep_chunks_;
  std::size_t batch_;
  std::size_t count_ = 0;
  std::size_t spilled_ = 0;
  std::unique_ptr<BackgroundAppender> file_;
  int spill_fd_ = -1;
  std::optional<std::string> create_error_;
  std::optional<std::string> memory_dir_;
  std::optional<analysis::Nanos> warmup_cut_;
  std::vector<analysis::RequestRecord> pending_;
  std::vector<std::vector<analysis::ChunkArrival>> pending_chunks_;
};

/// Stores (without output events) for the records of each requests.jsonl a report reads, so that
/// its passes do not parse the JSON again (analysis::HtmlReportOptions::keep_records).
analysis::RecordKeeperFactory compact_record_keeper();

}  // namespace llmload
