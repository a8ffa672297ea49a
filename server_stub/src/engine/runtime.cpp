#include "llmload/server/engine/runtime.hpp"

#include <algorithm>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace llmload::server {

EngineClock::time_point RooflineStepTimer::run(const StepCost& cost, EngineClock::time_point start) {
  // Profiles bound a step far below this; the clamp keeps the conversion defined whatever happens.
  const double seconds = std::clamp(cost.predicted_seconds, 0.0, 3600.0);
  const auto end = start + std::chrono::duration_cast<EngineClock::duration>(std::chrono::duration<double>(seconds));
  std::this_thread::sleep_until(end);
  return end;
}

EngineRuntime::EngineRuntime(EngineRuntimeOptions options, CostModel cost, std::unique_ptr<StepTimer> timer,
                             StepObserver* observer)
    : options_(options), scheduler_(options.scheduler, std::move(cost)), timer_(std::move(timer)), observer_(observer) {
  if (!timer_) throw std::invalid_argument("engine runtime: a step timer is required");
}

EngineRuntime::~EngineRuntime() { stop(); }

void EngineRuntime::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void EngineRuntime::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

EngineRuntime::Admission EngineRuntime::submit(const EngineRequest& request, std::shared_ptr<EngineListener> listener,
                                               std::shared_ptr<OutputDecider> output) {
  if (options_.max_waiting > 0) {
    // Reserve a place; give it back if the queue was full.
    if (waiting_.fetch_add(1, std::memory_order_relaxed) >= options_.max_waiting) {
      waiting_.fetch_sub(1, std::memory_order_relaxed);
      return Admission::kQueueFull;
    }
  } else {
    waiting_.fetch_add(1, std::memory_order_relaxed);
  }
  {
    std::lock_guard lock(mutex_);
    inbox_.push_back(Arrival{request, std::move(listener), EngineClock::now(), std::move(output)});
  }
  wake_.notify_one();
  return Admission::kQueued;
}

void EngineRuntime::cancel(std::uint64_t id) {
  {
    std::lock_guard lock(mutex_);
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

void EngineRuntime::loop() {
  std::vector<Arrival> arrivals;
  std::vector<std::uint64_t> cancels;
  EngineClock::time_point timeline = EngineClock::now();  // end of the previous step
  bool was_idle = true;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (!scheduler_.has_work()) {
        wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !cancels_.empty(); });
      }
      if (stopping_) break;
      arrivals.swap(inbox_);
      cancels.swap(cancels_);
    }
    // Arrivals first: a cancel that came in the same turn as its submit must find the request.
    EngineClock::time_point latest_arrival{};
    for (auto& arrival : arrivals) {
      latest_arrival = std::max(latest_arrival, arrival.at);
      try {
        scheduler_.add(arrival.request, std::move(arrival.output));
        tracked_[arrival.request.id] = Tracked{std::move(arrival.listener), false};
      } catch (const std::exception& e) {
        waiting_.fetch_sub(1, std::memory_order_relaxed);
        arrival.listener->on_failed(e.what());
      }
    }
    for (const auto id : cancels) {
      const auto it = tracked_.find(id);
      if (it == tracked_.end()) continue;
      if (!it->second.scheduled) waiting_.fetch_sub(1, std::memory_order_relaxed);
      tracked_.erase(it);
      scheduler_.abort(id);
    }
    // The gauges follow arrivals and cancellations also when no step runs (an engine left idle
    // by cancellations would otherwise show its last batch forever).
    if (observer_ != nullptr && (!arrivals.empty() || !cancels.empty())) observer_->on_state(scheduler_.stats());
    arrivals.clear();
    cancels.clear();
    if (!scheduler_.has_work()) {
      was_idle = true;
      continue;
    }

    const auto now = EngineClock::now();
    // A busy engine starts each step where the previous one ended (absolute timeline); after an
    // idle spell, or when the machine stalled us for longer than max_catch_up, from now.
    EngineClock::time_point start = was_idle || now - timeline > options_.max_catch_up ? now : timeline;
    // A request never starts before it arrived (it may have come in after the previous step ended).
    start = std::max(start, latest_arrival);
    was_idle = false;
    const Step step = scheduler_.step();
    EngineClock::time_point end;
    try {
      end = timer_->run(step.cost, start);
    } catch (const std::exception& e) {
      // A GPU error is sticky: the runner cannot go on. The step still happens (on the model's
      // time) and so do the ones after it; the log says loudly that the timing changed.
      spdlog::error("engine step timer '{}' failed: {}; timing the remaining steps with the CPU roofline model",
                    timer_->name(), e.what());
      timer_ = std::make_unique<RooflineStepTimer>();
      end = timer_->run(step.cost, start);
    }
    timeline = end;
    // Metrics first: a client that has read a step's tokens finds them already counted in /metrics.
    if (observer_ != nullptr) observer_->on_step(step, start, end, scheduler_.stats());

    for (const auto& e : step.events) {
      const auto it = tracked_.find(e.id);
      if (it == tracked_.end()) continue;  // cancelled during the step
      Tracked& t = it->second;
      switch (e.kind) {
        case StepEvent::Kind::kScheduled:
          if (!t.scheduled) {
            t.scheduled = true;
            waiting_.fetch_sub(1, std::memory_order_relaxed);
          }
          t.listener->on_scheduled(start, e.cached_tokens);
          break;
        case StepEvent::Kind::kPreempted:
          t.listener->on_preempted();
          break;
        case StepEvent::Kind::kToken:
          t.listener->on_token(e.token_index, e.finished, end);
          if (e.finished) tracked_.erase(it);
          break;
      }
    }
  }
  // Stopping: whoever is still in the engine will get no more tokens.
  std::vector<Arrival> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(inbox_);
  }
  for (auto& a : pending) a.listener->on_failed("the server is shutting down");
  for (auto& [id, t] : tracked_) t.listener->on_failed("the server is shutting down");
  tracked_.clear();
}

}  // namespace llmload::server
