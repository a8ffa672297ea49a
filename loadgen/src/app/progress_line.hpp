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
