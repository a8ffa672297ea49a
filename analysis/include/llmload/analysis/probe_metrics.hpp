#pragma once
// The probe stream's results (--probe-rate; docs/metrics.md "Probe stream"): single small requests
// sent beside the load at their own seeded schedule, summarized apart from it, so they show what
// the load does to the latency of an unrelated user. Never in the run's own metrics.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/distribution.hpp"
#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// What the probes measured: those whose intended time fell in the run's measurement window
/// (`measured`), with latencies of the successful ones (from t_send, as the run's own).
struct ProbeSummary {
  std::int64_t sent = 0;      // every probe sent (the window's and any outside it)
  std::int64_t measured = 0;  // intended time in [window start, window end]
  std::int64_t completed = 0;
  std::int64_t failed = 0;         // measured probes that failed (stopped_early ones are not failures)
  std::int64_t stopped_early = 0;  // canceled by the run's early stop or its --max-duration
  std::map<std::string, std::int64_t> errors_by_class;
  DistributionSummary ttft, tpot, itl, e2e;
};

/// The probes of a run as they complete. Keeps each probe's record and output events (a probe
/// stream is light: a few per second at most), so that the window, known only after the run
/// (--warmup auto), selects them at the end.
class ProbeAccumulator {
 public:
  void add(const RequestRecord& r, std::span<const ChunkArrival> chunks);
  /// The probes whose t_intended is in [start, end] (offsets from the run's start).
  ProbeSummary summarize(Nanos start, Nanos end) const;
  RecordRange records() const { return records_; }

 private:
  std::vector<RequestRecord> records_;
  std::vector<std::vector<ChunkArrival>> chunks_;
};

/// The same summary from records alone (no output events: ITL is left empty), every record
/// counted: the unloaded reference probes sent before the load.
ProbeSummary summarize_probe_records(RecordRange records);

/// result.json `probe` (without the settings, which the caller adds): counts, errors by class and
/// the TTFT, TPOT, ITL and E2E distributions (count, mean, p50, p90, p99 in ms; null when empty).
nlohmann::json probe_json(const ProbeSummary& s);

/// The console's probe lines from result.json's `probe` section ("" when it is null or absent).
std::string probe_console(const nlohmann::json& probe);

}  // namespace llmload::analysis
