// The engine runtime in real time (fast tiny-profile steps): many threads submitting and
// cancelling at once, every listener getting its tokens in order, the waiting limit, and stop()
// failing whoever is left. Runs under ThreadSanitizer in scripts/test.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "llmload/server/engine/runtime.hpp"
#include "llmload/server/engine/server_engine.hpp"

namespace llmload::server {
namespace {

class CountingListener final : public EngineListener {
 public:
  void on_scheduled(EngineClock::time_point, std::int64_t) override { scheduled.fetch_add(1); }
  void on_token(std::int64_t index, bool last, EngineClock::time_point at) override {
    std::lock_guard lock(mutex);
    if (index != tokens) out_of_order = true;
    if (tokens > 0 && at < last_at) out_of_order = true;
    last_at = at;
    ++tokens;
    if (last) {
      done = true;
      cv.notify_all();
    }
  }
  void on_preempted() override { preempted.fetch_add(1); }
  void on_failed(const std::string& r) override {
    std::lock_guard lock(mutex);
    failed = r;
    done = true;
    cv.notify_all();
  }
  bool wait(std::chrono::seconds limit) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, limit, [&] { return done; });
  }

  std::mutex mutex;
  std::condition_variable cv;
  std::int64_t tokens = 0;
  bool done = false;
  bool out_of_order = false;
  std::string failed;
  EngineClock::time_point last_at{};
  std::atomic<int> scheduled{0};
  std::atomic<int> preempted{0};
};

TEST(EngineRuntime, ManyThreadsSubmitAndCancelAndEveryoneGetsExactlyItsTokens) {
  Profile p = load_profile("tiny");
  p.engine.kv_cache_tokens = 1024;  // small: preemptions happen too
  p.engine.max_model_len = 512;
  EngineRuntimeOptions o;
  o.scheduler = scheduler_config(p);
  EngineRuntime rt(o, CostModel(p), std::make_unique<RooflineStepTimer>());
  rt.start();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::vector<std::shared_ptr<CountingListener>> listeners(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int k = t * kPerThread + i;
        listeners[static_cast<std::size_t>(k)] = std::make_shared<CountingListener>();
        EngineRequest r{static_cast<std::uint64_t>(k), 20 + k % 7, 30 + k % 11, {}};
        ASSERT_EQ(rt.submit(r, listeners[static_cast<std::size_t>(k)]), EngineRuntime::Admission::kQueued);
        if (k % 10 == 9) rt.cancel(static_cast<std::uint64_t>(k));  // a client that went away
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t k = 0; k < listeners.size(); ++k) {
    if (k % 10 == 9) continue;
    auto& l = *listeners[k];
    ASSERT_TRUE(l.wait(std::chrono::seconds(60))) << "request " << k;
    std::lock_guard lock(l.mutex);
    EXPECT_EQ(l.tokens, 30 + static_cast<std::int64_t>(k) % 11) << k;
    EXPECT_FALSE(l.out_of_order) << k;
    EXPECT_TRUE(l.failed.empty()) << l.failed;
    EXPECT_EQ(l.scheduled.load(), 1);
  }
  rt.stop();
  EXPECT_EQ(rt.waiting(), 0);
}

TEST(EngineRuntime, WaitingLimitRefusesBeyondItAndFreesPlacesWhenScheduled) {
  Profile p = load_profile("tiny");
  p.engine.max_num_seqs = 1;
  EngineRuntimeOptions o;
  o.scheduler = scheduler_config(p);
  o.max_waiting = 2;
  EngineRuntime rt(o, CostModel(p), std::make_unique<RooflineStepTimer>());
  // Not started: nothing leaves the queue.
  auto a = std::make_shared<CountingListener>();
  auto b = std::make_shared<CountingListener>();
  auto c = std::make_shared<CountingListener>();
  EXPECT_EQ(rt.submit(EngineRequest{1, 4, 5, {}}, a), EngineRuntime::Admission::kQueued);
  EXPECT_EQ(rt.submit(EngineRequest{2, 4, 5, {}}, b), EngineRuntime::Admission::kQueued);
  EXPECT_EQ(rt.submit(EngineRequest{3, 4, 5, {}}, c), EngineRuntime::Admission::kQueueFull);
  EXPECT_EQ(rt.waiting(), 2);
  rt.start();
  ASSERT_TRUE(a->wait(std::chrono::seconds(30)));
  ASSERT_TRUE(b->wait(std::chrono::seconds(30)));
  EXPECT_EQ(rt.waiting(), 0);
  EXPECT_EQ(rt.submit(EngineRequest{3, 4, 5, {}}, c), EngineRuntime::Admission::kQueued);
  ASSERT_TRUE(c->wait(std::chrono::seconds(30)));
}

TEST(EngineRuntime, StopFailsRequestsStillInTheEngine) {
  Profile p = load_profile("tiny");
  EngineRuntimeOptions o;
  o.scheduler = scheduler_config(p);
  EngineRuntime rt(o, CostModel(p), std::make_unique<RooflineStepTimer>());
  rt.start();
  auto l = std::make_shared<CountingListener>();
  rt.submit(EngineRequest{1, 10, 1000, {}}, l);  // ~1.2 s of steps
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  rt.stop();
  ASSERT_TRUE(l->wait(std::chrono::seconds(1)));
  std::lock_guard lock(l->mutex);
  EXPECT_NE(l->failed.find("shutting down"), std::string::npos);
  EXPECT_LT(l->tokens, 1000);
}

TEST(EngineRuntime, ACancelThatArrivesWithItsSubmitIsNotLost) {
  Profile p = load_profile("tiny");
  EngineRuntimeOptions o;
  o.scheduler = scheduler_config(p);
  EngineRuntime rt(o, CostModel(p), std::make_unique<RooflineStepTimer>());
  // Submit and cancel before the engine thread runs: both are taken in the same turn.
  auto gone = std::make_shared<CountingListener>();
  rt.submit(EngineRequest{1, 10, 500, {}}, gone);
  rt.cancel(1);
  auto next = std::make_shared<CountingListener>();
  rt.submit(EngineRequest{2, 10, 5, {}}, next);
  rt.start();
  ASSERT_TRUE(next->wait(std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard lock(gone->mutex);
    EXPECT_EQ(gone->tokens, 0) << "the cancelled request ran anyway";
  }
  EXPECT_EQ(rt.waiting(), 0);
}

/// A timer that breaks on its third step, as a GPU with a sticky CUDA error would.
class BreakingTimer final : public StepTimer {
 public:
  std::string_view name() const override { return "breaking"; }
  EngineClock::time_point run(const StepCost&, EngineClock::time_point start) override {
    if (++steps == 3) throw std::runtime_error("an illegal memory access was encountered");
    return start;
  }
  int steps = 0;
};

TEST(EngineRuntime, AFailingStepTimerFallsBackToTheRooflineAndRequestsStillFinish) {
  Profile p = load_profile("tiny");
  EngineRuntimeOptions o;
  o.scheduler = scheduler_config(p);
  EngineRuntime rt(o, CostModel(p), std::make_unique<BreakingTimer>());
  rt.start();
  auto l = std::make_shared<CountingListener>();
  rt.submit(EngineRequest{1, 10, 20, {}}, l);
  ASSERT_TRUE(l->wait(std::chrono::seconds(10)));
  std::lock_guard lock(l->mutex);
  EXPECT_EQ(l->tokens, 20);
  EXPECT_TRUE(l->failed.empty()) << l->failed;
}

TEST(EngineRuntime, RequestTooLargeForTheCacheFailsItsListenerOnly) {
  Profile p = load_profile("tiny");
  EngineRuntimeOptions o;
  o.scheduler = scheduler_config(p);
  EngineRuntime rt(o, CostModel(p), std::make_unique<RooflineStepTimer>());
  rt.start();
  auto big = std::make_shared<CountingListener>();
  auto ok = std::make_shared<CountingListener>();
  rt.submit(EngineRequest{1, 4000, 500, {}}, big);
  rt.submit(EngineRequest{2, 10, 3, {}}, ok);
  ASSERT_TRUE(big->wait(std::chrono::seconds(10)));
  ASSERT_TRUE(ok->wait(std::chrono::seconds(10)));
  EXPECT_NE(big->failed.find("KV blocks"), std::string::npos) << big->failed;
  EXPECT_EQ(ok->tokens, 3);
  EXPECT_EQ(rt.waiting(), 0);
}

/// A step timer that reports made-up power readings: 1 J per step.
class FakePowerTimer final : public StepTimer {
 public:
  std::string_view name() const override { return "fake"; }
  EngineClock::time_point run(const StepCost&, EngineClock::time_point start) override { return start; }
  bool power(double& watts, double& joules) override {
    watts = 350;
    joules = energy;
    return true;
  }
  double energy = 0;
};

TEST(MetricsStepObserver, ReportsPowerEnergyAndEnergyPerStepAndPerToken) {
  ServerMetrics metrics(MetricsLabels{"m"}, 1024, 16, 100);
  FakePowerTimer timer;
  MetricsStepObserver observer(metrics, timer);
  EXPECT_EQ(metrics.render().find("llmload:gpu_"), std::string::npos) << "no GPU lines before a reading";
  Step step;
  step.cost.tokens = 4;
  for (std::uint64_t id = 0; id < 4; ++id) step.events.push_back(StepEvent{StepEvent::Kind::kToken, id, 0, false, 0});
  SchedulerStats stats;
  EngineClock::time_point t{};
  // First sample at the first step, then 10 steps of 4 tokens over 150 ms, 1 J each.
  observer.on_step(step, t, t, stats);
  for (int i = 1; i <= 10; ++i) {
    timer.energy += 1.0;
    t += std::chrono::milliseconds(15);
    observer.on_step(step, t, t, stats);
  }
  const std::string text = metrics.render();
  EXPECT_NE(text.find("llmload:gpu_power_watts{engine=\"0\",model_name=\"m\"} 350.0"), std::string::npos) << text;
  // The window closed after 7 steps (105 ms): 7 J over 7 steps and 28 tokens.
  EXPECT_NE(text.find("llmload:gpu_energy_per_step_joules{engine=\"0\",model_name=\"m\"} 1.0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("llmload:gpu_energy_per_token_joules{engine=\"0\",model_name=\"m\"} 0.25"), std::string::npos)
      << text;
}

TEST(MetricsStepObserver, UpdatesTheVllmGaugesAndCountersEachStep) {
  ServerMetrics metrics(MetricsLabels{"m"}, 1024, 16, 100);
  RooflineStepTimer timer;
  MetricsStepObserver observer(metrics, timer);
  Step step;
  step.cost.tokens = 10;
  step.preemptions = 2;
  step.prefix_queried_tokens = 64;
  step.prefix_hit_tokens = 32;
  step.prompt_tokens_computed = 9;
  step.events.push_back(StepEvent{StepEvent::Kind::kToken, 1, 0, false, 0});
  SchedulerStats stats;
  stats.running = 3;
  stats.waiting = 5;
  stats.used_blocks = 25;
  stats.num_blocks = 100;
  observer.on_step(step, EngineClock::time_point{}, EngineClock::time_point{}, stats);
  const std::string t = metrics.render();
  const std::string l = "{engine=\"0\",model_name=\"m\"} ";
  for (const std::string& want : {"vllm:num_requests_running" + l + "3.0", "vllm:num_requests_waiting" + l + "5.0",
                                 "vllm:kv_cache_usage_perc" + l + "0.25", "vllm:num_preemptions_total" + l + "2.0",
                                 "vllm:prefix_cache_hits_total" + l + "32.0", "vllm:prompt_tokens_total" + l + "9.0",
                                 "vllm:generation_tokens_total" + l + "1.0"}) {
    EXPECT_NE(t.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(t.find("llmload:gpu_"), std::string::npos) << "the CPU timer has no power readings";
}

}  // namespace
}  // namespace llmload::server
