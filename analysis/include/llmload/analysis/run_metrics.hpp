#pragma once
// Turns the requests of one run into its metrics (METRICS.md): latency histograms in both views,
// throughput over the measurement window, SLO attainment, goodput and the p99 verdict.
// Everything of a run is computed from that one run. No I/O, no clock.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <functional>

#include "llmload/analysis/distribution.hpp"
#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/prefix_cache.hpp"
#include "llmload/analysis/reasoning_metrics.hpp"
#include "llmload/analysis/structured_output.hpp"
#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/analysis/steady_state.hpp"

namespace llmload::analysis {

/// The latency metrics kept in histograms (microseconds). TTFO (time to the first output token,
/// issue 19) last, so the .hlog of a run keeps its earlier tags in their order.
enum class Metric { kTtft, kTpot, kItl, kItlEvent, kE2e, kTtftRt, kE2eRt, kScheduleLag, kTtfo, kTtfoRt };
inline constexpr std::array<Metric, 10> kAllMetrics = {Metric::kTtft,  Metric::kTpot,       Metric::kItl,
                                                       Metric::kItlEvent, Metric::kE2e,     Metric::kTtftRt,
                                                       Metric::kE2eRt, Metric::kScheduleLag, Metric::kTtfo,
                                                       Metric::kTtfoRt};
/// Short name used as .hlog tag and JSON key: ttft, tpot, itl, itl_event, e2e, ttft_rt, e2e_rt, schedule_lag,
/// ttfo, ttfo_rt.
std::string_view metric_name(Metric m);

/// The measurement window [start, end] (offsets from run start) and how it was chosen.
struct Window {
  Nanos start{0};
  Nanos end{0};
  std::string method;  // human-readable: how start and end were chosen
  /// How the warmup before the window was chosen: "none", "requests" (the first N), "time" (the
  /// first T of the run) or "auto" (detected after the run, `detection`).
  std::string warmup_method = "none";
  std::int64_t warmup_requests = 0;  // "requests": N
  Nanos warmup_duration{0};          // "time": T
  std::optional<WarmupDetection> detection{};  // "auto"
  /// The drain after issuing ended (auto: the window ends where issuing ended; see
  /// docs/statistics.md): its end is the last completion of a measured request.
  std::optional<Nanos> drain_end{};
  Nanos length() const { return end - start; }
  /// Whether a completion at `t` counts in the window's throughput and goodput: (start, end].
  /// Half open: a closed loop's window starts at the release a completion made, so that
  /// completion is the one before the window, not the first in it (counted, the window held one
  /// completion more than its length: the n - 1 of a rate between two events).
  bool holds_completion(Nanos t) const { return t > start && t <= end; }
};

/// Summary of one latency distribution. Values in microseconds.
struct LatencyStats {
  std::int64_t count = 0;
  double mean_us = 0;   // exact (from the raw values), not from the histogram
  double stddev_us = 0;  // exact, population standard deviation
  std::int64_t min_us = 0;
  std::int64_t max_us = 0;
  // (percentile, value) pairs from the histogram: 50, 90, 95, 99, 99.9
  std::vector<std::pair<double, std::int64_t>> percentiles;
  bool p99_low_confidence = false;   // fewer than 1,000 samples
  bool p999_low_confidence = false;  // fewer than 10,000 samples
  std::optional<std::pair<std::int64_t, std::int64_t>> p99_ci_us;  // 95% order-statistic CI
  std::int64_t percentile(double p) const;
};

/// The summary of one latency histogram (count, extremes, percentiles with the p99 interval) with
/// the exact mean and standard deviation of the `n` raw values (0 when n == 0). Shared by a run
/// and by the merge of shard runs, so both report alike.
LatencyStats summarize_latency(const HdrHistogram& h, double mean_us, double stddev_us, std::int64_t n);

enum class Verdict { kPass, kFail, kInconclusive, kNone };
std::string_view to_string(Verdict v);

/// The p99 (or other percentile) verdict for one bounded metric, MLPerf early-stopping style.
struct MetricVerdict {
  std::string metric;           // ttft, tpot, e2e
  Nanos bound{0};
  std::int64_t n = 0;           // requests in the window
  std::int64_t exceedances = 0; // requests over the bound (failed requests count as over)
  std::int64_t required = 0;    // requests needed to pass with this many exceedances
  /// The percentile among the successful requests; none when no request succeeded (failed ones,
  /// and those canceled past the bound, are over it without a value).
  std::optional<std::int64_t> observed_us;
  Verdict verdict = Verdict::kNone;
  std::string explanation;
};

struct SloResult {
  SloSpec spec;
  LatencyView view = LatencyView::kService;
  std::int64_t good = 0;       // requests in the window meeting every bound
  double attainment = 0;       // good / requests in the window
  double request_goodput = 0;  // good requests per second of the window
  double token_goodput = 0;    // output tokens of good requests per second of the window
  std::vector<MetricVerdict> metrics;
  Verdict verdict = Verdict::kNone;
  /// The same bounds judged from t_send (service-time view), i.e. with the client's schedule lag
  /// taken out. Equals `verdict` when the SLO is judged in the service view already.
  Verdict service_view_verdict = Verdict::kNone;
};

/// A bounded metric's percentile verdict from its n, exceedances and bound (set in `v`) and the
/// successful requests' values `h`: PASS iff n >= early_stopping_min_requests(exceedances) (99%
/// confidence); FAIL when more than (1 - p) of n exceed; else INCONCLUSIVE. Sets `required`,
/// `observed_us`, `verdict` and `explanation`. The one rule, for a run and for a merged one.
void decide_verdict(MetricVerdict& v, const HdrHistogram& h, double percentile);

/// The SLO judged over the window's measured requests that `include` accepts (all when empty):
/// attainment, goodput (good requests completing in the window), the per-metric early-stopping
/// verdicts and the overall one. The one place the run's SLO result is made, for the run and for
/// each model of it.
using RecordFilter = std::function<bool(const RequestRecord&)>;
SloResult evaluate_slo(const SloSpec& slo, LatencyView view, const Window& window,
                       RecordRange records, const RecordFilter& include = {});

/// One model's (or adapter's) share of a run whose requests went to several (issue 19): the same
/// window, population rules and SLO as the run's, over that model's requests.
struct ModelResult {
  std::int64_t requests = 0;   // measured requests (the window's), like RunMetrics::in_window
  std::int64_t completed = 0;
  std::int64_t failed = 0;     // stopped-early requests are neither, as in the run
  double request_throughput = 0;  // successful requests completing in the window / s
  /// Output tokens in the window / s: each successful request's output tokens spread evenly over
  /// [t_first, t_last], the part inside the window (the run's own figure counts its token arrivals).
  double output_throughput = 0;
  // From t_send, measured successful requests (like result.json `latency`).
  DistributionSummary ttft, tpot, e2e, ttfo;
  std::optional<SloResult> slo;
};

/// The models a run's requests went to, noted record by record: the per-model results exist only
/// for more than one distinct non-empty model (the one place of that rule: model_breakdown and
/// finalize's check whether to make its pass); records without a model are in the run's total only.
class ModelSet {
 public:
  void note(const RequestRecord& r) {
    if (!r.model.empty()) names_.insert(r.model);
  }
  bool several() const { return names_.size() > 1; }
  const std::set<std::string>& names() const { return names_; }

 private:
  std::set<std::string> names_;
};

/// Per model, when the records' ModelSet has several (else empty).
std::map<std::string, ModelResult> model_breakdown(RecordRange records, const Window& window,
                                                   const std::optional<SloSpec>& slo, LatencyView view);

struct ErrorSummary {
  std::int64_t count = 0;
  std::string example;
};

/// One reason a run is INVALID (MLPerf-style): a stable code (schedule_lag, too_few_samples,
/// duration_below_minimum, requests_below_minimum, error_rate, server_errors) and a message
/// with the numbers and the fix.
struct ValidityReason {
  std::string code;
  std::string message;
};

/// What the validity verdict checks beyond the schedule lag (docs/statistics.md, "Validity").
struct ValidityOptions {
  double max_error_rate = 0.05;         // failed / measured above this: error_rate
  std::vector<double> percentiles;      // the percentiles the run must support; p99 is always one
  std::optional<Nanos> min_duration;    // --min-duration: the window must last this long
  std::optional<std::int64_t> min_requests;  // --min-requests: measured requests
  std::optional<Nanos> max_duration;    // --max-duration (recorded)
  bool max_duration_reached = false;    // the maximum stopped the releases
  /// false for one shard of a sharded run: its sample is part of the run's, so too_few_samples
  /// and the minimums are left to the merged run.
  bool check_samples = true;
  /// The client's CPU (user + system) over the wall time of the load, when measured: the schedule
  /// lag message tells timer wake-up latency (low) from a saturated client (high).
  std::optional<double> client_core_share;
  /// The run's in-flight cap (--max-concurrency / --max-inflight): a request that waited for a
  /// slot has that wait in its schedule lag by design, so it is not judged as client lag.
  std::optional<std::int64_t> max_inflight;
};

/// The smallest sample in which percentile p (0 < p < 100) has at least one value above it:
/// ceil(1 / (1 - p/100)), e.g. 100 for p99, 1,000 for p99.9, 2 for p50. With fewer samples the
/// "percentile" is the maximum. (The low-confidence flags sit at 10x: p99 < 1,000, p99.9 < 10,000.)
std::int64_t samples_needed(double percentile);

/// The minimums of a run and whether it met them (`minimums` in result.json).
struct Minimums {
  std::optional<Nanos> min_duration;
  std::optional<std::int64_t> min_requests;
  std::optional<Nanos> max_duration;
  bool max_duration_reached = false;
  std::vector<double> percentiles;    // the percentiles the run must support
  std::int64_t required_samples = 0;  // samples_needed of the highest: the default minimum
  bool checked = true;                // false: a shard (left to the merged run)
  bool met = true;                    // window >= min_duration, measured >= min_requests, samples >= required
};

struct RunMetrics {
  Window window;
  std::int64_t requests = 0;       // all requests issued (warmup included)
  std::int64_t warmup = 0;
  std::int64_t in_window = 0;      // requests whose t_intended is in the window
  std::int64_t completed = 0;      // successful, in the window
  std::int64_t failed = 0;         // failed, in the window
  std::int64_t stopped_early_requests = 0;  // in the window, canceled by an early stop: not failed
  std::int64_t outside_window = 0; // measured-phase requests that fell outside the window
  std::map<std::string, ErrorSummary> errors_by_class;  // in the window
  std::map<int, ErrorSummary> errors_by_status;         // in the window, HTTP status errors
  std::int64_t total_input_tokens = 0;   // successful in-window requests
  std::int64_t total_output_tokens = 0;  // successful in-window requests
  bool tokens_estimated = false;         // some successful request had neither usage nor a --tokenizer count
  bool tokens_from_tokenizer = false;    // some successful request's n_out was counted with --tokenizer
  double output_tokens_in_window = 0;    // token arrivals inside [start, end] (all requests)
  Nanos token_bin{0};                    // the arrival bins' width (kTokenBin, doubled for long runs)
  // Throughput population (docs/metrics.md): every successful request whose completion falls in
  // the window, warmup-started ones included, as token arrivals in the window count every
  // request's tokens. Goodput counts the good ones of the same population.
  std::int64_t completing_in_window = 0;
  double request_throughput = 0;         // completing_in_window / s
  double output_throughput = 0;          // output tokens arriving in the window / s
  double total_token_throughput = 0;     // (input tokens of completions + output) / s
  std::map<Metric, LatencyStats> latency;
  std::map<Metric, HdrHistogram> histograms;
  // Achieved load (METRICS.md "Realized arrivals"): measured requests actually sent per second of
  // the window, and the coefficient of variation of the gaps between their send times (1 for
  // Poisson arrivals, 0 for a constant rate).
  // Both rates are taken over the sending span (first to last send of the measured requests), not
  // the window: a drain after the last send does not dilute them. intended_send_rate is the
  // schedule's rate over the same requests' intended times. 0: no rate (fewer than two sends, or
  // all released at one instant: a burst by design); result.json says null.
  double achieved_send_rate = 0;
  double intended_send_rate = 0;
  double realized_interarrival_cv = 0;
  // Schedule lag (open loop): requests starting more than 1 ms late.
  std::int64_t late_over_1ms = 0;
  double late_fraction = 0;
  bool open_loop = false;
  /// The validity verdict: INVALID iff any reason. `invalid` and `invalid_reason` (the first
  /// reason's message) are kept for callers of the single-reason form.
  std::vector<ValidityReason> validity_reasons;
  std::vector<std::string> validity_checks;  // the codes checked
  bool invalid = false;
  std::string invalid_reason;
  double max_error_rate = 0.05;
  Minimums minimums;
  /// The run stopped issuing before its plan ended, not interrupted: why (RunController::stop_early).
  std::optional<std::string> stopped_early;
  std::optional<SloResult> slo;
  // Issue 19 (docs/metrics.md): measured requests whose first generated token was reasoning (TTFO
  // is shown beside TTFT when there are any); the reasoning phases; per model; the prefix cache.
  std::int64_t reasoning_first_requests = 0;
  std::optional<ReasoningSummary> reasoning;
  std::map<std::string, ModelResult> by_model;
  std::optional<PrefixCacheSummary> prefix_cache;
  std::optional<StructuredOutputSummary> structured_output;  // tool calls and structured output
  /// TTFO differs from TTFT for some request: the console and the report show it beside TTFT.
  bool shows_ttfo() const { return reasoning_first_requests > 0; }
};

/// Collects finished requests. Threading: single-threaded; merge accumulators of several
/// workers with merge().
class MetricsAccumulator {
 public:
  MetricsAccumulator();

  /// Adds a finished request with its output events in arrival order. Requests not in the window
  /// only contribute their token arrivals (throughput counts tokens arriving in the window,
  /// whoever requested them). `itl` false: the events are not the measured ones (a run rebuilt
  /// from requests.jsonl), so no inter-token latency is taken from them.
  void add(const RequestRecord& r, std::span<const ChunkArrival> chunks, bool itl = true);
  /// The width of the token-arrival bins now (kTokenBin until the run outgrows kMaxTokenBins).
  Nanos token_bin() const { return token_bin_; }

  /// Computes the metrics for the window. `open_loop` enables the schedule-lag validity check;
  /// the SLO (if any) is judged in `view`; `validity` sets the other checks (the defaults: error
  /// rate above 5%, HTTP 5xx answers, fewer samples than p99 needs).
  RunMetrics finalize(const Window& window, bool open_loop, const std::optional<SloSpec>& slo,
                      LatencyView view, RecordRange records,
                      const ValidityOptions& validity = {}) const;

 private:
  struct Moments {
    std::int64_t n = 0;
    double mean = 0;
    double m2 = 0;
    void add(double x);
  };
  void record(Metric m, Nanos v, std::int64_t count = 1);

  std::map<Metric, HdrHistogram> hist_;
  std::map<Metric, Moments> moments_;
  // Output tokens arriving per bin of token_bin_, from run start: 1 ms, doubled (pairs merged)
  // whenever the run outgrows kMaxTokenBins, so memory stays bounded however long the run.
  std::vector<double> token_bins_;
  Nanos token_bin_;
  std::int64_t clamped_ = 0;
};

/// Bin width of the token-arrival series used for windowed throughput, while the run lasts up to
/// kMaxTokenBins of it (8.7 minutes); a longer run doubles the width as often as it needs (a 1-hour
/// run: 8 ms), so the series never holds more than kMaxTokenBins values (4 MiB). The window
/// counts the bins it overlaps: the edges add at most two bins' tokens to a window of at least
/// kMaxTokenBins / 2 bins.
inline constexpr Nanos kTokenBin = std::chrono::milliseconds(1);
inline constexpr std::size_t kMaxTokenBins = std::size_t{1} << 19;

}  // namespace llmload::analysis
