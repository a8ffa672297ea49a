#pragma once
// The clock seam: core code never reads time itself, it is handed a Clock.

#include <chrono>

namespace llmload {

using MonoClock = std::chrono::steady_clock;
using TimePoint = std::chrono::time_point<MonoClock, std::chrono::nanoseconds>;
using Nanos = std::chrono::nanoseconds;

/// Source of monotonic time. Implementations must be monotonic (never go back).
/// Threading: now() may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

/// The real monotonic clock (std::chrono::steady_clock).
class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::time_point_cast<Nanos>(MonoClock::now()); }
};

/// A clock that moves only when told to; for tests. Not thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::seconds(1000))) : now_(start) {}
  TimePoint now() const override { return now_; }
  void advance(Nanos d) { now_ += d; }
  /// Moves to `t`; moving backwards is ignored (the clock is monotonic).
  void advance_to(TimePoint t) {
    if (t > now_) now_ = t;
  }

 private:
  TimePoint now_;
};

}  // namespace llmload
