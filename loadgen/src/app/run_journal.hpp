#pragma once
// What a run leaves on disk while it runs, so that SIGKILL, a crash or a lost machine costs at
// most the last second of what was measured:
// - requests.jsonl, streamed: each request's line is appended as it completes and the file is
//   written at least every second (kJournalFlushInterval), from a thread of its own
//   (BackgroundAppender): the event loop waits for the disk only when the disk falls 16 MiB
//   behind (waits(); the run warns). At the end the artifact keeps it as it is when it is whole
//   (every record's line written and the file closed cleanly) and no record was relabeled since
//   (--warmup auto relabels records once the run is over); otherwise it replaces it with lines
//   made again from the records. Keeping it spares making and writing
//   every line twice (a tenth of the client's CPU per short request, docs/benchmarks.md).
// - run-in-progress.json (kInProgressFile): the run's conditions and the rules that judge it,
//   written when the load starts and removed once result.json is written. Its presence beside a
//   requests.jsonl and no result.json means the run never finished; `llmload report DIR` then
//   rebuilds result.json from the two (rebuild.hpp).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/request_record.hpp"
#include "llmload/loadgen/background_appender.hpp"
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
  /// `max_pending`: how far the disk may fall behind before append() waits for it (tests make it
  /// small; the run uses the appender's default, 16 MiB).
  RunJournal(std::string dir, const nlohmann::json& in_progress, LineFn line,
             std::size_t max_pending = BackgroundAppender::kDefaultMaxPending);
  ~RunJournal();
  RunJournal(const RunJournal&) = delete;
  RunJournal& operator=(const RunJournal&) = delete;

  /// Queues the record's line for the writer thread (it waits only if 16 MiB are queued).
  void append(const analysis::RequestRecord& r);
  /// Says once that requests.jsonl could not be written (called from the driver's tick; the
  /// writer thread writes by itself at least every kJournalFlushInterval).
  void tick();
  /// Writes what is queued and closes requests.jsonl. If an append had to wait for the disk, says
  /// so once (even when quiet: a warning): how often, and that result.json's schedule lag shows whether any
  /// request went out late.
  void close();
  /// result.json is written: removes run-in-progress.json.
  void finish();

  /// Lines appended so far.
  std::uint64_t lines() const { return lines_; }
  /// Whether requests.jsonl holds exactly `records` lines, all written, and is closed (false
  /// after any write failure, and before close()).
  bool whole(std::uint64_t records) const { return closed_ && !failed_ && lines_ == records; }
  /// How many times an append waited for the disk (the queue was full).
  std::uint64_t waits() const { return waits_; }

 private:
  void fail(int err);

  std::string dir_;
  LineFn line_;
  std::size_t max_pending_;
  std::unique_ptr<BackgroundAppender> file_;
  bool failed_ = false;
  bool warned_ = false;
  bool closed_ = false;
  std::uint64_t lines_ = 0;
  std::uint64_t waits_ = 0;
};

}  // namespace llmload::app
