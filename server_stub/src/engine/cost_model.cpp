#include "llmload/server/engine/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace llmload::server {

CostModel::CostModel(const Profile& profile)
    : weight_bytes_(profile.model.weight_bytes),
      parameters_(profile.model.parameters),
      kv_bytes_per_token_(profile.model.kv_bytes_per_token()),
      attention_flops_per_pair_(4.0 * static_cast<double>(profile.model.hidden_size) *
                                static_cast<double>(profile.model.layers)),
      bandwidth_(profile.efficiency.bandwidth * profile.total_bandwidth()),
      flops_(profile.efficiency.compute * profile.total_flops()),
      sharpness_(profile.efficiency.roofline_sharpness),
      fixed_seconds_(static_cast<double>(profile.efficiency.step_overhead.count()) / 1e9) {}

void CostModel::add(StepCost& cost, std::int64_t context_before, std::int64_t new_tokens, bool decode) const {
  if (new_tokens <= 0) return;
  const auto c = static_cast<double>(context_before);
  const auto n = static_cast<double>(new_tokens);
  cost.tokens += new_tokens;
  if (decode) {
    cost.decode_tokens += new_tokens;
  } else {
    cost.prefill_tokens += new_tokens;
  }
  // Attention reads the KV of everything before and of the new tokens themselves.
  cost.kv_bytes += (c + n) * kv_bytes_per_token_;
  cost.linear_flops += 2.0 * parameters_ * n;
  // Causal: new token i (0-based) attends to c + i + 1 keys.
  cost.attention_flops += attention_flops_per_pair_ * (n * c + n * (n + 1.0) / 2.0);
}

void CostModel::finish(StepCost& cost) const {
  cost.weight_bytes = weight_bytes_;
  cost.predicted_seconds = seconds(cost);
}

double CostModel::gmax(double a, double b) const {
  if (sharpness_ <= 0) return std::max(a, b);
  const double hi = std::max(a, b);
  if (hi <= 0) return 0;
  // Scaled to avoid overflow: hi x ((a/hi)^p + (b/hi)^p)^(1/p).
  return hi * std::pow(std::pow(a / hi, sharpness_) + std::pow(b / hi, sharpness_), 1.0 / sharpness_);
}

double CostModel::seconds(const StepCost& cost) const {
  if (cost.tokens <= 0) return 0;
  const double memory = (weight_bytes_ + cost.lora_bytes + cost.kv_bytes) / bandwidth_;
  const double compute = cost.linear_flops / flops_;
  return fixed_seconds_ + gmax(memory, compute) + cost.attention_flops / flops_ + cost.lora_load_seconds;
}

double CostModel::linear_seconds(std::int64_t tokens) const {
  return gmax(weight_bytes_ / bandwidth_, 2.0 * parameters_ * static_cast<double>(tokens) / flops_);
}

}  // namespace llmload::server
