#include "llmload/analysis/run_metrics.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {

constexpr std::int64_t kHighestUs = 3'600'000'000;  // 1 hour: larger values are clamped

std::int64_t to_us(Nanos v) {
  const std::int64_t us = (v.count() + 500) / 1000;
  return std::clamp<std::int64_t>(us, 0, kHighestUs);
}

double seconds(Nanos d) { return static_cast<double>(d.count()) / 1e9; }

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

MetricsAccumulator::MetricsAccumulator() {
  for (Metric m : kAllMetrics) hist_.emplace(m, HdrHistogram(1, kHighestUs, 3));
}

void MetricsAccumulator::record(Metric m, Nanos v, std::int64_t count) {
  const std::int64_t us = to_us(v);
  if (v.count() > kHighestUs * 1000) ++clamped_;
  hist_.at(m).record(us, count);
  auto& mo = moments_[m];
  for (std::int64_t i = 0; i < count; ++i) mo.add(static_cast<double>(v.count()) / 1e3);
}

void MetricsAccumulator::add(const RequestRecord& r, std::span<const ChunkArrival> chunks) {
  // Token arrivals (for windowed throughput). When the server reported usage, spread its count
  // over the events so the series sums to the server's n_out.
  std::int64_t event_tokens = 0;
  for (const auto& c : chunks) event_tokens += c.tokens;
  const double scale = (r.tokens_from_usage && event_tokens > 0 && r.ok())
                           ? static_cast<double>(r.output_tokens) / static_cast<double>(event_tokens)
                           : 1.0;
  for (const auto& c : chunks) {
    if (c.t.count() < 0) continue;
    const auto bin = static_cast<std::size_t>(c.t / kTokenBin);
    if (bin >= token_bins_.size()) token_bins_.resize(bin + 1, 0.0);
    token_bins_[bin] += static_cast<double>(c.tokens) * scale;
  }

  if (r.warmup || !r.in_window || !r.ok()) return;
  if (auto v = r.schedule_lag()) record(Metric::kScheduleLag, std::max(*v, Nanos(0)));
  if (auto v = r.ttft()) record(Metric::kTtft, *v);
  if (auto v = r.ttft_rt()) record(Metric::kTtftRt, *v);
  if (auto v = r.e2e()) record(Metric::kE2e, *v);
  if (auto v = r.e2e_rt()) record(Metric::kE2eRt, *v);
  if (auto v = r.tpot()) record(Metric::kTpot, *v);
  // ITL: gaps between consecutive output events; a gap before an event with n_k tokens counts
  // as n_k values of gap/n_k (token-weighted). The per-event gap list is kept beside it.
  for (std::size_t k = 1; k < chunks.size(); ++k) {
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
  s.p99_low_confidence = s.count < 1000;
  s.p999_low_confidence = s.count < 10000;
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

namespace {

std::string seconds_text(Nanos d) { return fmt::format("{:.3f} s", seconds(d)); }

// The schedule lag of the window's successful requests, as the accumulator records it: the
// message reads it from the records, so a merge of shards (whose accumulator has no samples)
// words it alike.
HdrHistogram lag_histogram(std::span<const RequestRecord> records) {
  HdrHistogram h(1, kHighestUs, 3);
  for (const auto& r : records) {
    if (r.warmup || !r.in_window || !r.ok()) continue;
    if (auto v = r.schedule_lag()) h.record(to_us(std::max(*v, Nanos(0))));
  }
  return h;
}

// The validity verdict, MLPerf-style: every reason the run is INVALID (docs/statistics.md).
void judge_validity(RunMetrics& m, const ValidityOptions& o, std::span<const RequestRecord> records) {
  m.max_error_rate = o.max_error_rate;
  auto& mn = m.minimums;
  mn.min_duration = o.min_duration;
  mn.min_requests = o.min_requests;
  mn.max_duration = o.max_duration;
  mn.max_duration_reached = o.max_duration_reached;
  mn.checked = o.check_samples;
  mn.percentiles = o.percentiles;
  mn.percentiles.push_back(99.0);  // the headline p99 is always reported
  std::sort(mn.percentiles.begin(), mn.percentiles.end());
  mn.percentiles.erase(std::unique(mn.percentiles.begin(), mn.percentiles.end()), mn.percentiles.end());
  double deciding = 99.0;
  mn.required_samples = 0;
  for (double p : mn.percentiles) {
    if (samples_needed(p) > mn.required_samples) {
      mn.required_samples = samples_needed(p);
      deciding = p;
    }
  }
  auto add = [&](const char* code, std::string message) { m.validity_reasons.push_back({code, std::move(message)}); };
  const std::string stopped =
      o.max_duration_reached && o.max_duration
          ? fmt::format(" (--max-duration {} stopped the run first)", seconds_text(*o.max_duration))
          : std::string();

  if (m.open_loop) {
    m.validity_checks.emplace_back("schedule_lag");
    if (m.late_fraction > 0.01) {
      const HdrHistogram lag = lag_histogram(records);
      add("schedule_lag",
          fmt::format("the client could not hold the offered load: {:.1f}% of requests started more than 1 ms late "
                      "(schedule lag p50 {:.3f} ms, p99 {:.3f} ms, max {:.3f} ms)",
                      100.0 * m.late_fraction, static_cast<double>(lag.value_at_percentile(50)) / 1e3,
                      static_cast<double>(lag.value_at_percentile(99)) / 1e3, static_cast<double>(lag.max()) / 1e3));
    }
  }
  bool met = true;
  if (o.check_samples) {
    m.validity_checks.emplace_back("too_few_samples");
    if (m.completed < mn.required_samples) {
      met = false;
      add("too_few_samples",
          fmt::format("only {} successful measured requests: p{:g} needs at least {} (with fewer it is just the "
                      "maximum){}; measure at least {} requests (--num-requests, --min-requests or a longer "
                      "--duration)",
                      m.completed, deciding, mn.required_samples, stopped, mn.required_samples));
    }
    if (o.min_duration) {
      m.validity_checks.emplace_back("duration_below_minimum");
      if (m.window.length() < *o.min_duration) {
        met = false;
        add("duration_below_minimum",
            fmt::format("the measurement window lasted {}, below --min-duration {}{}; run longer", seconds_text(m.window.length()),
                        seconds_text(*o.min_duration), stopped));
      }
    }
    if (o.min_requests) {
      m.validity_checks.emplace_back("requests_below_minimum");
      if (m.in_window < *o.min_requests) {
        met = false;
        add("requests_below_minimum", fmt::format("{} measured requests, below --min-requests {}{}; run more requests",
                                                  m.in_window, *o.min_requests, stopped));
      }
    }
  }
  mn.met = met;

  m.validity_checks.emplace_back("error_rate");
  if (m.in_window > 0) {
    const double rate = static_cast<double>(m.failed) / static_cast<double>(m.in_window);
    if (rate > o.max_error_rate) {
      std::string most;
      std::int64_t most_n = 0;
      for (const auto& [cls, e] : m.errors_by_class) {
        if (e.count > most_n) {
          most_n = e.count;
          most = fmt::format("{} ({}, e.g. {})", cls, e.count, e.example);
        }
      }
      add("error_rate", fmt::format("{} of {} measured requests failed ({:.1f}%), above --max-error-rate {:g}%; most "
                                    "common: {}",
                                    m.failed, m.in_window, 100.0 * rate, 100.0 * o.max_error_rate, most));
    }
  }
  m.validity_checks.emplace_back("server_errors");
  {
    std::int64_t n = 0;
    std::string statuses;
    std::string example;
    for (const auto& [status, e] : m.errors_by_status) {
      if (status < 500 || status > 599) continue;
      n += e.count;
      statuses += fmt::format("{}{} x{}", statuses.empty() ? "" : ", ", status, e.count);
      if (example.empty()) example = e.example;
    }
    if (n > 0) {
      add("server_errors", fmt::format("the server answered {} measured requests with HTTP 5xx errors ({}; e.g. {})", n,
                                       statuses, example));
    }
  }
  m.invalid = !m.validity_reasons.empty();
  m.invalid_reason = m.invalid ? m.validity_reasons.front().message : std::string();
}

MetricVerdict judge(std::string name, Nanos bound, std::int64_t n, std::int64_t exceed, const HdrHistogram& h,
                    double percentile) {
  MetricVerdict v;
  v.metric = std::move(name);
  v.bound = bound;
  v.n = n;
  v.exceedances = exceed;
  v.observed_us = h.total_count() > 0 ? h.value_at_percentile(percentile) : 0;
  const double p = percentile / 100.0;
  v.required = early_stopping_min_requests(exceed, p, 0.99);
  const double bound_ms = static_cast<double>(bound.count()) / 1e6;
  const double observed_ms = static_cast<double>(v.observed_us) / 1e3;
  if (n > 0 && n >= v.required) {
    v.verdict = Verdict::kPass;
    v.explanation = fmt::format("p{:g} within {:g} ms with 99% confidence ({} of {} over the bound)", percentile,
                                bound_ms, exceed, n);
  } else if (n > 0 && static_cast<double>(exceed) > (1.0 - p) * static_cast<double>(n)) {
    v.verdict = Verdict::kFail;
    v.explanation = fmt::format("{} of {} requests ({:.2f}%) over {:g} ms: p{:g} exceeds the bound (observed {:.1f} ms)",
                                exceed, n, 100.0 * static_cast<double>(exceed) / static_cast<double>(n), bound_ms,
                                percentile, observed_ms);
  } else {
    v.verdict = Verdict::kInconclusive;
    v.explanation = fmt::format("too few requests to confirm p{:g} <= {:g} ms: {} of {} over the bound; "
                                "would need about {} more requests",
                                percentile, bound_ms, exceed, n, std::max<std::int64_t>(0, v.required - n));
  }
  return v;
}

}  // namespace

RunMetrics MetricsAccumulator::finalize(const Window& window, bool open_loop, const std::optional<SloSpec>& slo,
                                        LatencyView view, std::span<const RequestRecord> records,
                                        const ValidityOptions& validity) const {
  RunMetrics m;
  m.window = window;
  m.open_loop = open_loop;
  const double secs = seconds(window.length());

  std::int64_t completing_in_window = 0;
  std::int64_t input_tokens_completing = 0;
  for (const auto& r : records) {
    ++m.requests;
    if (r.warmup) {
      ++m.warmup;
      continue;
    }
    if (r.ok() && r.t_done && *r.t_done >= window.start && *r.t_done <= window.end) {
      ++completing_in_window;
      input_tokens_completing += r.input_tokens;
    }
    if (!r.in_window) {
      ++m.outside_window;
      continue;
    }
    ++m.in_window;
    if (r.ok()) {
      ++m.completed;
      m.total_input_tokens += r.input_tokens;
      m.total_output_tokens += r.output_tokens;
      if (!r.tokens_from_usage) m.tokens_estimated = true;
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

  {
    std::vector<Nanos> sends;
    for (const auto& r : records) {
      if (!r.warmup && r.in_window && r.t_send) sends.push_back(*r.t_send);
    }
    std::sort(sends.begin(), sends.end());
    if (secs > 0) m.achieved_send_rate = static_cast<double>(sends.size()) / secs;
    if (sends.size() >= 3) {
      double mean = 0;
      double m2 = 0;
      for (std::size_t i = 1; i < sends.size(); ++i) {
        const double gap = static_cast<double>((sends[i] - sends[i - 1]).count());
        const double d = gap - mean;
        mean += d / static_cast<double>(i);
        m2 += d * (gap - mean);
      }
      const double var = m2 / static_cast<double>(sends.size() - 2);
      if (mean > 0) m.realized_interarrival_cv = std::sqrt(var) / mean;
    }
  }

  // Output tokens whose arrival falls in the window (1 ms bins: bins overlapping the window).
  if (!token_bins_.empty() && window.end > window.start) {
    const auto first = static_cast<std::size_t>(std::max<std::int64_t>(0, window.start / kTokenBin));
    const auto last = static_cast<std::size_t>(std::max<std::int64_t>(0, window.end / kTokenBin));
    for (std::size_t b = first; b <= last && b < token_bins_.size(); ++b) m.output_tokens_in_window += token_bins_[b];
  }
  if (secs > 0) {
    m.request_throughput = static_cast<double>(completing_in_window) / secs;
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

  if (slo && !slo->empty()) {
    SloResult s;
    s.spec = *slo;
    s.view = view;
    // Goodput counts the good requests the way request throughput counts requests: those
    // completing in the window (METRICS.md), so goodput <= throughput always; attainment is the
    // share of the window's measured requests (intended start in the window) that were good.
    std::int64_t good_completing = 0;
    std::int64_t good_tokens = 0;
    std::int64_t ex_ttft = 0;
    std::int64_t ex_tpot = 0;
    std::int64_t ex_e2e = 0;
    const bool rt = view == LatencyView::kResponse;
    for (const auto& r : records) {
      if (r.warmup) continue;
      const bool good = meets_slo(r, *slo, view);
      if (good && r.t_done && *r.t_done >= window.start && *r.t_done <= window.end) {
        ++good_completing;
        good_tokens += r.output_tokens;
      }
      if (!r.in_window) continue;
      if (good) ++s.good;
      if (slo->ttft) {
        auto v = rt ? r.ttft_rt() : r.ttft();
        if (!r.ok() || !v || *v > *slo->ttft) ++ex_ttft;
      }
      if (slo->tpot) {
        auto v = r.tpot();
        if (!r.ok() || (v && *v > *slo->tpot)) ++ex_tpot;
      }
      if (slo->e2e) {
        auto v = rt ? r.e2e_rt() : r.e2e();
        if (!r.ok() || !v || *v > *slo->e2e) ++ex_e2e;
      }
    }
    s.attainment = m.in_window > 0 ? static_cast<double>(s.good) / static_cast<double>(m.in_window) : 0;
    if (secs > 0) {
      s.request_goodput = static_cast<double>(good_completing) / secs;
      s.token_goodput = static_cast<double>(good_tokens) / secs;
    }
    const auto& ttft_h = hist_.at(rt ? Metric::kTtftRt : Metric::kTtft);
    const auto& e2e_h = hist_.at(rt ? Metric::kE2eRt : Metric::kE2e);
    if (slo->ttft) s.metrics.push_back(judge("ttft", *slo->ttft, m.in_window, ex_ttft, ttft_h, slo->percentile));
    if (slo->tpot) s.metrics.push_back(judge("tpot", *slo->tpot, m.in_window, ex_tpot, hist_.at(Metric::kTpot), slo->percentile));
    if (slo->e2e) s.metrics.push_back(judge("e2e", *slo->e2e, m.in_window, ex_e2e, e2e_h, slo->percentile));
    bool any_fail = false;
    bool all_pass = !s.metrics.empty();
    for (const auto& v : s.metrics) {
      any_fail = any_fail || v.verdict == Verdict::kFail;
      all_pass = all_pass && v.verdict == Verdict::kPass;
    }
    s.verdict = any_fail ? Verdict::kFail : (all_pass ? Verdict::kPass : Verdict::kInconclusive);
    m.slo = std::move(s);
  }
  judge_validity(m, validity, records);
  return m;
}

}  // namespace llmload::analysis
