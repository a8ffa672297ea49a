#include "llmload/loadgen/pacer.hpp"

#include <deque>

namespace llmload {
namespace {

// The measurement window shared by both pacers: it starts with the first measured release (or
// at the end of a time warmup) and, for duration-bounded runs, lasts `window_duration_`.
class WindowedPacer : public Pacer {
 public:
  explicit WindowedPacer(std::optional<Nanos> window_duration) : window_duration_(window_duration) {}
  std::optional<TimePoint> window_start() const override { return window_start_; }
  std::optional<TimePoint> window_end() const override {
    if (!window_start_ || !window_duration_) return std::nullopt;
    return *window_start_ + *window_duration_;
  }

 protected:
  std::optional<Nanos> window_duration_;
  std::optional<TimePoint> window_start_;
};

class OpenLoopPacer final : public WindowedPacer {
 public:
  OpenLoopPacer(Schedule schedule, std::optional<std::int64_t> max_inflight, std::optional<Nanos> window_duration,
                WarmupSpec warmup)
      : WindowedPacer(window_duration), schedule_(std::move(schedule)), max_inflight_(max_inflight), warmup_(warmup) {}

  void begin(TimePoint start) override { start_ = start; }

  std::optional<Release> next(TimePoint now) override {
    if (exhausted()) return std::nullopt;
    const TimePoint due = start_ + schedule_.arrivals[next_];
    if (due > now) return std::nullopt;
    if (max_inflight_ && in_flight_ >= *max_inflight_) return std::nullopt;
    const bool warm = static_cast<std::int64_t>(next_) < schedule_.warmup_requests;
    if (!warm && !window_start_) {
      window_start_ = warmup_.by_time() ? start_ + warmup_.duration : due;
    }
    ++in_flight_;
    return Release{next_++, due, warm};
  }

  std::optional<TimePoint> wake_time() const override {
    if (exhausted()) return std::nullopt;
    if (max_inflight_ && in_flight_ >= *max_inflight_) return std::nullopt;
    return start_ + schedule_.arrivals[next_];
  }

  void on_complete(TimePoint) override {
    if (in_flight_ > 0) --in_flight_;
  }
  bool exhausted() const override { return stopped_ || next_ >= schedule_.arrivals.size(); }
  void stop() override { stopped_ = true; }

 private:
  Schedule schedule_;
  std::optional<std::int64_t> max_inflight_;
  WarmupSpec warmup_;
  TimePoint start_{};
  std::size_t next_ = 0;
  std::int64_t in_flight_ = 0;
  bool stopped_ = false;
};

class ClosedLoopPacer final : public WindowedPacer {
 public:
  ClosedLoopPacer(std::int64_t concurrency, std::optional<std::int64_t> num_requests,
                  std::optional<Nanos> window_duration, WarmupSpec warmup)
      : WindowedPacer(window_duration), concurrency_(concurrency), num_requests_(num_requests), warmup_(warmup) {}

  void begin(TimePoint start) override {
    start_ = start;
    // Every slot is free at the start.
    for (std::int64_t i = 0; i < concurrency_; ++i) free_since_.push_back(start);
  }

  std::optional<Release> next(TimePoint now) override {
    if (exhausted() || free_since_.empty()) return std::nullopt;
    const TimePoint intended = free_since_.front();
    bool warm = warmup_.by_time() ? intended < start_ + warmup_.duration
                                  : static_cast<std::int64_t>(next_) < warmup_.requests;
    if (!warm && !window_start_) window_start_ = warmup_.by_time() ? start_ + warmup_.duration : intended;
    if (!warm) {
      if (auto end = window_end(); end && now >= *end) {
        done_ = true;
        return std::nullopt;
      }
      if (num_requests_ && measured_ >= *num_requests_) {
        done_ = true;
        return std::nullopt;
      }
      ++measured_;
    }
    free_since_.pop_front();
    return Release{next_++, intended, warm};
  }

  std::optional<TimePoint> wake_time() const override {
    // Time-bounded runs end at the window's end even if no completion arrives.
    if (exhausted()) return std::nullopt;
    return std::nullopt;
  }

  void on_complete(TimePoint now) override {
    if (!exhausted()) free_since_.push_back(now);
  }
  bool exhausted() const override { return stopped_ || done_; }
  void stop() override { stopped_ = true; }

 private:
  std::int64_t concurrency_;
  std::optional<std::int64_t> num_requests_;
  WarmupSpec warmup_;
  TimePoint start_{};
  std::deque<TimePoint> free_since_;
  std::uint64_t next_ = 0;
  std::int64_t measured_ = 0;
  bool stopped_ = false;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<Pacer> make_open_loop_pacer(Schedule schedule, std::optional<std::int64_t> max_inflight,
                                            std::optional<Nanos> window_duration, WarmupSpec warmup) {
  return std::make_unique<OpenLoopPacer>(std::move(schedule), max_inflight, window_duration, warmup);
}

std::unique_ptr<Pacer> make_closed_loop_pacer(std::int64_t concurrency, std::optional<std::int64_t> num_requests,
                                              std::optional<Nanos> window_duration, WarmupSpec warmup) {
  return std::make_unique<ClosedLoopPacer>(concurrency, num_requests, window_duration, warmup);
}

std::unique_ptr<Pacer> make_pacer(const ScenarioConfig& cfg) {
  if (cfg.open_loop()) {
    return make_open_loop_pacer(build_schedule(cfg), cfg.kind == ScenarioKind::kOffline ? cfg.max_inflight : std::nullopt,
                                cfg.duration, cfg.warmup);
  }
  const std::int64_t c = cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency;
  return make_closed_loop_pacer(c, cfg.num_requests, cfg.duration, cfg.warmup);
}

}  // namespace llmload
