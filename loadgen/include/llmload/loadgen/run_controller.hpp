#pragma once
// The run controller: owns the phases of one run. It releases requests through the pacer,
// starts them on the transport, tracks them, and collects records and metrics.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "llmload/analysis/run_metrics.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload {

/// Threading: single-threaded (the driver thread); transport callbacks arrive on it.
/// Usage: begin(); then loop { poll(); wait until wake_time() or a completion } until finished().
class RunController {
 public:
  RunController(const ScenarioConfig& cfg, const Clock& clock, Pacer& pacer, Transport& transport,
                const RequestBuilder& builder);
  ~RunController();

  void begin();
  /// Releases and starts the requests due now, at most `max_starts` of them; returns true when
  /// it stopped at that bound (more may be due: poll again after pending I/O).
  bool poll(std::size_t max_starts = static_cast<std::size_t>(-1));
  std::optional<TimePoint> wake_time() const { return pacer_.wake_time(); }
  /// True once the pacer is exhausted and nothing is in flight.
  bool finished() const;
  std::size_t in_flight() const { return trackers_.size(); }
  std::size_t max_in_flight() const { return max_in_flight_; }

  /// Stops releasing new requests (in-flight ones continue). Marks the run interrupted.
  void interrupt();
  /// Aborts everything in flight (second signal).
  void abort();
  bool interrupted() const { return interrupted_; }

  /// Called after every completion (the driver re-polls and re-arms its timer).
  std::function<void()> on_progress;

  TimePoint start_time() const { return start_; }
  const std::vector<analysis::RequestRecord>& records() const { return records_; }
  /// The measurement window (valid once finished()).
  analysis::Window window() const;
  analysis::RunMetrics metrics() const;

 private:
  class Slot;
  void complete(std::uint64_t index, TimePoint t);

  const ScenarioConfig& cfg_;
  const Clock& clock_;
  Pacer& pacer_;
  Transport& transport_;
  const RequestBuilder& builder_;
  TimePoint start_{};
  bool interrupted_ = false;
  std::size_t max_in_flight_ = 0;
  std::map<std::uint64_t, std::unique_ptr<Slot>> trackers_;
  std::vector<std::unique_ptr<Slot>> graveyard_;  // completed slots, destroyed at the next poll
  std::optional<TimePoint> last_event_;
  std::vector<analysis::RequestRecord> records_;
  analysis::MetricsAccumulator acc_;
  std::optional<TimePoint> last_measured_done_;

  // Multi-turn sessions in progress: their completed turns (dropped after the last turn).
  struct SessionTurn {
    std::string user;
    std::string assistant;
    std::int64_t user_tokens = 0;
    std::int64_t assistant_tokens = 0;
  };
  struct Conversation {
    std::vector<SessionTurn> turns;
    std::vector<Turn> history;  // scratch for building the next request
  };
  std::map<std::int64_t, Conversation> sessions_;
  const std::vector<Turn> no_history_;
};

}  // namespace llmload
