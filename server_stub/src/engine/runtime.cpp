#include "llmload/server/engine/runtime.hpp"

#include <stdexcept>

#include <spdlog/spdlog.h>

namespace llmload::server {

EngineClock::time_point RooflineStepTimer::run(const StepCost& cost, EngineClock::time_point start) {
  const auto end = start + std::chrono::duration_cast<EngineClock::duration>(
                               std::chrono::duration<double>(cost.predicted_seconds));
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

EngineRuntime::Admission EngineRuntime::submit(const EngineRequest& request, std::shared_ptr<EngineListener> listener) {
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
    inbox_.emplace_back(request, std::move(listener));
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
  std::vector<std::pair<EngineRequest, std::shared_ptr<EngineListener>>> arrivals;
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
    for (const auto id : cancels) {
      const auto it = tracked_.find(id);
      if (it == tracked_.end()) continue;
      if (!it->second.scheduled) waiting_.fetch_sub(1, std::memory_order_relaxed);
      tracked_.erase(it);
      scheduler_.abort(id);
    }
    cancels.clear();
    for (auto& [request, listener] : arrivals) {
      try {
        scheduler_.add(request);
        tracked_[request.id] = Tracked{std::move(listener), false};
      } catch (const std::exception& e) {
        waiting_.fetch_sub(1, std::memory_order_relaxed);
        listener->on_failed(e.what());
      }
    }
    arrivals.clear();
    if (!scheduler_.has_work()) {
      was_idle = true;
      continue;
    }

    const auto now = EngineClock::now();
    // A busy engine starts each step where the previous one ended (absolute timeline); after an
    // idle spell, or when the machine stalled us for longer than max_catch_up, from now.
    const EngineClock::time_point start = was_idle || now - timeline > options_.max_catch_up ? now : timeline;
    was_idle = false;
    const Step step = scheduler_.step();
    const EngineClock::time_point end = timer_->run(step.cost, start);
    timeline = end;

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
    if (observer_ != nullptr) observer_->on_step(step, start, end, scheduler_.stats());
  }
  // Stopping: whoever is still in the engine will get no more tokens.
  std::vector<std::pair<EngineRequest, std::shared_ptr<EngineListener>>> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(inbox_);
  }
  for (auto& [request, listener] : pending) listener->on_failed("the server is shutting down");
  for (auto& [id, t] : tracked_) t.listener->on_failed("the server is shutting down");
  tracked_.clear();
}

}  // namespace llmload::server
