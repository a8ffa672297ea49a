#include "llmload/analysis/run_metrics.hpp"
#include "numeric.hpp"
#include "llmload/common/duration.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "llmload/analysis/stats.hpp"
#include "llmload/analysis/validity.hpp"

namespace llmload::analysis {
namespace {




}  // namespace

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::kTtft: return "ttft";
    case Metric::kTpot: return "tpot";
    case Metric::kItl: return "itl";
    case Metric::kItlEvent: return "itl_event";
    case Metric::kE2e: return "e2e";
    case Metric::kTtftRt: return "ttft_rt";
    case Metric::kE2eRt: return "e2e_rt";
    case Metric::kScheduleLag: return "schedule_lag";
    case Metric::kTtfo: return "ttfo";
    case Metric::kTtfoRt: return "ttfo_rt";
  }
  return "unknown";
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
    case Verdict::kNone: return "NONE";
  }
  return "NONE";
}

std::int64_t LatencyStats::percentile(double p) const {
  for (const auto& [q, v] : percentiles) {
    if (q == p) return v;
  }
  return 0;
}

void MetricsAccumulator::Moments::add(double x) {
  ++n;
  const double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

MetricsAccumulator::MetricsAccumulator() : token_bin_(kTokenBin) {
  for (Metric m : kAllMetrics) hist_.emplace(m, HdrHistogram(1, kHighestUs, 3));
}

void MetricsAccumulator::record(Metric m, Nanos v, std::int64_t count) {
  const std::int64_t us = to_us(v);
  if (v.count() > kHighestUs * 1000) ++clamped_;
  hist_.at(m).record(us, count);
  auto& mo = moments_[m];
  for (std::int64_t i = 0; i < count; ++i) mo.add(static_cast<double>(v.count()) / 1e3);
}

void MetricsAccumulator::add(const RequestRecord& r, std::span<const ChunkArrival> chunks, bool itl) {
  // Token arrivals (for windowed throughput). When the server reported usage, spread its count
  // over the events so the series sums to the server's n_out.
  std::int64_t event_tokens = 0;
  for (const auto& c : chunks) event_tokens += c.tokens;
  const double scale = ((r.tokens_from_usage || r.tokens_from_tokenizer) && event_tokens > 0 && r.ok())
                           ? static_cast<double>(r.output_tokens) / static_cast<double>(event_tokens)
                           : 1.0;
  // Only successful requests' tokens count (issue 16: a failed request's partial output was in
  // output_throughput though the request is in no other throughput).
  for (const auto& c : chunks) {
    if (!r.ok()) break;
    if (c.t.count() < 0) continue;
    auto bin = static_cast<std::size_t>(c.t / token_bin_);
    while (bin >= kMaxTokenBins) {
      // Twice as wide: pairs of bins merged into the first half.
      for (std::size_t b = 0; b < token_bins_.size(); b += 2) {
        token_bins_[b / 2] = token_bins_[b] + (b + 1 < token_bins_.size() ? token_bins_[b + 1] : 0.0);
      }
      token_bins_.resize((token_bins_.size() + 1) / 2);
      token_bin_ *= 2;
      bin = static_cast<std::size_t>(c.t / token_bin_);
    }
    if (bin >= token_bins_.size()) token_bins_.resize(bin + 1, 0.0);
    token_bins_[bin] += static_cast<double>(c.tokens) * scale;
  }

  if (r.warmup || !r.in_window || !r.ok()) return;
  if (auto v = r.schedule_lag()) record(Metric::kScheduleLag, std::max(*v, Nanos(0)));
  if (auto v = r.ttft()) record(Metric::kTtft, *v);
  if (auto v = r.ttft_rt()) record(Metric::kTtftRt, *v);
  if (auto v = r.ttfo()) record(Metric::kTtfo, *v);
  if (auto v = r.ttfo_rt()) record(Metric::kTtfoRt, *v);
  if (auto v = r.e2e()) record(Metric::kE2e, *v);
  if (auto v = r.e2e_rt()) record(Metric::kE2eRt, *v);
  if (auto v = r.tpot()) record(Metric::kTpot, *v);
  // ITL: gaps between consecutive output events; a gap before an event with n_k tokens counts
  // as n_k values of gap/n_k (token-weighted). The per-event gap list is kept beside it.
  for (std::size_t k = 1; itl && k < chunks.size(); ++k) {
    const Nanos gap = chunks[k].t - chunks[k - 1].t;
    const std::int64_t n = std::max<std::int64_t>(1, chunks[k].tokens);
    record(Metric::kItlEvent, gap);
    record(Metric::kItl, gap / n, n);
  }
}

LatencyStats summarize_latency(const HdrHistogram& h, double mean_us, double stddev_us, std::int64_t n) {
  LatencyStats s;
  s.count = h.total_count();
  s.mean_us = n > 0 ? mean_us : 0;
  s.stddev_us = n > 0 ? stddev_us : 0;
  s.min_us = h.min();
  s.max_us = h.max();
  for (double p : {50.0, 90.0, 95.0, 99.0, 99.9}) s.percentiles.emplace_back(p, h.value_at_percentile(p));
  s.p99_low_confidence = s.count < kConfidentP99Samples;
  s.p999_low_confidence = s.count < kConfidentP999Samples;
  if (s.count > 0) {
    auto q = estimate_quantile(h, 99.0);
    if (q.ci_valid) s.p99_ci_us = std::make_pair(q.ci_low, q.ci_high);
  }
  return s;
}

std::int64_t samples_needed(double percentile) {
  if (!(percentile > 0) || percentile >= 100) return 1;
  // 100 / (100 - p) up to rounding: p99 needs 100, not 101.
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(100.0 / (100.0 - percentile) - 1e-9)));
}

void decide_verdict(MetricVerdict& v, const HdrHistogram& h, double percentile) {
  const std::int64_t n = v.n;
  const std::int64_t exceed = v.exceedances;
  v.observed_us.reset();
  if (h.total_count() > 0) v.observed_us = h.value_at_percentile(percentile);
  const double p = percentile / 100.0;
  v.required = early_stopping_min_requests(exceed, p, 0.99);
  const double bound_ms = static_cast<double>(v.bound.count()) / 1e6;
  if (n > 0 && n >= v.required) {
    v.verdict = Verdict::kPass;
    v.explanation = fmt::format("p{:g} within {:g} ms with 99% confidence ({} of {} over the bound)", percentile,
                                bound_ms, exceed, n);
  } else if (n > 0 && static_cast<double>(exceed) > (1.0 - p) * static_cast<double>(n)) {
    v.verdict = Verdict::kFail;
    // The observed percentile is of the requests with a value; failed requests, those canceled
    // past the bound, and answers without the metric's token are over it without one (an empty
    // histogram said "0.0 ms").
    const std::int64_t with_value = h.total_count();
    const std::string without = v.metric == "ttfo"   ? ", and answers with no output token (reasoning only)"
                                : v.metric == "ttft" ? ", and answers with no token"
                                                     : "";
    const std::string why = fmt::format("failed requests, those canceled past the bound{} count as over it", without);
    const std::string observed =
        with_value == 0 ? fmt::format("no request had a value: {}", why)
        : with_value < n
            ? fmt::format("observed {:.1f} ms over the {} with a value; {}", static_cast<double>(*v.observed_us) / 1e3,
                          with_value, why)
            : fmt::format("observed {:.1f} ms", static_cast<double>(*v.observed_us) / 1e3);
    v.explanation = fmt::format("{} of {} requests ({:.2f}%) over {:g} ms: p{:g} exceeds the bound ({})", exceed, n,
                                100.0 * static_cast<double>(exceed) / static_cast<double>(n), bound_ms, percentile,
                                observed);
  } else {
    v.verdict = Verdict::kInconclusive;
    v.explanation = fmt::format("too few requests to confirm p{:g} <= {:g} ms: {} of {} over the bound; "
                                "would need about {} more requests",
                                percentile, bound_ms, exceed, n, std::max<std::int64_t>(0, v.required - n));
  }
}

namespace {

MetricVerdict judge(std::string name, Nanos bound, std::int64_t n, std::int64_t exceed, const HdrHistogram& h,
                    double percentile) {
  MetricVerdict v;
  v.metric = std::move(name);
  v.bound = bound;
  v.n = n;
  v.exceedances = exceed;
  decide_verdict(v, h, percentile);
  return v;
}

// The per-metric verdicts of an SLO judged in `view` over the window's measured requests that
// `include` accepts (failed requests count as exceedances; a request canceled by a stop counts
// only for a bound it had already passed: judge_request). The histograms come from the records,
// so a merge of shards (an empty accumulator) judges alike.
std::vector<MetricVerdict> judge_slo_metrics(const SloSpec& slo, LatencyView view, std::int64_t n,
                                             RecordRange records, const RecordFilter& include) {
  std::int64_t unknown_ttft = 0;
  std::int64_t unknown_ttfo = 0;
  std::int64_t unknown_tpot = 0;
  std::int64_t unknown_e2e = 0;
  const bool rt = view == LatencyView::kResponse;
  std::int64_t ex_ttft = 0;
  std::int64_t ex_ttfo = 0;
  std::int64_t ex_tpot = 0;
  std::int64_t ex_e2e = 0;
  HdrHistogram ttft_h(1, kHighestUs, 3);
  HdrHistogram ttfo_h(1, kHighestUs, 3);
  HdrHistogram tpot_h(1, kHighestUs, 3);
  HdrHistogram e2e_h(1, kHighestUs, 3);
  for (const auto& r : records) {
    if (r.warmup || !r.in_window || (include && !include(r))) continue;
    const SloJudgement j = judge_request(r, slo, view);
    // Canceled with no bound passed: not in `n` (evaluate_slo's measured) nor here.
    if (r.error == ErrorClass::kStoppedEarly && !j.over.any()) continue;
    const auto ttft = rt ? r.ttft_rt() : r.ttft();
    const auto ttfo = rt ? r.ttfo_rt() : r.ttfo();
    const auto tpot = r.tpot();
    const auto e2e = rt ? r.e2e_rt() : r.e2e();
    if (r.ok()) {
      if (ttft) ttft_h.record(to_us(*ttft));
      if (ttfo) ttfo_h.record(to_us(*ttfo));
      if (tpot) tpot_h.record(to_us(*tpot));
      if (e2e) e2e_h.record(to_us(*e2e));
    }
    ex_ttft += j.over.ttft ? 1 : 0;
    ex_ttfo += j.over.ttfo ? 1 : 0;
    ex_tpot += j.over.tpot ? 1 : 0;
    ex_e2e += j.over.e2e ? 1 : 0;
    unknown_ttft += j.unknown.ttft ? 1 : 0;
    unknown_ttfo += j.unknown.ttfo ? 1 : 0;
    unknown_tpot += j.unknown.tpot ? 1 : 0;
    unknown_e2e += j.unknown.e2e ? 1 : 0;
  }
  std::vector<MetricVerdict> out;
  if (slo.ttft) out.push_back(judge("ttft", *slo.ttft, n - unknown_ttft, ex_ttft, ttft_h, slo.percentile));
  if (slo.ttfo) out.push_back(judge("ttfo", *slo.ttfo, n - unknown_ttfo, ex_ttfo, ttfo_h, slo.percentile));
  if (slo.tpot) out.push_back(judge("tpot", *slo.tpot, n - unknown_tpot, ex_tpot, tpot_h, slo.percentile));
  if (slo.e2e) out.push_back(judge("e2e", *slo.e2e, n - unknown_e2e, ex_e2e, e2e_h, slo.percentile));
  return out;
}

Verdict overall_verdict(const std::vector<MetricVerdict>& metrics) {
  bool any_fail = false;
  bool all_pass = !metrics.empty();
  for (const auto& v : metrics) {
    any_fail = any_fail || v.verdict == Verdict::kFail;
    all_pass = all_pass && v.verdict == Verdict::kPass;
  }
  return any_fail ? Verdict::kFail : (all_pass ? Verdict::kPass : Verdict::kInconclusive);
}


// The measured requests' send times, for the achieved and scheduled rates over their span. A
// rate needs only the first and last times and the count; the sends are kept (8 bytes a measured
// request, reserved once) for the spread of their gaps, which needs them in order.
struct Sends {
  std::vector<Nanos> times;
  std::optional<Nanos> first_intended;
  std::optional<Nanos> last_intended;
  void add(Nanos send, Nanos intended) {
    times.push_back(send);
    first_intended = first_intended ? std::min(*first_intended, intended) : intended;
    last_intended = last_intended ? std::max(*last_intended, intended) : intended;
  }
  void set_rates(RunMetrics& m) {
    std::sort(times.begin(), times.end());
    auto rate = [](std::size_t n, Nanos first, Nanos last) {
      if (n < 2 || last <= first) return 0.0;
      return static_cast<double>(n - 1) / to_seconds(last - first);
    };
    // Requests all released at one instant (a closed loop's initial fill cut short, offline's
    // batch) were sent as one burst by design: their span measures the client's send loop, not a
    // rate (a closed loop stopped at once reported thousands a second). No rate, no spread of gaps.
    if (times.size() >= 2 && first_intended == last_intended) return;
    if (!times.empty()) {
      m.achieved_send_rate = rate(times.size(), times.front(), times.back());
      m.intended_send_rate = rate(times.size(), *first_intended, *last_intended);
    }
    if (times.size() >= 3) {
      double mean = 0;
      double m2 = 0;
      for (std::size_t i = 1; i < times.size(); ++i) {
        const double gap = static_cast<double>((times[i] - times[i - 1]).count());
        const double d = gap - mean;
        mean += d / static_cast<double>(i);
        m2 += d * (gap - mean);
      }
      const double var = m2 / static_cast<double>(times.size() - 2);
      if (mean > 0) m.realized_interarrival_cv = std::sqrt(var) / mean;
    }
  }
};

// Which optional summaries have anything to summarize, by the same rules their functions use
// (reports_reasoning, reports_cached_tokens, asks_for_structured_output, ModelSet): noted in
// finalize's one pass, so that a summary with nothing to say costs no pass of its own over records
// that may have to be read back from disk.
struct OptionalSummaries {
  ModelSet models;
  bool any_reasoning = false;
  bool any_cached = false;
  bool any_structured = false;
  void note(const RequestRecord& r) {
    models.note(r);
    any_reasoning = any_reasoning || reports_reasoning(r);
    any_cached = any_cached || reports_cached_tokens(r);
    any_structured = any_structured || asks_for_structured_output(r);
  }
};

}  // namespace

SloResult evaluate_slo(const SloSpec& slo, LatencyView view, const Window& window,
                       RecordRange records, const RecordFilter& include) {
  SloResult s;
  s.spec = slo;
  s.view = view;
  const double secs = to_seconds(window.length());
  // Goodput counts the good requests the way request throughput counts requests: those
  // completing in the window (METRICS.md), so goodput <= throughput always; attainment is the
  // share of the window's measured requests (intended start in the window) that were good.
  std::int64_t measured = 0;
  std::int64_t good_completing = 0;
  std::int64_t good_tokens = 0;
  for (const auto& r : records) {
    if (include && !include(r)) continue;
    // Canceled by a stop with no bound passed yet: no outcome, in no population (judge_request).
    if (r.error == ErrorClass::kStoppedEarly && !judge_request(r, slo, view).over.any()) continue;
    const bool good = meets_slo(r, slo, view);
    if (good && r.t_done && window.holds_completion(*r.t_done)) {
      ++good_completing;
      good_tokens += r.output_tokens;
    }
    if (r.warmup || !r.in_window) continue;
    ++measured;
    if (good) ++s.good;
  }
  s.attainment = measured > 0 ? static_cast<double>(s.good) / static_cast<double>(measured) : 0;
  if (secs > 0) {
    s.request_goodput = static_cast<double>(good_completing) / secs;
    s.token_goodput = static_cast<double>(good_tokens) / secs;
  }
  s.metrics = judge_slo_metrics(slo, view, measured, records, include);
  s.verdict = overall_verdict(s.metrics);
  s.service_view_verdict = view == LatencyView::kResponse
                               ? overall_verdict(judge_slo_metrics(slo, LatencyView::kService, measured, records, include))
                               : s.verdict;
  return s;
}

RunMetrics MetricsAccumulator::finalize(const Window& window, bool open_loop, const std::optional<SloSpec>& slo,
                                        LatencyView view, RecordRange records,
                                        const ValidityOptions& validity) const {
  RunMetrics m;
  m.window = window;
  m.open_loop = open_loop;
  const double secs = to_seconds(window.length());

  // The throughput population (docs/metrics.md): successful requests completing in the window,
  // whenever they started (warmup included), as the token arrivals in the window count every
  // request's tokens.
  std::int64_t input_tokens_completing = 0;
  auto completes_in_window = [&](const RequestRecord& r) {
    return r.ok() && r.t_done && window.holds_completion(*r.t_done);
  };
  // The records may have been spilled to disk (RecordStore): each pass reads them back. This
  // one also gathers the sends and notes which optional summaries have anything to summarize.
  Sends sends;
  sends.times.reserve(records.size());
  OptionalSummaries optional;
  for (const auto& r : records) {
    ++m.requests;
    optional.note(r);
    if (completes_in_window(r)) {
      ++m.completing_in_window;
      input_tokens_completing += r.input_tokens;
    }
    if (r.warmup) {
      ++m.warmup;
      continue;
    }
    if (!r.in_window) {
      ++m.outside_window;
      continue;
    }
    ++m.in_window;
    if (r.t_send) sends.add(*r.t_send, r.t_intended);
    if (r.reasoning_first()) ++m.reasoning_first_requests;
    if (r.ok()) {
      ++m.completed;
      m.total_input_tokens += r.input_tokens;
      m.total_output_tokens += r.output_tokens;
      if (!r.tokens_from_usage && !r.tokens_from_tokenizer) m.tokens_estimated = true;
      if (r.tokens_from_tokenizer) m.tokens_from_tokenizer = true;
    } else if (r.error == ErrorClass::kStoppedEarly) {
      ++m.stopped_early_requests;  // the client's decision, not a failure (no error rate)
    } else {
      ++m.failed;
      auto& e = m.errors_by_class[std::string(to_string(r.error))];
      if (e.count++ == 0) e.example = r.error_message;
      if (r.error == ErrorClass::kHttpStatus) {
        auto& s = m.errors_by_status[r.http_status];
        if (s.count++ == 0) s.example = r.error_message;
      }
    }
    if (open_loop) {
      if (auto lag = r.schedule_lag(); lag && *lag > std::chrono::milliseconds(1)) ++m.late_over_1ms;
    }
  }

  sends.set_rates(m);

  // Output tokens whose arrival falls in the window (the bins overlapping the window).
  m.token_bin = token_bin_;
  if (!token_bins_.empty() && window.end > window.start) {
    const auto first = static_cast<std::size_t>(std::max<std::int64_t>(0, window.start / token_bin_));
    const auto last = static_cast<std::size_t>(std::max<std::int64_t>(0, window.end / token_bin_));
    for (std::size_t b = first; b <= last && b < token_bins_.size(); ++b) m.output_tokens_in_window += token_bins_[b];
  }
  if (secs > 0) {
    m.request_throughput = static_cast<double>(m.completing_in_window) / secs;
    m.output_throughput = m.output_tokens_in_window / secs;
    m.total_token_throughput = (static_cast<double>(input_tokens_completing) + m.output_tokens_in_window) / secs;
  }

  for (Metric metric : kAllMetrics) {
    const auto& h = hist_.at(metric);
    auto it = moments_.find(metric);
    double mean = 0;
    double sd = 0;
    std::int64_t n = 0;
    if (it != moments_.end() && it->second.n > 0) {
      n = it->second.n;
      mean = it->second.mean;
      sd = std::sqrt(it->second.m2 / static_cast<double>(n));
    }
    m.latency.emplace(metric, summarize_latency(h, mean, sd, n));
    m.histograms.emplace(metric, h);
  }

  if (open_loop && m.in_window > 0) {
    m.late_fraction = static_cast<double>(m.late_over_1ms) / static_cast<double>(m.in_window);
  }

  if (slo && !slo->empty()) m.slo = evaluate_slo(*slo, view, window, records);
  // Each of these is empty (none, or no breakdown) when the first pass found nothing for it.
  if (optional.any_reasoning) m.reasoning = summarize_reasoning(records);
  if (optional.models.several()) m.by_model = model_breakdown(records, window, slo, view);
  if (optional.any_cached) m.prefix_cache = summarize_prefix_cache(records);
  if (optional.any_structured) m.structured_output = summarize_structured_output(records);
  judge_validity(m, validity, records);
  return m;
}

}  // namespace llmload::analysis
