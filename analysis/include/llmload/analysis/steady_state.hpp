#pragma once
// Where a run's warmup ends (MSER-5 truncation over per-interval series) and whether the
// system was over-loaded (queue and latency growing without bound). Pure; formulas, thresholds
// and limits in docs/statistics.md.

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// MSER truncation of one series.
struct SteadyStateResult {
  bool found = false;            // a truncation point strictly inside the search range exists
  std::size_t truncation = 0;    // intervals to discard from the start (original interval units)
  std::size_t truncation_batches = 0;  // d*: batches deleted
  std::size_t batches = 0;       // k: batches with data (all-NaN batches are skipped)
  std::size_t batch_size = 5;
  std::size_t search_limit = 0;  // floor(k / 2): the largest d searched
  double statistic = 0;          // MSER(d*); NaN without batches
  std::string reason;            // how the truncation was chosen, or why no steady state
};

/// MSER-m (White 1997; Franklin & White 2008) over an interval series (one value per interval,
/// e.g. per-second throughput; NaN = the interval had no samples). The series is cut into
/// non-overlapping batches of `batch_size` consecutive intervals (a trailing partial batch is
/// ignored); a batch's value Z is the mean of its finite values, and a batch without any is
/// dropped. With k batches, for d = 0..floor(k/2):
///   MSER(d) = 1/(k - d)^2 * sum_{i > d} (Z_i - mean_{i > d} Z)^2,
/// d* = the smallest argmin. truncation = the end (in intervals) of the d*-th batch, i.e. d* x
/// batch_size without dropped batches (0 when d* = 0). found = false when k < 10 ("series too
/// short") or d* = floor(k/2) ("no steady state detected": the minimum is at the search limit).
/// Throws std::invalid_argument for batch_size 0.
SteadyStateResult mser(std::span<const double> series, std::size_t batch_size);
inline SteadyStateResult mser5(std::span<const double> series) { return mser(series, 5); }

struct NamedSeries {
  std::string name;            // e.g. "throughput", "ttft_p50", "in_flight"
  std::vector<double> values;  // one value per interval, all series on the same intervals
};

struct SteadyStateSummary {
  bool found = false;                    // every series has a steady state
  std::size_t truncation = 0;            // the latest truncation over the series that found one
  std::string deciding_series;           // the series whose truncation is the latest (or the first that found none)
  std::vector<std::pair<std::string, SteadyStateResult>> per_series;
  std::string reason;
};

/// mser5 over each series; the warmup ends at the latest truncation of all (each series must
/// be in steady state after it). If any series finds no steady state, found = false and the
/// reason names it; truncation is still the latest of those that found one. No series: not found.
SteadyStateSummary detect_steady_state(const std::vector<NamedSeries>& series);

/// --warmup auto over one run's requests (docs/statistics.md, "Warmup auto and the drain").
struct WarmupDetection {
  Nanos interval{0};           // width of one interval
  Nanos span_end{0};           // the analysed span is [0, span_end): the run up to the end of issuing
  std::size_t intervals = 0;   // whole intervals in the span
  /// The per-interval series, in this order: "throughput" (successful completions per second,
  /// by t_done), "ttft" (median TTFT in ms of the successful requests sent in the interval, NaN
  /// without one), "in_flight" (time-averaged requests between t_send and t_done).
  std::vector<NamedSeries> series;
  SteadyStateSummary summary;  // detect_steady_state over `series`
  bool found = false;          // summary.found: a steady state exists
  Nanos start{0};              // where it starts: truncation x interval (0 when not found)
};

/// The interval width for a span: span / 200 rounded down to whole milliseconds, at least 10 ms
/// (so runs from 2 s on get 200 intervals, 40 MSER-5 batches; below 0.5 s there are fewer than
/// the 50 intervals MSER-5 needs, and no steady state is found).
Nanos warmup_interval(Nanos span);

/// Builds the series over [0, span_end) from `records` (all of the run's requests; records
/// without t_send are skipped, an unfinished request counts as in flight to span_end) and runs
/// detect_steady_state on them. Not found: start = 0 (keep the whole run).
WarmupDetection detect_warmup(RecordRange records, Nanos span_end);

/// --warmup auto's cut: every record intended before `cut` becomes warmup (out of the window).
inline void mark_warmup_before(std::span<RequestRecord> records, Nanos cut) {
  for (auto& r : records) {
    if (r.warmup || r.t_intended >= cut) continue;
    r.warmup = true;
    r.in_window = false;
  }
}

/// Growth test of one series.
struct TrendResult {
  std::size_t points = 0;       // finite values used
  double slope = 0;             // least-squares slope per interval
  double slope_t = 0;           // slope / its standard error
  double p_value = 1;           // one-sided P[slope this large | no trend]
  double start_level = 0;       // mean of the first quarter of the finite values
  double end_level = 0;         // mean of the last quarter
  bool growing = false;
  std::string reason;
};

struct SaturationOptions {
  double alpha = 0.01;               // one-sided significance of the positive slope
  double min_relative_rise = 0.25;   // end_level - start_level >= this x |start_level| ...
  double min_queue_rise = 1.0;       // ... and, for the queue (a count of requests), >= this
  std::size_t min_points = 10;       // fewer finite points: cannot tell (not saturated)
};

struct SaturationResult {
  bool saturated = false;  // both the queue and TTFT grow
  TrendResult queue;
  TrendResult ttft;
  std::string reason;
};

/// Over-load ("growth without bound") over the observed, post-warmup intervals (the caller
/// passes only those): saturated iff both the in-flight/queue series and the TTFT series grow,
/// where a series grows when its least-squares slope over the interval index is positive with
/// one-sided p < alpha (Student-t with points - 2 df) AND the mean of its last quarter exceeds the
/// mean of its first quarter by at least min_relative_rise x |first| (for the queue also by at
/// least min_queue_rise). NaN values are skipped (their index is kept as x).
SaturationResult detect_saturation(std::span<const double> in_flight_or_queue, std::span<const double> ttft,
                                   const SaturationOptions& options = {});

/// The growth test of one series (the test detect_saturation applies to each of its two):
/// `is_queue` adds the absolute floor min_queue_rise; `name` labels the reason.
TrendResult detect_growth(std::span<const double> series, const SaturationOptions& options, bool is_queue,
                          const char* name);

nlohmann::json to_json(const SteadyStateResult& r);
nlohmann::json to_json(const SteadyStateSummary& s);
nlohmann::json to_json(const SaturationResult& r);
/// The detection as result.json's window.warmup.detection (without the cooldown, which the
/// window adds): method, interval_s, intervals, found, deciding_series, start_s, reason, and per
/// series found, truncation_s, reason and the values.
nlohmann::json to_json(const WarmupDetection& d);

}  // namespace llmload::analysis
