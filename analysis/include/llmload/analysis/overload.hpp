#pragma once
// Over-load of an open-loop run, judged after the run over its measurement window: the signs
// that the server did not keep up with the offered load, whatever the window's percentiles say
// (a capacity probe that shows any of them is a FAIL; docs/statistics.md "Capacity search"):
//   - the requests in flight (client side, time-averaged per interval) grow over the window;
//   - the server's own waiting queue (its /metrics series, when there is one) grows;
//   - fewer requests complete in the window than arrive in it (completions / arrivals below
//     min_completion_ratio), when the window is long enough compared with the E2E latency for
//     the pipeline's fill not to explain the difference.
// "Grows" is detect_growth (steady_state.hpp): a significant positive slope AND a clear rise
// from the first to the last quarter. Pure: no clock, no I/O.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/steady_state.hpp"

namespace llmload::analysis {

struct OverloadOptions {
  std::size_t intervals = 40;                   // the window is cut into this many intervals
  Nanos min_interval = std::chrono::milliseconds(100);  // ... each at least this long
  double alpha = 0.01;                          // slope significance (one-sided)
  double min_relative_rise = 0.25;              // last quarter >= first x (1 + this) ...
  double min_queue_rise = 2.0;                  // ... and at least this many requests more, and
                                                // more than a stationary load's in flight wanders
                                                // by chance (OverloadCheck::in_flight_needed_rise)
  double min_completion_ratio = 0.90;           // completions / arrivals below this: over-loaded ...
  double completion_window_e2e = 10;            // ... when the window is >= this x the mean E2E
};

/// One sample of the server's waiting queue: seconds from the run's start, requests waiting.
struct QueueSample {
  double t_s = 0;
  double waiting = 0;
};

struct OverloadCheck {
  bool checked = false;     // false: the window was too short or empty (then not over-loaded)
  bool overloaded = false;
  std::string reason;       // why (over-loaded), or what was checked
  double window_s = 0;
  double interval_s = 0;
  std::int64_t arrivals = 0;     // requests intended in the window
  std::int64_t completions = 0;  // requests (any outcome) done in the window
  double completion_ratio = 0;   // completions / arrivals (NaN without arrivals)
  double mean_e2e_s = 0;         // successful requests of the window (NaN without any)
  bool completion_ratio_checked = false;  // the window is >= completion_window_e2e x mean E2E
  double in_flight_needed_rise = 0;  // z(1 - alpha) x sqrt(2 x mean in flight x mean E2E / quarter
                                     // window), at least min_queue_rise
  TrendResult in_flight;
  bool server_waiting_checked = false;
  TrendResult server_waiting;
  double server_waiting_needed_rise = 0;  // the same floor over the server's waiting queue
  std::vector<double> in_flight_series;  // per interval
};

/// `records`: every request of the run (warmup included: they are in flight in the window);
/// [w0, w1]: the measurement window; `server_waiting`: the server's queue samples (may be empty).
OverloadCheck detect_overload(RecordRange records, Nanos w0, Nanos w1,
                              std::span<const QueueSample> server_waiting, const OverloadOptions& options = {});

nlohmann::json to_json(const OverloadCheck& c);

}  // namespace llmload::analysis
