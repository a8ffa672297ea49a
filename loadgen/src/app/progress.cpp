// The live progress line and the over-saturation watch: see progress.hpp.
#include "progress.hpp"

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "llmload/analysis/steady_state.hpp"
#include "llmload/common/duration.hpp"

namespace llmload::app {

namespace {

std::string ms_text(std::int64_t us) {
  const double ms = static_cast<double>(us) / 1e3;
  return ms >= 100 ? fmt::format("{:.0f}", ms) : fmt::format("{:.1f}", ms);
}

}  // namespace

RunMonitor::RunMonitor(RunController& controller, const Clock& clock, MonitorOptions options)
    : controller_(controller),
      clock_(clock),
      options_(std::move(options)),
      printer_(options_.progress_line, options_.log_interval) {}

RunMonitor::~RunMonitor() { finish(); }

void RunMonitor::observe(const analysis::RequestRecord& r) {
  ++done_;
  if (!r.ok()) {
    ++errors_;
  } else if (auto t = r.ttft(); t && !r.warmup) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(*t).count();
    ttft_.record(std::max<std::int64_t>(us, 1));
    tick_ttft_sum_ms_ += static_cast<double>(us) / 1e3;
    ++tick_ttft_n_;
    // A reasoning model's answer starts later than its first token: TTFO beside TTFT.
    if (auto o = r.ttfo(); o && r.reasoning_first()) {
      ttfo_.record(std::max<std::int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(*o).count(), 1));
    }
  }
}

void RunMonitor::check_saturation() {
  const Nanos elapsed = clock_.now() - controller_.start_time();
  bool changed = false;
  while (next_load_change_ < options_.load_changes.size() && elapsed >= options_.load_changes[next_load_change_]) {
    ++next_load_change_;
    changed = true;
  }
  if (changed) {  // a new stage: its own ramp, its own series
    in_flight_series_.clear();
    ttft_series_.clear();
  }
  in_flight_series_.push_back(static_cast<double>(controller_.in_flight()));
  ttft_series_.push_back(tick_ttft_n_ > 0 ? tick_ttft_sum_ms_ / static_cast<double>(tick_ttft_n_) : std::nan(""));
  tick_ttft_sum_ms_ = 0;
  tick_ttft_n_ = 0;
  if (saturation_ || (!options_.watch_saturation && (warned_ || !options_.warn))) return;
  // The first seconds are the ramp into the load: the test looks at the intervals after them,
  // and needs at least 10 (5 s at the 0.5 s tick) to tell growth from noise.
  constexpr std::size_t kSkip = 4;
  if (in_flight_series_.size() < kSkip + 12) return;
  const std::span<const double> q(in_flight_series_.data() + kSkip, in_flight_series_.size() - kSkip);
  const std::span<const double> t(ttft_series_.data() + kSkip, ttft_series_.size() - kSkip);
  // Tested again at every tick, so stricter than the post-run check (analysis/overload.hpp): only
  // a queue that at least doubles (and by 4 requests) with a clear slope stops the run. With the
  // defaults, a stable run with 4 requests in flight stopped after 110 s (4 -> 5 in flight,
  // TTFT 51 -> 84 ms); slower growth is left to the window's over-load check after the run.
  analysis::SaturationOptions strict;
  strict.alpha = 0.001;
  strict.min_relative_rise = 1.0;
  strict.min_queue_rise = 4;
  const auto s = analysis::detect_saturation(q, t, strict);
  if (!s.saturated) return;
  if (!options_.watch_saturation) {
    warned_ = true;
    finish();  // the live line, if drawn, is redrawn on the next tick below the warning
    options_.warn(fmt::format("the server is not keeping up with this load: requests in flight grew from {:.0f} to "
                              "{:.0f} and TTFT from {:.0f} to {:.0f} ms in {:.1f} s; the load is above what it "
                              "sustains (its capacity: `llmload sweep --find-capacity`)",
                              s.queue.start_level, s.queue.end_level, s.ttft.start_level, s.ttft.end_level,
                              static_cast<double>(in_flight_series_.size()) *
                                  std::chrono::duration<double>(kTick).count()));
    return;
  }
  saturation_ = fmt::format("over-saturated after {:.1f} s: requests in flight and TTFT both grew without bound "
                            "(in flight {:.0f} -> {:.0f}, TTFT {:.0f} -> {:.0f} ms); stopped releasing requests",
                            static_cast<double>(in_flight_series_.size()) * std::chrono::duration<double>(kTick).count(),
                            s.queue.start_level, s.queue.end_level, s.ttft.start_level, s.ttft.end_level);
  if (options_.stop) options_.stop(*saturation_);
}

std::string RunMonitor::line() const {
  const double elapsed = std::chrono::duration<double>(clock_.now() - controller_.start_time()).count();
  const double rate = rate_.rate();
  // An SLO-sized run counts to its next look (it may stop there, or double).
  std::optional<std::int64_t> planned = options_.planned_requests;
  const char* what = "";
  if (const auto* seq = controller_.sequential(); seq != nullptr && !seq->conclusive()) {
    planned = seq->next_look() + options_.warmup_requests;
    what = " to the next SLO look";
  }
  double eta = std::nan("");
  if (planned && rate > 0) {
    eta = static_cast<double>(std::max<std::int64_t>(*planned - done_, 0)) / rate;
  } else if (options_.planned_duration) {
    eta = std::max(0.0, std::chrono::duration<double>(*options_.planned_duration).count() - elapsed);
    // A minimum of requests keeps it issuing past the duration (a sweep's probes).
    if (options_.min_requests && rate > 0) {
      eta = std::max(eta, static_cast<double>(std::max<std::int64_t>(*options_.min_requests - done_, 0)) / rate);
    }
  }
  std::string done = planned ? fmt::format("{}/{}{}", done_, *planned, what) : fmt::format("{}", done_);
  std::string ttft = ttft_.total_count() > 0
                         ? fmt::format("TTFT p50 {} p99 {} ms", ms_text(ttft_.value_at_percentile(50)),
                                       ms_text(ttft_.value_at_percentile(99)))
                         : std::string("TTFT --");
  if (ttfo_.total_count() > 0) {
    ttft += fmt::format(" | TTFO p50 {} p99 {} ms", ms_text(ttfo_.value_at_percentile(50)),
                        ms_text(ttfo_.value_at_percentile(99)));
  }
  return fmt::format("{}{}done {} | {:.1f} req/s | in flight {} | errors {} | {} | {} elapsed, ETA {}",
                     options_.label, options_.label.empty() ? "" : " | ", done, rate, controller_.in_flight(),
                     errors_, ttft, clock_text(elapsed), clock_text(eta));
}

void RunMonitor::tick() {
  const double elapsed = std::chrono::duration<double>(clock_.now() - controller_.start_time()).count();
  rate_.add(elapsed, done_);  // the current rate: completions over the last 5 s (10 ticks)
  check_saturation();
  if (printer_.shows_anything()) printer_.show(line(), elapsed);
}

void RunMonitor::finish() { printer_.finish(); }

}  // namespace llmload::app
