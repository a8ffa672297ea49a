#pragma once
// Runs the engine scheduler on virtual time: no clock, no sleeping, no threads. Steps take
// exactly the cost model's time. Used by the unit tests of the engine's behaviour and by anyone
// who wants the model's answer for a workload without running a server.

#include <cstdint>
#include <memory>
#include <vector>

#include "llmload/server/engine/scheduler.hpp"

namespace llmload::server {

struct SimArrival {
  double time_s = 0;  ///< arrival time; arrivals must be given in non-decreasing time order
  EngineRequest request;
};

struct SimRequest {
  std::uint64_t id = 0;
  double arrival_s = 0;
  double scheduled_s = -1;           ///< first step that gave it tokens began (queue time ends)
  std::vector<double> token_times;   ///< when each output token was produced (end of its step)
  std::int64_t preemptions = 0;
  std::int64_t cached_tokens = 0;
  double ttft() const { return token_times.empty() ? -1 : token_times.front() - arrival_s; }
  double queue_time() const { return scheduled_s - arrival_s; }
  /// Mean time per output token after the first: (last - first) / (n - 1); 0 for one token.
  double tpot() const;
  /// Gaps between consecutive tokens.
  std::vector<double> itls() const;
};

struct SimStep {
  double start_s = 0;
  double seconds = 0;
  StepCost cost;
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  std::int64_t preemptions = 0;
  double kv_cache_usage = 0;
  std::vector<LoraLoad> lora_loads;  ///< adapters loaded before the step ran
};

struct SimResult {
  std::vector<SimRequest> requests;  ///< in the order of the arrivals
  std::vector<SimStep> steps;
  std::int64_t preemptions_total = 0;
  std::int64_t prefix_hit_tokens = 0;
  std::int64_t prefix_queried_tokens = 0;
  double end_s = 0;
};

/// Plays `arrivals` through a scheduler made from `config` and `cost`. Request ids must be unique.
SimResult simulate(const SchedulerConfig& config, const CostModel& cost, const std::vector<SimArrival>& arrivals);

/// The same with an OutputDecider per request (the output model: the answer, EOS, divergence):
/// `outputs[i]` (null: none) for arrivals[i]; `outputs` is empty or as long as `arrivals`.
SimResult simulate(const SchedulerConfig& config, const CostModel& cost, const std::vector<SimArrival>& arrivals,
                   const std::vector<std::shared_ptr<OutputDecider>>& outputs);

}  // namespace llmload::server
