#include "llmload/analysis/overload.hpp"
#include "numeric.hpp"
#include "llmload/analysis/stats.hpp"
#include "llmload/common/duration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace llmload::analysis {
namespace {

constexpr double kNormalDegreesOfFreedom = 1e6;  // Student-t that is the normal distribution

// Time-averaged requests in flight (t_send to t_done) per interval of [w0, w0 + n x dt).
std::vector<double> in_flight_series(RecordRange records, Nanos w0, Nanos w1, Nanos dt, std::size_t n) {
  std::vector<double> busy(n, 0.0);  // request-nanoseconds per interval
  for (const auto& r : records) {
    if (!r.t_send) continue;
    const Nanos a = std::max(*r.t_send, w0);
    const Nanos b = std::min(r.t_done.value_or(w1), w1);
    if (b <= a) continue;
    auto k = static_cast<std::size_t>((a - w0) / dt);
    for (; k < n; ++k) {
      const Nanos lo = std::max(a, w0 + dt * static_cast<std::int64_t>(k));
      const Nanos hi = std::min(b, w0 + dt * static_cast<std::int64_t>(k + 1));
      if (hi <= lo) break;
      busy[k] += static_cast<double>((hi - lo).count());
    }
  }
  for (double& v : busy) v /= static_cast<double>(dt.count());
  return busy;
}

// The rise of requests in flight (last quarter's mean over the first's) that a stationary load
// reaches by chance with probability alpha. In flight is a count with variance about its mean L
// (Poisson: arrivals independent of each other), and a request stays in flight for the mean E2E
// tau, so the average over a quarter of T seconds varies by L x tau / T (tau <= T) and the
// difference of two quarters by twice that: the rise must exceed z(1 - alpha) x sqrt(2 L tau / T),
// and at least min_queue_rise. Short windows of a few seconds, as a capacity search runs, would
// otherwise read the ordinary wandering of a few requests as growth.
double in_flight_noise_rise(const std::vector<double>& series, double mean_e2e_s, double quarter_s,
                            const OverloadOptions& o) {
  if (series.empty() || !std::isfinite(mean_e2e_s) || quarter_s <= 0) return o.min_queue_rise;
  double level = 0;
  for (double v : series) level += v;
  level /= static_cast<double>(series.size());
  const double z = student_t_quantile(1 - o.alpha, kNormalDegreesOfFreedom);
  const double noise = z * std::sqrt(2 * level * std::min(1.0, mean_e2e_s / quarter_s));
  return std::max(o.min_queue_rise, noise);
}

// The chance rise of a sampled queue (the server's waiting count, a sample a second). Near
// capacity a stationary queue wanders slowly, over many samples: the difference of two quarter
// means of m samples varies by 2 s^2 (1 + r) / ((1 - r) m), with s^2 the variance of the series
// around its straight-line fit and r their lag-1 autocorrelation (AR(1)). Taken around the fit,
// a queue that really builds keeps a small s^2 and is still found.
double sampled_queue_noise_rise(const std::vector<double>& q, const OverloadOptions& o) {
  const std::size_t n = q.size();
  if (n < 8) return 0;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += static_cast<double>(i);
    my += q[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (static_cast<double>(i) - mx) * (q[i] - my);
    sxx += (static_cast<double>(i) - mx) * (static_cast<double>(i) - mx);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  std::vector<double> e(n);
  for (std::size_t i = 0; i < n; ++i) e[i] = q[i] - (my + slope * (static_cast<double>(i) - mx));
  double var = 0, cov = 0;
  for (std::size_t i = 0; i < n; ++i) var += e[i] * e[i];
  for (std::size_t i = 1; i < n; ++i) cov += e[i] * e[i - 1];
  if (var <= 0) return 0;
  const double r = std::clamp(cov / var, 0.0, 0.95);
  var /= static_cast<double>(n - 2);
  const double m = static_cast<double>(n / 4);
  const double z = student_t_quantile(1 - o.alpha, kNormalDegreesOfFreedom);
  return z * std::sqrt(2 * var * (1 + r) / (1 - r) / m);
}

}  // namespace

OverloadCheck detect_overload(RecordRange records, Nanos w0, Nanos w1,
                              std::span<const QueueSample> server_waiting, const OverloadOptions& o) {
  OverloadCheck c;
  c.window_s = to_seconds(w1 - w0);
  c.completion_ratio = c.mean_e2e_s = kNaN;
  const Nanos dt = std::max(o.min_interval, (w1 - w0) / static_cast<std::int64_t>(std::max<std::size_t>(o.intervals, 1)));
  const auto n = dt.count() > 0 ? static_cast<std::size_t>((w1 - w0) / dt) : 0;
  c.interval_s = to_seconds(dt);
  SaturationOptions g;
  g.alpha = o.alpha;
  g.min_relative_rise = o.min_relative_rise;
  g.min_queue_rise = o.min_queue_rise;
  if (w1 <= w0 || n < g.min_points) {
    c.reason = fmt::format("window of {:.2f} s: too short to judge over-load ({} intervals of {:.2f} s)", c.window_s, n,
                           c.interval_s);
    return c;
  }
  c.checked = true;
  double e2e_sum = 0;
  std::int64_t e2e_n = 0;
  for (const auto& r : records) {
    if (r.t_intended >= w0 && r.t_intended <= w1) ++c.arrivals;
    if (r.t_done && *r.t_done >= w0 && *r.t_done <= w1) ++c.completions;
    if (!r.warmup && r.in_window && r.ok()) {
      if (auto e = r.e2e()) {
        e2e_sum += to_seconds(*e);
        ++e2e_n;
      }
    }
  }
  if (c.arrivals > 0) c.completion_ratio = static_cast<double>(c.completions) / static_cast<double>(c.arrivals);
  if (e2e_n > 0) c.mean_e2e_s = e2e_sum / static_cast<double>(e2e_n);
  c.completion_ratio_checked =
      std::isfinite(c.completion_ratio) && std::isfinite(c.mean_e2e_s) && c.window_s >= o.completion_window_e2e * c.mean_e2e_s;
  c.in_flight_series = in_flight_series(records, w0, w1, dt, n);
  c.in_flight_needed_rise = std::max(in_flight_noise_rise(c.in_flight_series, c.mean_e2e_s, c.window_s / 4, o),
                                     sampled_queue_noise_rise(c.in_flight_series, o));
  SaturationOptions in_flight_options = g;
  in_flight_options.min_queue_rise = c.in_flight_needed_rise;
  c.in_flight = detect_growth(c.in_flight_series, in_flight_options, true, "in flight");
  if (!server_waiting.empty()) {
    std::vector<double> q;
    for (const auto& s : server_waiting) {
      if (s.t_s >= to_seconds(w0) && s.t_s <= to_seconds(w1)) q.push_back(s.waiting);
    }
    if (q.size() >= g.min_points) {
      c.server_waiting_checked = true;
      // Our waiting requests are also in flight: a rise in flight may show by chance may show
      // there too, so it needs at least in flight's rise and its own sampled wandering.
      c.server_waiting_needed_rise = std::max(c.in_flight_needed_rise, sampled_queue_noise_rise(q, o));
      SaturationOptions waiting_options = g;
      waiting_options.min_queue_rise = c.server_waiting_needed_rise;
      c.server_waiting = detect_growth(q, waiting_options, true, "server waiting queue");
    }
  }
  std::vector<std::string> why;
  if (c.in_flight.growing) why.push_back(c.in_flight.reason);
  if (c.server_waiting_checked && c.server_waiting.growing) why.push_back(c.server_waiting.reason);
  if (c.completion_ratio_checked && c.completion_ratio < o.min_completion_ratio) {
    why.push_back(fmt::format("{} of {} requests arriving in the window completed in it ({:.1f}%, below {:.0f}%; mean "
                              "E2E {:.3f} s in a {:.1f} s window)",
                              c.completions, c.arrivals, 100 * c.completion_ratio, 100 * o.min_completion_ratio,
                              c.mean_e2e_s, c.window_s));
  }
  c.overloaded = !why.empty();
  if (c.overloaded) {
    c.reason = "over-loaded: " + why.front();
    for (std::size_t i = 1; i < why.size(); ++i) c.reason += "; " + why[i];
  } else {
    c.reason = fmt::format("not over-loaded: {}{}; completions/arrivals {:.3f}{}", c.in_flight.reason,
                           c.server_waiting_checked ? "; " + c.server_waiting.reason : std::string(),
                           c.completion_ratio, c.completion_ratio_checked ? "" : " (window too short for it to count)");
  }
  return c;
}

nlohmann::json to_json(const OverloadCheck& c) {
  auto trend = [](const TrendResult& t) {
    return nlohmann::json{{"growing", t.growing},
                          {"start_level", number_or_null(t.start_level)},
                          {"end_level", number_or_null(t.end_level)},
                          {"p_value", number_or_null(t.p_value)},
                          {"reason", t.reason}};
  };
  return {{"checked", c.checked},
          {"overloaded", c.overloaded},
          {"reason", c.reason},
          {"window_s", c.window_s},
          {"interval_s", c.interval_s},
          {"arrivals", c.arrivals},
          {"completions", c.completions},
          {"completion_ratio", number_or_null(c.completion_ratio)},
          {"completion_ratio_checked", c.completion_ratio_checked},
          {"mean_e2e_s", number_or_null(c.mean_e2e_s)},
          {"in_flight_needed_rise", c.checked ? nlohmann::json(c.in_flight_needed_rise) : nlohmann::json(nullptr)},
          {"in_flight", c.checked ? trend(c.in_flight) : nlohmann::json(nullptr)},
          {"server_waiting", c.server_waiting_checked ? trend(c.server_waiting) : nlohmann::json(nullptr)},
          {"server_waiting_needed_rise",
           c.server_waiting_checked ? nlohmann::json(c.server_waiting_needed_rise) : nlohmann::json(nullptr)}};
}

}  // namespace llmload::analysis
