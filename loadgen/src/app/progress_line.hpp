#pragma once
// What the progress displays of `llmload run` share (progress.cpp for one process,
// worker_progress.cpp for --workers N): the clock text, the current completion rate, and drawing
// the line on a terminal (\r, the line, erase to its end) or logging it every interval elsewhere.
//
// Threading: single-threaded (the progress timer's).

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace llmload::app {

/// mm:ss, or h:mm:ss from an hour on; "--:--" for no value (NaN, negative).
std::string clock_text(double seconds);

/// Completions per second over the last `span` ticks (the current rate, not the run's average).
class RateWindow {
 public:
  explicit RateWindow(std::size_t span = 10) : span_(span) {}
  void add(double elapsed_s, std::int64_t done);
  double rate() const;

 private:
  std::size_t span_;
  std::deque<std::pair<double, std::int64_t>> samples_;
};

/// Completions per second from their own completion times (seconds from the run's start), over
/// the `span` that ended `lag` ago. `llmload run --workers` reads the workers' completions from
/// their requests.jsonl, which reach it up to a flush (a second) late: counted as they were read,
/// the rate jumped with each flush; by their times, every completion of the span is in. Counts are
/// kept in `bucket` wide bins for the last minute only (memory does not grow with the run).
class CompletionRate {
 public:
  explicit CompletionRate(double span_s = 5, double lag_s = 1.5, double bucket_s = 0.1)
      : span_s_(span_s), lag_s_(lag_s), bucket_s_(bucket_s) {}
  void add(double t_done_s);
  /// The rate at `now_s`: over the span, or from the first completion when that is later (0 until
  /// a second, or the span if shorter, has passed since it).
  double rate(double now_s) const;

 private:
  double span_s_;
  double lag_s_;
  double bucket_s_;
  std::deque<std::pair<std::int64_t, std::int64_t>> bins_;  // (bin, completions), bins ascending
  std::optional<std::int64_t> first_bin_;                   // the first completion's
};

/// Shows a progress text: redrawn in place on a terminal (`line`), else one log line every
/// `log_interval` (none: nothing shown).
class ProgressPrinter {
 public:
  ProgressPrinter(bool line, std::optional<std::chrono::nanoseconds> log_interval)
      : line_(line), log_interval_(log_interval) {}
  ~ProgressPrinter() { finish(); }
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;
  bool shows_anything() const { return line_ || log_interval_.has_value(); }
  /// Shows `text` now (a line) or when the log interval has passed since the last log.
  void show(const std::string& text, double elapsed_s);
  /// Erases a drawn line (before the report is printed); idempotent.
  void finish();

 private:
  bool line_;
  std::optional<std::chrono::nanoseconds> log_interval_;
  bool drawn_ = false;
  double last_log_s_ = 0;
};

}  // namespace llmload::app
