#include "llmload/analysis/steady_state.hpp"
#include "bounded_samples.hpp"
#include "numeric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kMinBatches = 10;


struct Batch {
  std::size_t start;  // first interval of the batch
  double z;           // mean of its finite values
};

TrendResult trend(std::span<const double> y, const SaturationOptions& o, bool is_queue, const char* name) {
  TrendResult r;
  std::vector<std::pair<double, double>> pts;
  pts.reserve(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isfinite(y[i])) pts.emplace_back(static_cast<double>(i), y[i]);
  }
  r.points = pts.size();
  if (r.points < std::max<std::size_t>(o.min_points, 3)) {
    r.slope = r.slope_t = r.start_level = r.end_level = kNaN;
    r.reason = fmt::format("{}: {} intervals with data, fewer than {}: cannot tell", name, r.points,
                           std::max<std::size_t>(o.min_points, 3));
    return r;
  }
  const auto n = static_cast<double>(r.points);
  double xm = 0;
  double ym = 0;
  for (const auto& [x, v] : pts) {
    xm += x;
    ym += v;
  }
  xm /= n;
  ym /= n;
  double sxx = 0;
  double sxy = 0;
  for (const auto& [x, v] : pts) {
    sxx += (x - xm) * (x - xm);
    sxy += (x - xm) * (v - ym);
  }
  r.slope = sxy / sxx;
  double rss = 0;
  for (const auto& [x, v] : pts) {
    const double e = v - ym - r.slope * (x - xm);
    rss += e * e;
  }
  const double se = std::sqrt(rss / (n - 2) / sxx);
  if (se > 0) {
    r.slope_t = r.slope / se;
    r.p_value = student_t_cdf(-r.slope_t, n - 2);
  } else {  // an exact line
    r.slope_t = r.slope > 0 ? kInf : (r.slope < 0 ? -kInf : 0.0);
    r.p_value = r.slope > 0 ? 0.0 : 1.0;
  }
  const std::size_t quarter = std::max<std::size_t>(1, r.points / 4);
  double first = 0;
  double last = 0;
  for (std::size_t i = 0; i < quarter; ++i) {
    first += pts[i].second;
    last += pts[r.points - 1 - i].second;
  }
  r.start_level = first / static_cast<double>(quarter);
  r.end_level = last / static_cast<double>(quarter);
  const double rise = r.end_level - r.start_level;
  double needed = o.min_relative_rise * std::fabs(r.start_level);
  if (is_queue) needed = std::max(needed, o.min_queue_rise);
  const bool significant = r.slope > 0 && r.p_value < o.alpha;
  const bool rose = rise > 0 && rise >= needed;
  r.growing = significant && rose;
  r.reason = fmt::format(
      "{}: slope {:+.4g}/interval (t = {:.2f}, one-sided p = {:.2g}, {} at {:.2g}); first quarter {:.4g} -> last "
      "quarter {:.4g} (rise {:+.4g}, needed {:.4g}): {}",
      name, r.slope, r.slope_t, r.p_value, significant ? "significant" : "not significant", o.alpha, r.start_level,
      r.end_level, rise, needed, r.growing ? "growing" : "not growing");
  return r;
}

}  // namespace

SteadyStateResult mser(std::span<const double> series, std::size_t batch_size) {
  if (batch_size == 0) throw std::invalid_argument("mser: batch_size must be >= 1");
  SteadyStateResult r;
  r.batch_size = batch_size;
  std::vector<Batch> batches;
  for (std::size_t start = 0; start + batch_size <= series.size(); start += batch_size) {
    double sum = 0;
    std::size_t count = 0;
    for (std::size_t i = start; i < start + batch_size; ++i) {
      if (std::isfinite(series[i])) {
        sum += series[i];
        ++count;
      }
    }
    if (count > 0) batches.push_back({start, sum / static_cast<double>(count)});
  }
  const std::size_t k = batches.size();
  r.batches = k;
  r.search_limit = k / 2;
  if (k == 0) {
    r.statistic = kNaN;
    r.reason = fmt::format("series too short: no complete batch of {} intervals with data", batch_size);
    return r;
  }
  // Suffix statistics by a reverse Welford pass: m2[d] = sum_{i >= d} (Z_i - mean_{>= d})^2 (0-based).
  std::vector<double> m2(k, 0.0);
  double mean = 0;
  double acc = 0;
  for (std::size_t idx = k; idx-- > 0;) {
    const double cnt = static_cast<double>(k - idx);
    const double delta = batches[idx].z - mean;
    mean += delta / cnt;
    acc += delta * (batches[idx].z - mean);
    m2[idx] = acc;
  }
  std::size_t best = 0;
  double best_stat = kInf;
  for (std::size_t d = 0; d <= r.search_limit; ++d) {
    const double m = static_cast<double>(k - d);
    const double stat = m2[d] / (m * m);
    if (stat < best_stat) {
      best_stat = stat;
      best = d;
    }
  }
  r.truncation_batches = best;
  r.statistic = best_stat;
  r.truncation = best == 0 ? 0 : batches[best - 1].start + batch_size;
  if (k < kMinBatches) {
    r.reason = fmt::format("series too short: {} batches of {} intervals, MSER needs at least {}", k, batch_size,
                           kMinBatches);
  } else if (best == r.search_limit) {
    r.reason = fmt::format(
        "no steady state detected: the MSER minimum is at the search limit (d = {} of {} batches); the series is "
        "still changing in its second half, run longer",
        best, k);
  } else {
    r.found = true;
    r.reason = fmt::format("MSER-{}: minimum at d = {} of {} batches: discard the first {} intervals", batch_size, best, k,
                           r.truncation);
  }
  return r;
}

SteadyStateSummary detect_steady_state(const std::vector<NamedSeries>& series) {
  SteadyStateSummary s;
  if (series.empty()) {
    s.reason = "no series";
    return s;
  }
  s.found = true;
  std::string first_missing;
  bool any_found = false;
  for (const auto& ns : series) {
    SteadyStateResult r = mser5(ns.values);
    if (r.found) {
      if (!any_found || r.truncation > s.truncation) {
        s.truncation = r.truncation;
        if (first_missing.empty()) s.deciding_series = ns.name;
      }
      any_found = true;
    } else if (first_missing.empty()) {
      first_missing = ns.name;
      s.found = false;
      s.deciding_series = ns.name;
      s.reason = fmt::format("no steady state in '{}': {}", ns.name, r.reason);
    }
    s.per_series.emplace_back(ns.name, std::move(r));
  }
  if (s.found) {
    s.reason = fmt::format("warmup ends after interval {}: the latest MSER-5 truncation of {} series, decided by '{}'",
                           s.truncation, series.size(), s.deciding_series);
  }
  return s;
}

Nanos warmup_interval(Nanos span) {
  constexpr std::int64_t kMs = 1'000'000;
  constexpr std::int64_t kTarget = 200;  // intervals: 40 MSER-5 batches
  const std::int64_t whole_ms = std::max<std::int64_t>(0, span.count()) / kTarget / kMs;
  return Nanos(std::max<std::int64_t>(10, whole_ms) * kMs);
}

WarmupDetection detect_warmup(RecordRange records, Nanos span_end) {
  WarmupDetection d;
  d.span_end = span_end;
  d.interval = warmup_interval(span_end);
  const std::int64_t w = d.interval.count();
  const std::size_t n = span_end.count() > 0 ? static_cast<std::size_t>(span_end.count() / w) : 0;
  d.intervals = n;
  const std::int64_t end = static_cast<std::int64_t>(n) * w;
  std::vector<double> completions(n, 0.0);
  std::vector<double> busy(n, 0.0);  // request-nanoseconds in flight
  std::vector<BoundedSamples> ttfts(n);
  const auto bin = [&](Nanos t) -> std::optional<std::size_t> {
    if (t.count() < 0 || t.count() >= end) return std::nullopt;
    return static_cast<std::size_t>(t.count() / w);
  };
  for (const auto& r : records) {
    if (!r.t_send) continue;
    if (r.ok() && r.t_done) {
      if (auto i = bin(*r.t_done)) completions[*i] += 1;
    }
    if (auto v = r.ttft(); v && r.ok()) {
      if (auto i = bin(*r.t_send)) ttfts[*i].add(static_cast<double>(v->count()) / 1e6);
    }
    // In flight over [t_send, t_done), clipped to the span.
    const std::int64_t a = std::max<std::int64_t>(0, r.t_send->count());
    const std::int64_t b = std::min<std::int64_t>(end, r.t_done ? r.t_done->count() : end);
    for (std::int64_t i = a / w; a < b && i * w < b; ++i) {
      const std::int64_t lo = std::max(a, i * w);
      const std::int64_t hi = std::min(b, (i + 1) * w);
      busy[static_cast<std::size_t>(i)] += static_cast<double>(hi - lo);
    }
  }
  const double secs = static_cast<double>(w) / 1e9;
  NamedSeries tput{"throughput", {}};
  NamedSeries ttft{"ttft", {}};
  NamedSeries inflight{"in_flight", {}};
  for (std::size_t i = 0; i < n; ++i) {
    tput.values.push_back(completions[i] / secs);
    auto& v = ttfts[i];
    if (v.empty()) {
      ttft.values.push_back(kNaN);
    } else {
      ttft.values.push_back(v.median());
    }
    inflight.values.push_back(busy[i] / static_cast<double>(w));
  }
  d.series = {std::move(tput), std::move(ttft), std::move(inflight)};
  d.summary = detect_steady_state(d.series);
  d.found = d.summary.found;
  if (d.found) d.start = Nanos(static_cast<std::int64_t>(d.summary.truncation) * w);
  return d;
}

TrendResult detect_growth(std::span<const double> series, const SaturationOptions& options, bool is_queue,
                          const char* name) {
  return trend(series, options, is_queue, name);
}

SaturationResult detect_saturation(std::span<const double> in_flight_or_queue, std::span<const double> ttft,
                                   const SaturationOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1) || !(options.min_relative_rise >= 0) || !(options.min_queue_rise >= 0)) {
    throw std::invalid_argument("detect_saturation: alpha must be in (0, 1) and the rises >= 0");
  }
  SaturationResult r;
  r.queue = trend(in_flight_or_queue, options, true, "in-flight");
  r.ttft = trend(ttft, options, false, "TTFT");
  r.saturated = r.queue.growing && r.ttft.growing;
  if (r.saturated) {
    r.reason = "over-loaded: requests in flight and TTFT both grow without bound over the measured intervals (" +
               r.queue.reason + "; " + r.ttft.reason + ")";
  } else if (r.queue.growing || r.ttft.growing) {
    r.reason = fmt::format("not saturated: only {} grows ({}; {})", r.queue.growing ? "in-flight" : "TTFT",
                           r.queue.reason, r.ttft.reason);
  } else {
    r.reason = "not saturated (" + r.queue.reason + "; " + r.ttft.reason + ")";
  }
  return r;
}

nlohmann::json to_json(const SteadyStateResult& r) {
  return {{"found", r.found},
          {"truncation_intervals", r.truncation},
          {"truncation_batches", r.truncation_batches},
          {"batches", r.batches},
          {"batch_size", r.batch_size},
          {"search_limit", r.search_limit},
          {"statistic", number_or_null(r.statistic)},
          {"reason", r.reason}};
}

nlohmann::json to_json(const SteadyStateSummary& s) {
  nlohmann::json per = nlohmann::json::object();
  for (const auto& [name, r] : s.per_series) per[name] = to_json(r);
  return {{"found", s.found},
          {"truncation_intervals", s.truncation},
          {"deciding_series", s.deciding_series},
          {"reason", s.reason},
          {"series", std::move(per)}};
}

nlohmann::json to_json(const SaturationResult& r) {
  const auto trend_json = [](const TrendResult& t) {
    return nlohmann::json{{"points", t.points},
                          {"slope", number_or_null(t.slope)},
                          {"slope_t", number_or_null(t.slope_t)},
                          {"p_value", number_or_null(t.p_value)},
                          {"start_level", number_or_null(t.start_level)},
                          {"end_level", number_or_null(t.end_level)},
                          {"growing", t.growing},
                          {"reason", t.reason}};
  };
  return {{"saturated", r.saturated}, {"queue", trend_json(r.queue)}, {"ttft", trend_json(r.ttft)}, {"reason", r.reason}};
}

nlohmann::json to_json(const WarmupDetection& d) {
  const double interval_s = static_cast<double>(d.interval.count()) / 1e9;
  nlohmann::json per = nlohmann::json::object();
  for (std::size_t k = 0; k < d.summary.per_series.size(); ++k) {
    const auto& [name, r] = d.summary.per_series[k];
    nlohmann::json values = nlohmann::json::array();
    if (k < d.series.size()) {
      for (double v : d.series[k].values) values.push_back(number_or_null(v));
    }
    per[name] = {{"found", r.found},
                 {"truncation_s", static_cast<double>(r.truncation) * interval_s},
                 {"truncation_intervals", r.truncation},
                 {"batches", r.batches},
                 {"reason", r.reason},
                 {"values", std::move(values)}};
  }
  return {{"method", "MSER-5"},
          {"interval_s", interval_s},
          {"intervals", d.intervals},
          {"span_end_s", static_cast<double>(d.span_end.count()) / 1e9},
          {"found", d.found},
          {"deciding_series", d.summary.deciding_series.empty() ? nlohmann::json(nullptr)
                                                                : nlohmann::json(d.summary.deciding_series)},
          {"start_s", static_cast<double>(d.start.count()) / 1e9},
          {"reason", d.summary.reason},
          {"series", std::move(per)}};
}

}  // namespace llmload::analysis
