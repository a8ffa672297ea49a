#pragma once
// The parent's progress line for `llmload run --workers N` (workers.hpp): the workers' completed
// requests summed from their requests.jsonl files, which each worker appends to as it goes
// (flushed at least every second, run_journal.hpp). Only the bytes added since the last look are
// read, so a tick costs in proportion to the requests completed since.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "progress_line.hpp"

namespace llmload::app {

struct WorkerProgressOptions {
  bool line = false;  // a terminal: redraw one line in place
  std::optional<std::chrono::seconds> log_interval;  // not a terminal: a line of its own this often
  std::optional<std::int64_t> planned_requests;      // warmup included
  std::optional<double> planned_duration_s;          // warmup included
  int workers = 1;
};

class WorkerProgress {
 public:
  WorkerProgress(std::vector<std::string> journals, WorkerProgressOptions options);
  ~WorkerProgress();
  WorkerProgress(const WorkerProgress&) = delete;
  WorkerProgress& operator=(const WorkerProgress&) = delete;

  /// Marks the workers' common start (elapsed time and the completions' times count from it).
  void start(std::chrono::steady_clock::time_point common_start);
  /// Reads what the workers appended and prints the line when due.
  void tick();
  /// Clears a drawn line.
  void finish();

 private:
  void read_new(double elapsed);
  std::string text(double elapsed) const;

  std::vector<std::string> journals_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::string> partial_;  // an unfinished last line of each file
  WorkerProgressOptions options_;
  std::optional<std::chrono::steady_clock::time_point> start_;
  std::int64_t done_ = 0;
  std::int64_t errors_ = 0;
  ProgressPrinter printer_;
  CompletionRate rate_;  // by the completions' own times (t_done_ms): a line is read up to a flush late
};

}  // namespace llmload::app
