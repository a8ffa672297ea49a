#pragma once
// What a run leaves on disk while it runs, so that SIGKILL, a crash or a lost machine costs at
// most the last second of what was measured:
// - requests.jsonl, streamed: each request's line is appended as it completes and the file is
//   flushed at least every second (kJournalFlushInterval). At the end the artifact keeps it as
//   it is when it is whole (every record's line written and the file closed cleanly) and no
//   record was relabeled since (--warmup auto relabels records once the run is over); otherwise
//   it replaces it with lines made again from the records. Keeping it spares making and writing
//   every line twice (a tenth of the client's CPU per short request, docs/benchmarks.md).
// - run-in-progress.json (kInProgressFile): the run's conditions and the rules that judge it,
//   written when the load starts and removed once result.json is written. Its presence beside a
//   requests.jsonl and no result.json means the run never finished; `llmload report DIR` then
//   rebuilds result.json from the two (rebuild.hpp).

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/request_record.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/shard_plan.hpp"

namespace llmload::app {

inline constexpr const char* kInProgressFile = "run-in-progress.json";
inline constexpr std::chrono::seconds kJournalFlushInterval{1};

/// One requests.jsonl line (without the newline): record_line, with the shard and the global
/// index for a shard of a sharded run.
std::string request_line(const analysis::RequestRecord& r, const ScenarioConfig& local, const ShardPlan& plan);

class RunJournal {
 public:
  using LineFn = std::function<std::string(const analysis::RequestRecord&)>;

  /// An empty `dir` (no --output): a journal that writes nothing. Otherwise writes
  /// run-in-progress.json (atomically) and opens requests.jsonl for the lines. A failure to
  /// write either is a warning (the run goes on; the artifact is written at the end as always).
  RunJournal(std::string dir, const nlohmann::json& in_progress, LineFn line, bool quiet);
  ~RunJournal();
  RunJournal(const RunJournal&) = delete;
  RunJournal& operator=(const RunJournal&) = delete;

  /// Appends the record's line; flushes when the last flush is kJournalFlushInterval old.
  void append(const analysis::RequestRecord& r);
  /// Flushes when due (called from the driver's tick, so a quiet second is flushed too).
  void flush_if_due();
  /// Flushes and closes requests.jsonl: the artifact is about to replace it.
  void close();
  /// result.json is written: removes run-in-progress.json.
  void finish();

  /// Lines appended so far.
  std::uint64_t lines() const { return lines_; }
  /// Whether requests.jsonl holds exactly `records` lines, all written and flushed, and is
  /// closed (false after any write failure, and before close()).
  bool whole(std::uint64_t records) const { return closed_ && !failed_ && lines_ == records; }

 private:
  void flush();
  void fail(int err);

  std::string dir_;
  LineFn line_;
  bool quiet_ = false;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  bool closed_ = false;
  std::uint64_t lines_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace llmload::app
