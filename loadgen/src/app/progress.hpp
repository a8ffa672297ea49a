#pragma once
// What a run watches while it runs, on every tick of the driver (net::DriveOptions::on_tick):
//   - the live progress line on a terminal (requests done, current rate, in flight, errors,
//     p50/p99 TTFT so far, elapsed, ETA), redrawn in place on stderr and erased at the end;
//     when stderr is not a terminal (a CI log), the same line as a new line every
//     `log_interval` instead; nothing with --quiet;
//   - on a plain run, a warning (once) when the server is not keeping up: requests in flight and
//     TTFT both growing (the same test as the saturation watch), so a run far past capacity says
//     so while it runs;
//   - optionally, over-saturation: when both the requests in flight and the TTFT grow without
//     bound (analysis::detect_saturation over the interval series so far), the run stops
//     releasing requests early (RunController::stop_early), so a sweep point that cannot meet
//     any SLO does not waste its whole duration.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "progress_line.hpp"

namespace llmload::app {

struct MonitorOptions {
  bool progress_line = false;       // draw the live line (the caller checks for a terminal)
  std::optional<Nanos> log_interval;  // not a terminal: print the line every this often
  bool watch_saturation = false;    // stop the run early when over-saturated
  std::optional<std::int64_t> planned_requests;  // measured + warmup requests, when known (ETA)
  std::optional<Nanos> planned_duration;         // warmup + window, when the run is bounded by time (ETA)
  std::int64_t warmup_requests = 0;  // an SLO-sized run counts to its next look: these come on top
  std::optional<std::int64_t> min_requests;  // --min-requests + warmup: a time-bounded run goes on until then
  std::string label;                // e.g. "trial 2/3" or "concurrency 8"
  /// How the watch stops the run (RunController::stop_early), given the reason.
  std::function<void(const std::string&)> stop;
  /// Where the not-keeping-up warning goes (once per run) when the watch does not stop the run.
  std::function<void(const std::string&)> warn;
  /// Offsets from the run's start where the plan itself changes the load (stage starts): the
  /// watch starts over at each, so a planned rise is not taken for a server falling behind.
  std::vector<Nanos> load_changes;
};

class RunMonitor {
 public:
  RunMonitor(RunController& controller, const Clock& clock, MonitorOptions options);
  ~RunMonitor();  // erases the line

  /// The tick interval to give the driver.
  static constexpr Nanos kTick = std::chrono::milliseconds(500);
  /// Counts a finished request (RunController::on_record): the monitor keeps no records.
  void observe(const analysis::RequestRecord& r);
  void tick();
  /// Erases the progress line (before the report is printed).
  void finish();

  /// The line as it would be drawn now (without terminal control characters).
  std::string line() const;
  /// Set when the saturation watch stopped the run.
  const std::optional<std::string>& saturation() const { return saturation_; }

 private:
  void check_saturation();

  RunController& controller_;
  const Clock& clock_;
  MonitorOptions options_;
  std::int64_t done_ = 0;
  std::int64_t errors_ = 0;
  analysis::HdrHistogram ttft_;
  analysis::HdrHistogram ttfo_;  // requests that reasoned first
  RateWindow rate_;  // the current rate over the last few seconds
  // Saturation series, one value per tick.
  std::size_t next_load_change_ = 0;  // the first of options_.load_changes not yet passed
  std::vector<double> in_flight_series_;
  std::vector<double> ttft_series_;
  double tick_ttft_sum_ms_ = 0;
  std::int64_t tick_ttft_n_ = 0;
  std::optional<std::string> saturation_;
  bool warned_ = false;
  ProgressPrinter printer_;
};

}  // namespace llmload::app
