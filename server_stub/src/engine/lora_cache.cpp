#include "llmload/server/engine/lora_cache.hpp"

#include <algorithm>

namespace llmload::server {

double lora_adapter_parameters(const ModelSpec& model, std::int64_t rank) {
  if (model.layers <= 0 || model.hidden_size <= 0 || rank <= 0) return 0;
  const auto layers = static_cast<double>(model.layers);
  const auto hidden = static_cast<double>(model.hidden_size);
  const double per_layer_sides = 7.0 * hidden + model.parameters / (layers * hidden);
  return static_cast<double>(rank) * per_layer_sides * layers;
}

double default_lora_load_seconds(double adapter_bytes) { return 0.002 + adapter_bytes / 25e9; }

double default_lora_disk_load_seconds(double adapter_bytes) { return 0.020 + adapter_bytes / 1e9; }

LoraCache::LoraCache(const EngineLoraConfig& config) : config_(config) {
  for (const auto adapter : config_.preloaded) {
    touch(cpu_, adapter);
    touch(gpu_, adapter);
    while (static_cast<std::int64_t>(cpu_.size()) > config_.max_cpu_loras) cpu_.pop_back();
    while (static_cast<std::int64_t>(gpu_.size()) > config_.max_loras) gpu_.pop_back();
  }
  // An adapter leaves the GPU when it leaves CPU memory (vLLM's remove_adapter deactivates it).
  gpu_.remove_if([this](std::int32_t a) { return !contains(cpu_, a); });
}

bool LoraCache::contains(const std::list<std::int32_t>& lru, std::int32_t adapter) {
  return std::find(lru.begin(), lru.end(), adapter) != lru.end();
}

void LoraCache::touch(std::list<std::int32_t>& lru, std::int32_t adapter) {
  const auto it = std::find(lru.begin(), lru.end(), adapter);
  if (it != lru.end()) {
    lru.splice(lru.begin(), lru, it);
  } else {
    lru.push_front(adapter);
  }
}

bool LoraCache::on_gpu(std::int32_t adapter) const { return contains(gpu_, adapter); }

bool LoraCache::in_cpu(std::int32_t adapter) const { return contains(cpu_, adapter); }

std::vector<LoraLoad> LoraCache::activate(const std::vector<std::int32_t>& active) {
  std::vector<LoraLoad> loads;
  // The step's adapters count as used first, so that making room never evicts one of them.
  for (const auto a : active) {
    if (contains(cpu_, a)) touch(cpu_, a);
    if (contains(gpu_, a)) touch(gpu_, a);
  }
  for (const auto a : active) {
    if (contains(gpu_, a)) continue;
    const bool from_disk = !contains(cpu_, a);
    if (from_disk) {
      touch(cpu_, a);
      while (static_cast<std::int64_t>(cpu_.size()) > config_.max_cpu_loras) {
        const std::int32_t evicted = cpu_.back();
        cpu_.pop_back();
        gpu_.remove(evicted);
      }
    }
    touch(gpu_, a);
    while (static_cast<std::int64_t>(gpu_.size()) > config_.max_loras) gpu_.pop_back();
    loads.push_back(LoraLoad{a, from_disk});
  }
  return loads;
}

void charge_lora(const EngineLoraConfig& config, StepCost& cost, const std::vector<LoraLoad>& loads,
                 std::size_t active_adapters, std::int64_t lora_tokens) {
  for (const auto& load : loads) {
    cost.lora_load_seconds += config.load_seconds + (load.from_disk ? config.disk_load_seconds : 0.0);
  }
  cost.lora_bytes += config.adapter_bytes * static_cast<double>(active_adapters);
  cost.linear_flops += 2.0 * config.adapter_parameters * static_cast<double>(lora_tokens);
}

}  // namespace llmload::server
