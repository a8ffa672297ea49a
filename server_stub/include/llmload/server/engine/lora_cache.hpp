#pragma once
// LoRA adapters in the engine simulator (docs/server.md, "LoRA adapters"), as vLLM's worker
// keeps them: max_loras GPU slots and max_cpu_loras adapters in CPU memory, both LRU. A step
// whose batch uses an adapter that is not in a GPU slot first loads it (from CPU memory, or
// from disk when it is not cached there either); the step takes that much longer. Adapter ids
// are 1-based (0 is the base model). Pure: no clock, no threads.

#include <cstdint>
#include <list>
#include <vector>

#include "llmload/server/engine/profile.hpp"
#include "llmload/server/engine/step_cost.hpp"

namespace llmload::server {

struct EngineLoraConfig {
  std::int64_t max_loras = 0;        ///< GPU slots = most distinct adapters running; 0: LoRA off
  std::int64_t max_cpu_loras = 0;    ///< adapters kept in CPU memory (>= max_loras)
  double load_seconds = 0;           ///< CPU memory -> a GPU slot
  double disk_load_seconds = 0;      ///< disk -> CPU memory, on top of load_seconds
  double adapter_bytes = 0;          ///< one adapter's weights, read once per step it runs in
  double adapter_parameters = 0;     ///< one adapter's parameters: 2 x this flops per token
  /// Adapters loaded at start-up, in order (vLLM loads --lora-modules when it starts): the last
  /// max_cpu_loras of them start in CPU memory, the last max_loras in GPU slots.
  std::vector<std::int32_t> preloaded;
  bool enabled() const { return max_loras > 0; }
};

/// The parameters and bf16 bytes of a rank-`rank` adapter on all seven linear modules (q, k, v,
/// o, gate, up, down) of every layer of `model`: r x (in + out) per module, where each module has
/// one side of hidden_size h, so the sum over a layer's modules is 7h + N / (layers x h).
double lora_adapter_parameters(const ModelSpec& model, std::int64_t rank);

/// Default load times: CPU -> GPU at 25 GB/s (PCIe) + 2 ms; disk -> CPU at 1 GB/s + 20 ms.
double default_lora_load_seconds(double adapter_bytes);
double default_lora_disk_load_seconds(double adapter_bytes);

/// One adapter a step had to load before it could run.
struct LoraLoad {
  std::int32_t adapter = 0;
  bool from_disk = false;  ///< it was not in CPU memory either
};

class LoraCache {
 public:
  explicit LoraCache(const EngineLoraConfig& config);

  /// Makes every adapter of `active` (distinct ids, at most max_loras) resident in a GPU slot,
  /// evicting the least recently used others; returns the loads that took (none for adapters
  /// that were resident). Every active adapter counts as used now.
  std::vector<LoraLoad> activate(const std::vector<std::int32_t>& active);

  bool on_gpu(std::int32_t adapter) const;
  bool in_cpu(std::int32_t adapter) const;

 private:
  static void touch(std::list<std::int32_t>& lru, std::int32_t adapter);
  static bool contains(const std::list<std::int32_t>& lru, std::int32_t adapter);

  EngineLoraConfig config_;
  std::list<std::int32_t> gpu_;  ///< front: most recently used
  std::list<std::int32_t> cpu_;
};

/// Adds a step's LoRA work to `cost`: the loads' time, one read of each active adapter's weights,
/// and 2 x adapter_parameters flops per token of an adapter request (`lora_tokens`).
void charge_lora(const EngineLoraConfig& config, StepCost& cost, const std::vector<LoraLoad>& loads,
                 std::size_t active_adapters, std::int64_t lora_tokens);

}  // namespace llmload::server
