#include "llmload/analysis/validity.hpp"
#include "numeric.hpp"
#include "llmload/common/duration.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "llmload/analysis/hdr_histogram.hpp"
#include "llmload/analysis/stats.hpp"

namespace llmload::analysis {
namespace {



std::string seconds_text(Nanos d) { return fmt::format("{:.3f} s", to_seconds(d)); }

// The schedule lag of the window's successful requests, as the accumulator records it: the
// message reads it from the records, so a merge of shards (whose accumulator has no samples)
// words it alike.
HdrHistogram lag_histogram(RecordRange records) {
  HdrHistogram h(1, kHighestUs, 3);
  for (const auto& r : records) {
    if (r.warmup || !r.in_window || !r.ok()) continue;
    if (auto v = r.schedule_lag()) h.record(to_us(std::max(*v, Nanos(0))));
  }
  return h;
}

// The window's successful requests' values of one latency, in a histogram.
template <typename Get>
HdrHistogram view_histogram(RecordRange records, Get get) {
  HdrHistogram h(1, kHighestUs, 3);
  for (const auto& r : records) {
    if (r.warmup || !r.in_window || !r.ok()) continue;
    if (auto v = get(r)) h.record(to_us(*v));
  }
  return h;
}

}  // namespace

namespace {

// Requests that waited for an in-flight slot (--max-concurrency / --max-inflight): at their
// intended time `cap` requests were already in flight. Their lag is the cap's wait, which the
// response-time view is meant to show, not the client's lateness. By index into `records`.
std::vector<bool> held_by_cap(RecordRange records, std::optional<std::int64_t> cap) {
  std::vector<bool> held(records.size(), false);
  if (!cap) return held;
  // Open-loop releases go in intended order, so the requests ahead of one are those intended
  // before it; those not done by its intended time were in flight (or waiting ahead of it).
  std::vector<Nanos> intended;
  std::vector<Nanos> dones;
  intended.reserve(records.size());
  dones.reserve(records.size());
  for (const auto& r : records) {
    intended.push_back(r.t_intended);
    dones.push_back(r.t_done.value_or(Nanos::max()));
  }
  std::sort(intended.begin(), intended.end());
  std::sort(dones.begin(), dones.end());
  std::size_t i = 0;
  for (const auto& r : records) {
    const Nanos t = r.t_intended;
    const auto ahead = std::lower_bound(intended.begin(), intended.end(), t) - intended.begin();
    const auto ended = std::upper_bound(dones.begin(), dones.end(), t) - dones.begin();
    if (i < held.size()) held[i] = ahead - ended >= *cap;
    ++i;
  }
  return held;
}

}  // namespace

LagEffect schedule_lag_effect(const RunMetrics& m, RecordRange records,
                              std::optional<std::int64_t> max_inflight) {
  LagEffect e;
  if (!m.open_loop) return e;
  // The latencies as a client with no lag of its own would have measured them from the intended
  // time: the service view plus the cap's wait where a request waited for a slot.
  const std::vector<bool> held = held_by_cap(records, max_inflight);
  HdrHistogram rt_ttft(1, kHighestUs, 3), svc_ttft(1, kHighestUs, 3), rt_e2e(1, kHighestUs, 3), svc_e2e(1, kHighestUs, 3);
  std::size_t i = 0;
  for (const auto& r : records) {
    const bool was_held = i < held.size() && held[i];
    ++i;
    if (r.warmup || !r.in_window || !r.ok()) continue;
    const Nanos wait = was_held && r.schedule_lag() ? *r.schedule_lag() : Nanos(0);
    if (auto v = r.ttft()) svc_ttft.record(to_us(*v + wait));
    if (auto v = r.ttft_rt()) rt_ttft.record(to_us(*v));
    if (auto v = r.e2e()) svc_e2e.record(to_us(*v + wait));
    if (auto v = r.e2e_rt()) rt_e2e.record(to_us(*v));
    if (was_held) ++e.held_by_cap;
  }
  struct Pair {
    const char* name;
    const HdrHistogram& rt;
    const HdrHistogram& svc;
  };
  const Pair pairs[] = {{"TTFT", rt_ttft, svc_ttft}, {"E2E", rt_e2e, svc_e2e}};
  const char* without = e.held_by_cap > 0 ? "without the client's lag" : "from the actual one";
  for (const auto& p : pairs) {
    if (p.svc.total_count() == 0) continue;
    for (double q : {50.0, 90.0, 99.0}) {
      // A percentile the sample cannot bound (p99 of a few hundred requests) is no conclusion to
      // change; the lower percentiles still catch a large lag.
      const auto qe = estimate_quantile(p.svc, q);
      if (!qe.ci_valid) continue;
      const double rt_ms = static_cast<double>(p.rt.value_at_percentile(q)) / 1e3;
      const double svc_ms = static_cast<double>(p.svc.value_at_percentile(q)) / 1e3;
      const double shift = rt_ms - svc_ms;
      const double rel = svc_ms > 0 ? shift / svc_ms : 0;
      // A shift within the percentile's own 95% interval (the measurement's uncertainty at this
      // sample size) cannot change a conclusion drawn from it.
      const double half_ci_ms = static_cast<double>(qe.ci_high - qe.ci_low) / 2e3;
      const bool material = shift > kLagAbsoluteToleranceMs && rel > kLagRelativeTolerance && shift > half_ci_ms;
      // The message names the shift that decided, else the largest.
      if ((material && !e.moves_a_number) || (!e.moves_a_number && shift > e.largest_shift_ms)) {
        e.largest_shift_ms = shift;
        e.largest_relative = rel;
        e.largest = fmt::format("p{:g} {} {:.2f} ms from the intended send time vs {:.2f} ms {}", q, p.name, rt_ms,
                                svc_ms, without);
      }
      e.moves_a_number = e.moves_a_number || material;
    }
  }
  // With an in-flight cap the two views differ by the cap's wait by design: the verdict and the
  // send rate are the cap's, so only the numbers above are judged.
  if (max_inflight) return e;
  if (m.slo && m.slo->view == LatencyView::kResponse && m.slo->verdict != m.slo->service_view_verdict) {
    e.changes_the_verdict = true;
  }
  // Sent slower than scheduled: only where the span holds enough requests for the rate to mean
  // something, and only when the lag is what slowed it (a late request is sent at once).
  if (m.intended_send_rate > 0 && m.in_window >= 20 && m.late_fraction > 0.01 &&
      m.achieved_send_rate < kSendRateTolerance * m.intended_send_rate) {
    e.slows_the_rate = true;
  }
  return e;
}

std::string schedule_lag_remedy(std::optional<double> share) {
  const std::string spin =
      "raise --schedule-spin (e.g. --schedule-spin 1ms), or give llmload a real-time priority or its own core "
      "(chrt -f 50 / taskset)";
  const std::string split = "split the load over more client processes (--shard-count with llmload merge, or "
                            "llmload-mpi; docs/distributed.md)";
  if (!share) return fmt::format("remedies: if the client was idle, {}; if it was busy, {}", spin, split);
  if (*share < 0.5) {
    return fmt::format("the client used {:.0f}% of a core, so this is the operating system waking it late (timer "
                       "wake-up latency), not a saturated client: {}",
                       100.0 * *share, spin);
  }
  if (*share > 0.85) {
    return fmt::format("the client used {:.0f}% of a core (its event loop is one thread), so it was saturated: {}",
                       100.0 * *share, split);
  }
  return fmt::format("the client used {:.0f}% of a core: {}; if that does not help, {}", 100.0 * *share, spin, split);
}

// The validity verdict, MLPerf-style: every reason the run is INVALID (docs/statistics.md).
void judge_validity(RunMetrics& m, const ValidityOptions& o, RecordRange records) {
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
    const LagEffect effect = schedule_lag_effect(m, records, o.max_inflight);
    if (effect.material()) {
      const HdrHistogram lag = lag_histogram(records);
      std::string what;
      if (effect.changes_the_verdict) {
        what = fmt::format("it changed the SLO verdict ({} from the intended send times, {} from the actual ones)",
                           to_string(m.slo->verdict), to_string(m.slo->service_view_verdict));
      } else if (effect.slows_the_rate) {
        what = fmt::format("the requests went out at {:.2f}/s where the schedule asked for {:.2f}/s",
                           m.achieved_send_rate, m.intended_send_rate);
      } else {
        what = fmt::format("it moved a reported latency by {:.2f} ms ({:.0f}%): {}", effect.largest_shift_ms,
                           100.0 * effect.largest_relative, effect.largest);
      }
      add("schedule_lag",
          fmt::format("the client sent requests late enough to change the results: {} ({:.1f}% of requests started "
                      "more than 1 ms late; schedule lag p50 {:.3f} ms, p99 {:.3f} ms, max {:.3f} ms); {}",
                      what, 100.0 * m.late_fraction, static_cast<double>(lag.value_at_percentile(50)) / 1e3,
                      static_cast<double>(lag.value_at_percentile(99)) / 1e3, static_cast<double>(lag.max()) / 1e3,
                      schedule_lag_remedy(o.client_core_share)));
    }
  }
  bool met = true;
  if (o.check_samples) {
    m.validity_checks.emplace_back("too_few_samples");
    // Measured requests, failed ones included: a failure is judged by the error-rate check, and
    // never pushes a run sized at the floor under it by one.
    if (m.in_window < mn.required_samples) {
      met = false;
      add("too_few_samples",
          fmt::format("only {} measured requests: p{:g} needs at least {} (with fewer it is just the "
                      "maximum){}; measure at least {} requests (--num-requests, --min-requests or a longer "
                      "--duration)",
                      m.in_window, deciding, mn.required_samples, stopped, mn.required_samples));
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


}  // namespace llmload::analysis
