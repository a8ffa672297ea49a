#pragma once
// The engine simulator in real time: one engine thread owns the Scheduler, takes requests from
// the io threads, runs step after step (each taking what its StepTimer says: the roofline's time
// on the CPU, or real kernels on a GPU), and hands each step's tokens to the requests' listeners
// when the step ends. No Asio here: listeners decide how to wake their connection.
//
// Threading: submit(), cancel(), waiting() and counters are called from any thread. Listener
// callbacks run on the engine thread, in step order; they must be quick and must not call back
// into the runtime. StepObserver callbacks run on the engine thread too.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "llmload/server/engine/scheduler.hpp"

namespace llmload::server {

using EngineClock = std::chrono::steady_clock;

/// Makes a step take its time.
class StepTimer {
 public:
  virtual ~StepTimer() = default;
  /// "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  /// Called on the engine thread when a step starts at `start` (the previous step's end, or now
  /// when the engine was idle). Returns when the step is over, with the step's end time. If it
  /// throws, the runtime logs the error and times this and later steps with the CPU roofline.
  virtual EngineClock::time_point run(const StepCost& cost, EngineClock::time_point start) = 0;
  /// Power and energy since start, when the timer can measure them (a GPU with NVML).
  virtual bool power(double& /*watts*/, double& /*joules*/) { return false; }
};

/// The CPU fallback: sleeps until start + the cost model's predicted time. Absolute deadlines, so
/// a late wake-up does not push every later step back.
class RooflineStepTimer final : public StepTimer {
 public:
  std::string_view name() const override { return "cpu"; }
  EngineClock::time_point run(const StepCost& cost, EngineClock::time_point start) override;
};

/// What happens to one request, in order: scheduled once, then tokens (preemptions may come in
/// between), the last with `last` set; or failed.
class EngineListener {
 public:
  virtual ~EngineListener() = default;
  virtual void on_scheduled(EngineClock::time_point at, std::int64_t cached_tokens) = 0;
  virtual void on_token(std::int64_t index, bool last, EngineClock::time_point at) = 0;
  virtual void on_preempted() = 0;
  /// The engine cannot serve the request (it is stopping, or the request was invalid).
  virtual void on_failed(const std::string& reason) = 0;
};

/// Sees every step (metrics): the step, when it started and ended, and the scheduler afterwards.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void on_step(const Step& step, EngineClock::time_point start, EngineClock::time_point end,
                       const SchedulerStats& stats) = 0;
  /// Requests arrived or left without a step (yet): the scheduler's state now.
  virtual void on_state(const SchedulerStats& /*stats*/) {}
};

struct EngineRuntimeOptions {
  SchedulerConfig scheduler;
  /// New requests waiting for their first step beyond this are refused (submit returns
  /// kQueueFull; the server answers 429). 0: no limit.
  std::int64_t max_waiting = 0;
  /// When the engine falls behind its own timeline by more than this (the machine stalled), the
  /// timeline restarts from now instead of racing to catch up.
  std::chrono::nanoseconds max_catch_up = std::chrono::milliseconds(5);
};

class EngineRuntime {
 public:
  EngineRuntime(EngineRuntimeOptions options, CostModel cost, std::unique_ptr<StepTimer> timer,
                StepObserver* observer = nullptr);
  ~EngineRuntime();  ///< stops the thread
  EngineRuntime(const EngineRuntime&) = delete;
  EngineRuntime& operator=(const EngineRuntime&) = delete;

  void start();
  /// Stops the engine thread; requests still in it get on_failed. Idempotent.
  void stop();

  enum class Admission { kQueued, kQueueFull };
  /// Queues a request (its id must be unique). The listener is kept until the last token,
  /// on_failed, or cancel(). `output` (optional) is the request's OutputDecider: it is called on
  /// the engine thread as each token is produced, before the listener hears of the token.
  Admission submit(const EngineRequest& request, std::shared_ptr<EngineListener> listener,
                   std::shared_ptr<OutputDecider> output = nullptr);
  /// The client went away: the request leaves the engine before its next step.
  void cancel(std::uint64_t id);

  /// Requests submitted that have not had their first step yet.
  std::int64_t waiting() const { return waiting_.load(std::memory_order_relaxed); }
  const SchedulerConfig& scheduler_config() const { return options_.scheduler; }

 private:
  void loop();

  EngineRuntimeOptions options_;
  Scheduler scheduler_;  // engine thread only
  std::unique_ptr<StepTimer> timer_;
  StepObserver* observer_;

  std::mutex mutex_;
  std::condition_variable wake_;
  struct Arrival {
    EngineRequest request;
    std::shared_ptr<EngineListener> listener;
    EngineClock::time_point at;  ///< when submit() was called
    std::shared_ptr<OutputDecider> output;
  };
  std::vector<Arrival> inbox_;                                                    // guarded by mutex_
  std::vector<std::uint64_t> cancels_;                                            // guarded by mutex_
  bool stopping_ = false;                                                         // guarded by mutex_

  struct Tracked {
    std::shared_ptr<EngineListener> listener;
    bool scheduled = false;
  };
  std::unordered_map<std::uint64_t, Tracked> tracked_;  // engine thread only
  std::atomic<std::int64_t> waiting_{0};
  std::thread thread_;
};

}  // namespace llmload::server
