#pragma once
// The run controller: owns the phases of one run. It releases requests through the pacer,
// starts them on the transport, tracks them, and collects records and metrics.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmload/analysis/grading.hpp"
#include "llmload/analysis/run_metrics.hpp"
#include "llmload/analysis/sequential_slo.hpp"
#include "llmload/loadgen/http_trace.hpp"
#include "llmload/loadgen/model_mix.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/probe_stream.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/loadgen/structured_request.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload::tokenizer {
class Tokenizer;
}

namespace llmload {

/// Threading: single-threaded (the driver thread); transport callbacks arrive on it.
/// Usage: begin(); then loop { poll(); wait until wake_time() or a completion } until finished().
struct ShardPlan;

class RunController {
 public:
  RunController(const ScenarioConfig& cfg, const Clock& clock, Pacer& pacer, Transport& transport,
                const RequestBuilder& builder);
  ~RunController();

  void begin();
  /// Releases and starts the requests due now, at most `max_starts` of them; returns true when
  /// it stopped at that bound (more may be due: poll again after pending I/O).
  bool poll(std::size_t max_starts = static_cast<std::size_t>(-1));
  /// The next scheduled release or probe (nullopt: only a completion can release more).
  std::optional<TimePoint> wake_time() const;
  /// True once the pacer is exhausted and nothing is in flight.
  bool finished() const;
  std::size_t in_flight() const { return trackers_.size(); }
  std::size_t max_in_flight() const { return max_in_flight_; }

  /// Stops releasing new requests (in-flight ones continue). Marks the run interrupted.
  void interrupt();
  /// Aborts everything in flight (a second signal, or the drain after the first ran out): the
  /// requests canceled so are the client's decision (outcome stopped_early), not failures.
  void abort();
  bool interrupted() const { return interrupted_; }
  /// Stops releasing new requests, like interrupt(), for a reason found while it ran (e.g. a
  /// sweep point found over-loaded): not an interruption. In-flight requests finish; the window
  /// ends where issuing stopped (the drain after it is not in throughput). The first reason is
  /// kept; the metrics carry it (`stopped_early`).
  void stop_early(std::string reason);
  /// stop_early(reason), and what is in flight is canceled at once (each request's outcome is
  /// stopped_early, not a failure): the over-saturation watch, the hard --max-duration bound.
  void stop_now(std::string reason);
  /// The hard --max-duration bound has passed with requests in flight: stop_now, and the run
  /// counts as cut there (max_duration_reached).
  void cut_at_max_duration();
  /// True when --max-duration stopped the releases or cut what was in flight.
  bool max_duration_reached() const;
  const std::optional<std::string>& stopped_early() const { return stopped_early_; }
  /// An SLO-sized run (cfg.sequential): its looks and whether its verdict became conclusive (the
  /// run then stopped issuing and drained, like a run that reached its --num-requests); else null.
  const analysis::SequentialSlo* sequential() const { return sequential_.get(); }

  /// Called after every completion (the driver re-polls and re-arms its timer).
  std::function<void()> on_progress;
  /// Called with each finished request's record as it completes, before on_progress (the run's
  /// journal streams it to requests.jsonl). Its warmup/in_window flags are as released: --warmup
  /// auto relabels records only once the run has finished.
  std::function<void(const analysis::RequestRecord&)> on_record;
  /// --trace-http: the first requests' exchanges go to this log (it outlives the run).
  void set_http_trace(HttpTraceLog* log) { http_trace_ = log; }
  /// --tokenizer: the generated text is kept while a request runs and counted with it: n_out of
  /// a response without usage, and a client count beside the server's where there is usage.
  void set_tokenizer(const tokenizer::Tokenizer* t) { tokenizer_ = t; }
  /// A shard's plan: its local request k is the whole run's request plan->global(k), whose
  /// workload item (and, outside sessions, model and tools) it gets and whose item its record
  /// names. Unset: the identity. The plan must outlive the controller.
  void set_shard_plan(const ShardPlan* plan) { shard_plan_ = plan; }
  /// --probe-rate: probes go out beside the load during its measurement window, each on its own
  /// connection slot (never one of the load's), and complete into `probes`, never into the run's
  /// records, metrics or on_record (docs/metrics.md "Probe stream"). Set before begin().
  void set_probe_stream(ProbeStream* probes) { probes_ = probes; }

  TimePoint start_time() const { return start_; }
  /// Every request's record, in completion order. With --warmup auto, once finished() the
  /// records before the detected steady state are marked warmup (and out of the window).
  /// The records are kept in a RecordStore, not in memory (issue 20): each pass over the range
  /// reads them back one at a time. Read them once the run is over, or follow them as they
  /// complete with on_record.
  analysis::RecordRange records() const;
  /// Whether records() reads any record other than as on_record saw it (--warmup auto's cut
  /// relabels those before the steady state once the run is over).
  bool records_relabeled() const;
  /// Why the records could not be kept out of memory, if so (a warning; the run is unaffected).
  std::optional<std::string> record_spill_error() const { return store_.spill_error(); }
  /// The records' temporary file's directory when it is held in memory (tmpfs), if so.
  const std::optional<std::string>& record_spill_memory_dir() const { return store_.spill_memory_dir(); }
  /// The measurement window (valid once finished()). --warmup auto: see docs/statistics.md.
  analysis::Window window() const;
  /// The run's metrics and validity verdict (valid once finished()). `client_core_share`: the
  /// client's CPU share while the load ran, when measured (it words the schedule-lag remedy).
  analysis::RunMetrics metrics(std::optional<double> client_core_share = std::nullopt) const;
  /// The validity checks the run is judged by (the run's journal records them for a rebuild).
  analysis::ValidityOptions validity_options() const;
  /// The view the run's SLO verdict is judged in: response for open-loop load, else service.
  analysis::LatencyView verdict_view() const;

 private:
  class Slot;
  void complete(std::uint64_t index, TimePoint t);
  // The probe stream: starts the probes due by `now` while the load runs, and takes one back.
  void start_due_probes(TimePoint now);
  void complete_probe(std::uint64_t index);
  // A request canceled because the run was stopped early or aborted: outcome stopped_early.
  void classify_client_cancel(analysis::RequestRecord& rec) const;
  // --tokenizer: counts the generated text (and, without usage, returns the output events each
  // weighed by its own text's tokens; empty when the tracker's events stand as they are).
  std::vector<analysis::ChunkArrival> count_with_tokenizer(analysis::RequestRecord& rec,
                                                           const RequestTracker& tracker) const;
  // Graded rows (issue 18): the record carries the row's grader, subset and reference from the
  // release; at completion the output is graded and, where needed, kept (consistency,
  // --save-outputs).
  void note_grading(analysis::RequestRecord& rec, const WorkItem& item) const;
  void grade_and_keep_output(analysis::RequestRecord& rec, const RequestTracker& tracker, std::int64_t ordinal) const;
  /// Tool calls and structured output: the verdict and the calls returned, into the record.
  void judge_structured_output(analysis::RequestRecord& rec, const RequestTracker& tracker,
                               const StructuredSpec& spec) const;
  // The window as the pacer and the run's bounds give it, before any auto warmup.
  analysis::Window planned_window() const;
  // --warmup auto, once finished(): detects the steady state, relabels the records before it and
  // recomputes the latency histograms (done once; the results are cached).
  void settle() const;

  const ScenarioConfig& cfg_;
  const Clock& clock_;
  bool cut_at_max_duration_ = false;
  Pacer& pacer_;
  Transport& transport_;
  const RequestBuilder& builder_;
  std::optional<ModelMix> models_;  // --model a,b,c: each request's model
  std::optional<StructuredMix> structured_;  // --tools/--json-schema: which requests carry them
  const Secrets secrets_;  // a server may echo them back in an error
  TimePoint start_{};
  bool interrupted_ = false;
  bool aborted_ = false;
  std::optional<std::string> stopped_early_;
  std::optional<TimePoint> stopped_at_;  // when stop_early() stopped the releases
  std::unique_ptr<analysis::SequentialSlo> sequential_;
  std::int64_t measured_released_ = 0;  // measured requests released so far (their ordinals)
  std::size_t max_in_flight_ = 0;
  std::map<std::uint64_t, std::unique_ptr<Slot>> trackers_;
  std::vector<std::unique_ptr<Slot>> graveyard_;  // completed slots, destroyed at the next poll
  std::optional<TimePoint> last_event_;
  // The finished requests as they complete (with their output events for --warmup auto), read
  // back by each analysis pass; settle() sets its warmup cut (auto warmup).
  mutable RecordStore store_;  // mutable: settle() sets its warmup cut
  HttpTraceLog* http_trace_ = nullptr;
  ProbeStream* probes_ = nullptr;
  std::map<std::uint64_t, std::unique_ptr<Slot>> probe_slots_;  // probes in flight
  const tokenizer::Tokenizer* tokenizer_ = nullptr;
  const ShardPlan* shard_plan_ = nullptr;
  mutable std::map<std::string, analysis::GraderSpec> graders_;  // parsed once per grader name
  analysis::MetricsAccumulator acc_;
  std::optional<TimePoint> last_measured_done_;
  std::optional<Nanos> last_measured_intended_;  // offset from start_
  // --warmup auto: the settled window and accumulator (settle() re-accumulates the output events
  // kept in store_).
  mutable bool settled_ = false;
  mutable std::optional<analysis::Window> auto_window_;
  mutable std::unique_ptr<analysis::MetricsAccumulator> auto_acc_;

  // Multi-turn sessions in progress: their completed turns (dropped after the last turn).
  struct SessionTurn {
    Turn turn;
    std::int64_t user_tokens = 0;  // the new input's tokens (a prompt, or tool results)
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
