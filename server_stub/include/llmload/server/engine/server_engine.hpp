#pragma once
// Builds the engine runtime of a server from its configuration: the profile's scheduler and cost
// model, the step timer chosen by --device (auto|cpu|cuda), and an observer that keeps the
// Prometheus metrics (vllm:*) up to date after every step. No Asio.

#include <memory>
#include <string>
#include <vector>

#include "llmload/server/engine/runtime.hpp"
#include "llmload/server/metrics.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

/// Runs on the engine thread after each step: scheduler gauges, token counters, preemptions,
/// prefix-cache counters, iteration tokens, and (with a GPU, sampled every 100 ms) power, energy,
/// and energy per step and per generated token over each sampling window. With LoRA on
/// (`lora_names` non-empty: the adapters' names by id - 1, or `lora` set), the adapter gauges
/// and load counters too.
class MetricsStepObserver final : public StepObserver {
 public:
  MetricsStepObserver(ServerMetrics& metrics, StepTimer& timer, bool lora = false,
                      std::vector<std::string> lora_names = {})
      : metrics_(metrics), timer_(timer), lora_(lora), lora_names_(std::move(lora_names)) {}
  void on_step(const Step& step, EngineClock::time_point start, EngineClock::time_point end,
               const SchedulerStats& stats) override;
  void on_state(const SchedulerStats& stats) override {
    metrics_.set_scheduler_state(stats.running, stats.waiting, stats.kv_cache_usage());
    note_loras(stats);
  }

 private:
  void note_loras(const SchedulerStats& stats);
  std::string lora_list(const std::vector<std::int32_t>& ids) const;

  ServerMetrics& metrics_;
  StepTimer& timer_;
  bool lora_;
  std::vector<std::string> lora_names_;
  EngineClock::time_point last_power_sample_{};
  bool sampled_ = false;
  double joules_at_sample_ = 0;
  std::int64_t steps_since_sample_ = 0;
  std::int64_t tokens_since_sample_ = 0;
};

struct ServerEngine {
  std::unique_ptr<MetricsStepObserver> observer;  ///< declared first: outlives the runtime's thread
  std::unique_ptr<EngineRuntime> runtime;
  std::string description;  ///< for the start-up log line: profile, capacity, device
};

/// The scheduler's settings for `profile`.
SchedulerConfig scheduler_config(const Profile& profile);

/// The engine's LoRA settings for `lora` on `profile`: slot counts, load times (the flags, else
/// lora_cache.hpp's defaults for the adapter size), adapter size and the start-up loads.
/// max_loras 0 when LoRA is off.
EngineLoraConfig engine_lora_config(const LoraConfig& lora, const Profile& profile);

/// Builds (does not start) the engine of `config` (its profile, or the default one). With
/// --device auto and no usable GPU the CPU roofline is used and the log says why; with --device
/// cuda and no usable GPU this throws std::runtime_error saying so.
ServerEngine make_server_engine(const ServerConfig& config, ServerMetrics& metrics);

}  // namespace llmload::server
