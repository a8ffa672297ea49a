#pragma once
// The pacer decides when each request is released: at its scheduled time (open loop) or when a
// slot frees up (closed loop). Pure logic on a given clock value; the driver calls it.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "llmload/loadgen/schedule.hpp"

namespace llmload {

/// One released request.
struct Release {
  std::uint64_t index;   // 0-based, in release order
  TimePoint intended;    // open loop: its arrival time; closed loop: when its slot became free
  bool warmup;           // released during warmup: never in statistics
  std::int64_t session = -1;  // multi-turn: the session this request belongs to (-1: none)
  std::int64_t turn = 0;      // multi-turn: 0-based turn within the session
};

/// Contract: the driver calls next(now) until it returns nullopt, then sleeps until wake_time()
/// or until a request completes (on_complete). Releases are in index order. A late request is
/// released at once with its original intended time: never skipped, never re-based.
/// Threading: not thread-safe; one driver thread.
class Pacer {
 public:
  virtual ~Pacer() = default;
  /// Starts the run at `start`.
  virtual void begin(TimePoint start) = 0;
  /// The next request due at `now`, if any.
  virtual std::optional<Release> next(TimePoint now) = 0;
  /// When next() could next return a request without a completion happening; nullopt when
  /// only a completion (or nothing) can release more.
  virtual std::optional<TimePoint> wake_time() const = 0;
  /// A request finished at `now` (frees a slot).
  virtual void on_complete(TimePoint now) = 0;
  /// True when no request will ever be released again.
  virtual bool exhausted() const = 0;
  /// Stop releasing (graceful interruption); exhausted() becomes true.
  virtual void stop() = 0;
  /// Start of the measurement window, once known.
  virtual std::optional<TimePoint> window_start() const = 0;
  /// End of the measurement window if fixed by a duration (known once window_start is).
  virtual std::optional<TimePoint> window_end() const = 0;
};

/// Open loop (server, offline): releases request i at start + arrivals[i]; with `max_inflight`,
/// a due request waits for a free slot but keeps its intended time (the wait shows as lag).
std::unique_ptr<Pacer> make_open_loop_pacer(Schedule schedule, std::optional<std::int64_t> max_inflight,
                                            std::optional<Nanos> window_duration, WarmupSpec warmup);

/// Closed loop (concurrency, single-stream = concurrency 1): `concurrency` requests in flight;
/// each completion releases the next with intended = completion time. Stops after `total`
/// measured requests (plus warmup) or when the window's duration has passed.
std::unique_ptr<Pacer> make_closed_loop_pacer(std::int64_t concurrency, std::optional<std::int64_t> num_requests,
                                              std::optional<Nanos> window_duration, WarmupSpec warmup);

/// The pacer for a validated scenario.
std::unique_ptr<Pacer> make_pacer(const ScenarioConfig& cfg);

}  // namespace llmload
