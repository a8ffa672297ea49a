#pragma once
// Where a run keeps its finished requests while it runs, so that its memory stays flat however
// long it runs (issue 16's soak): the records (and, for --warmup auto, each request's output
// events) are kept in memory up to a batch, then appended in a compact binary form to an
// anonymous temporary file (std::tmpfile: removed by the system when the process ends, even on
// SIGKILL). Once the run is over, the analysis reads them back in the order they were appended.
//
// If the temporary file cannot be created or written (no space, read-only /tmp), the store keeps
// everything in memory from then on, as before, and says why (spill_error).
//
// Threading: single-threaded.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llmload/analysis/request_record.hpp"

namespace llmload {

class RecordStore {
 public:
  /// `keep_chunks`: also keep each record's output events (for a later re-accumulation).
  /// `batch`: records held in memory before a batch is appended to the file.
  explicit RecordStore(bool keep_chunks, std::size_t batch = 1024);
  ~RecordStore();
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  void append(const analysis::RequestRecord& r, std::span<const analysis::ChunkArrival> chunks);
  std::size_t size() const { return count_; }

  /// Every record, in the order appended (spilled ones read back first).
  std::vector<analysis::RequestRecord> records() const;
  /// Calls `visit(i, chunks)` for every record i in append order with its output events (empty
  /// unless keep_chunks). Reads the file again: nothing of it stays in memory.
  void for_each_chunks(const std::function<void(std::size_t, std::span<const analysis::ChunkArrival>)>& visit) const;

  /// Records written to the temporary file so far.
  std::size_t spilled() const { return spilled_; }
  /// Why the store stopped spilling (and keeps everything in memory), if it did.
  const std::optional<std::string>& spill_error() const { return spill_error_; }

 private:
  void spill();
  // Reads the file from its start; calls back for each record (and its chunks when asked).
  void read_back(const std::function<void(analysis::RequestRecord&&, std::vector<analysis::ChunkArrival>&&)>& fn,
                 bool with_chunks) const;

  bool keep_chunks_;
  std::size_t batch_;
  std::size_t count_ = 0;
  std::size_t spilled_ = 0;
  std::FILE* file_ = nullptr;
  std::optional<std::string> spill_error_;
  std::vector<analysis::RequestRecord> pending_;
  std::vector<std::vector<analysis::ChunkArrival>> pending_chunks_;
};

}  // namespace llmload
