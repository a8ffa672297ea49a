#pragma once
// The pacer decides when each request is released: at its scheduled time (open loop) or when a
// slot frees up (closed loop). Pure logic on a given clock value; the driver calls it.

#include <cstdint>
#include <functional>
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
  std::int32_t stage = -1;    // scenario stages: 0-based stage the request belongs to (-1: none)
};

/// How long a run issues, beyond the scenario's own bound (--num-requests or --duration):
/// MLPerf-style minimums keep it issuing until both hold, and a hard maximum stops it first.
/// - min_duration: measured requests keep being released until the window (from its start)
///   has lasted this long;
/// - min_requests: ... and until this many measured requests have been released (they all
///   complete in the drain, so the run ends with at least this many measured requests);
/// - max_duration: nothing (warmup included) is released at or after run start + this, whatever
///   the bounds and minimums say.
/// Open loop decides on a request's intended time (deterministic for a seed), closed loop on the
/// time of the release. See docs/statistics.md ("Minimums").
struct RunLimits {
  std::optional<Nanos> min_duration;
  std::optional<std::int64_t> min_requests;
  std::optional<Nanos> max_duration;
};

/// The limits a pacer for `cfg` enforces itself: the minimums extend closed-loop, session and
/// generated open-loop (server, offline: min_requests only) runs; a trace, a stage plan and a
/// sharded run have their own length, so only max_duration applies (a minimum they miss is a
/// validity reason of the run, not an extension).
RunLimits run_limits(const ScenarioConfig& cfg);

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
  /// Request `index` (a Release's index) finished at `now`: frees a slot, and in a multi-turn
  /// session schedules the session's next turn. `now` is the completion time (the transport's
  /// timestamp), not the time the driver got round to it.
  virtual void on_complete(std::uint64_t index, TimePoint now) = 0;
  /// True when no request will ever be released again.
  virtual bool exhausted() const = 0;
  /// Stop releasing (graceful interruption); exhausted() becomes true.
  virtual void stop() = 0;
  /// Start of the measurement window, once known.
  virtual std::optional<TimePoint> window_start() const = 0;
  /// End of the measurement window if fixed by a duration (known once window_start is). When the
  /// minimums kept a duration-bounded run issuing past its duration, the end moves with them:
  /// the latest of window start + duration, window start + min_duration and the intended time of
  /// the last measured request released for min_requests; never past run start + max_duration.
  virtual std::optional<TimePoint> window_end() const = 0;
  /// True when max_duration stopped the releases (the run would otherwise have gone on).
  virtual bool max_duration_reached() const { return false; }
};

/// Open loop (server, offline, trace replay): releases request i at start + arrivals[i]; with
/// `max_inflight`, a due request waits for a free slot but keeps its intended time (the wait
/// shows as schedule lag and in the response-time view; vLLM's --max-concurrency with
/// --request-rate).
/// `limits`: see RunLimits. `more`, when given, continues the schedule past its end (the next
/// arrival offsets of the same process, in order) and is asked only while a minimum is unmet:
/// those arrivals are released like the others, and the first that arrives with every minimum
/// met ends the run. Without it, minimums do not extend the run.
std::unique_ptr<Pacer> make_open_loop_pacer(Schedule schedule, std::optional<std::int64_t> max_inflight,
                                            std::optional<Nanos> window_duration, WarmupSpec warmup,
                                            RunLimits limits = {}, std::function<Nanos()> more = {});

/// Closed loop (concurrency, single-stream = concurrency 1): `concurrency` requests in flight;
/// each completion releases the next with intended = completion time. Stops after `total`
/// measured requests (plus warmup) or when the window's duration has passed.
/// With `limits`, a release that the count or the duration would refuse still goes out while a
/// minimum is unmet; nothing goes out at or after max_duration.
std::unique_ptr<Pacer> make_closed_loop_pacer(std::int64_t concurrency, std::optional<std::int64_t> num_requests,
                                              std::optional<Nanos> window_duration, WarmupSpec warmup,
                                              RunLimits limits = {});

/// Scenario stages (cfg.arrivals.stages, validated). Stage i runs from S_i = the sum of the
/// durations before it to S_i + duration_i, offsets from the run's start, fixed: a late or
/// overloaded stage never shifts the next one.
/// - A rate stage releases open-loop arrivals of cfg.arrivals' process at its rate, each stage
///   with its own stream (seeded from the arrival seed and the stage index) starting at S_i;
///   arrivals fall in [S_i, S_i + duration_i). cfg.max_inflight caps what is in flight when such
///   an arrival is released (it waits, keeping its intended time; it may then be released after
///   its stage has ended and still counts for its stage).
/// - A concurrency stage N holds N requests in flight, counting any still in flight from earlier
///   stages: at S_i it releases N minus those in flight (intended S_i), then one per completion
///   while fewer than N are in flight (intended = completion time). max_inflight does not apply.
///   A slot freed but not yet released when the stage ends is dropped (closed-loop slots are
///   chances to send, not arrivals).
/// Requests in flight at a boundary continue. Nothing is released after the last stage's end
/// (except arrivals that were due before it and waited for the cap); then the run drains.
/// Warmup: the first N releases or those intended before the warmup time, as elsewhere. Window:
/// from the first measured release (or the end of a time warmup) to the end of the last stage.
/// Every Release carries its stage. cfg.max_duration cuts the plan (nothing released at or after
/// it; the window ends there); the minimums do not extend a plan.
std::unique_ptr<Pacer> make_staged_pacer(const ScenarioConfig& cfg);

/// Multi-turn sessions (cfg.turns > 1, validated). A session is `turns` requests; turn t + 1 is
/// released think_time after turn t completes, with intended = that completion + think_time
/// (never later, however late the driver is). Session starts follow the scenario:
/// - concurrency N: N sessions active at once (a session holds its slot while it thinks); when a
///   session's last turn completes, a new session starts with intended = that completion time;
///   single-stream: one session at a time.
/// - server: sessions start as the arrival process at request_rate sessions/s (with its ramp);
///   with timed arrivals (`timed_starts`, trace replay) those offsets are the session starts.
/// - offline: ceil((warmup + num_requests) / turns) sessions all start at 0.
/// Open loop honours max_inflight for every turn (a due turn waits, keeping its intended time).
/// Releases carry session (0-based, in start order) and turn (0-based); when two are due at the
/// same time a session's next turn goes before a new session.
/// Limits: num_requests counts requests (turns), not sessions. Once num_requests measured
/// requests (after warmup) have been released nothing more is released, so sessions still in
/// progress are cut short. In duration-bounded runs nothing (no new session, no next turn) is
/// released with an intended time at or after the window's end; those sessions are cut short too.
/// Warmup and window as for the other pacers (warmup counts requests, not sessions). The limits
/// of run_limits(cfg): while a minimum is unmet, turns and sessions go on being released past
/// num_requests or the window's end; nothing is released at or after max_duration.
std::unique_ptr<Pacer> make_session_pacer(const ScenarioConfig& cfg, const std::vector<Nanos>* timed_starts = nullptr);

/// The pacer for a validated scenario: stages, sessions (turns > 1), open loop (server, offline;
/// server honours max_inflight too) or closed loop, each with run_limits(cfg): a generated
/// server schedule is continued by its own arrival stream while a minimum is unmet; offline
/// releases max(num_requests, min_requests). `timed_arrivals`: the workload's own arrival
/// offsets for trace replay (cfg.timed_arrivals), used as the schedule (or as session starts).
/// A sharded cfg (cfg.shard, counts already split by shard_config) gets this shard's part: of the
/// global schedule (open loop), of each rate stage's stream, or of the session starts; see
/// shard_plan.hpp (plan_shard also says which global request each release is).
std::unique_ptr<Pacer> make_pacer(const ScenarioConfig& cfg, const std::vector<Nanos>* timed_arrivals = nullptr);

}  // namespace llmload
