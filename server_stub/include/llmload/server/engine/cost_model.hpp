#pragma once
// The roofline step-time model of the engine simulator (docs/server.md, "Engine model"):
//
//   t_step = t_fixed + gmax( (W + L + KV) / (eta_bw x BW),  2 N T / (eta_f x F) ) + A / (eta_f x F)
//            + t_lora_loads
//
// W weight bytes, L the LoRA adapter bytes the step reads, KV the KV-cache bytes attention reads
// in the step, N parameters, T tokens in the step (the linear flops also hold the adapters'
// 2 x adapter parameters per adapter token), A the causal-attention flops, t_lora_loads the time
// the step spent loading adapters (engine/lora_cache.hpp), BW and F the devices' memory bandwidth and peak math
// rate. gmax(a, b) = (a^p + b^p)^(1/p), a generalized maximum; p = roofline_sharpness (0: plain
// max, the textbook roofline). A smooth knee matches measured GPUs far better than max() near the
// point where compute and memory balance (calibration in docs/server.md).

#include "llmload/server/engine/profile.hpp"
#include "llmload/server/engine/step_cost.hpp"

namespace llmload::server {

class CostModel {
 public:
  explicit CostModel(const Profile& profile);

  double kv_bytes_per_token() const { return kv_bytes_per_token_; }

  /// Adds a request's part of a step: `new_tokens` processed on top of `context_before` tokens
  /// already in its KV cache. Fills tokens, kv_bytes, linear and attention flops.
  void add(StepCost& cost, std::int64_t context_before, std::int64_t new_tokens, bool decode) const;

  /// Sets weight_bytes and predicted_seconds of a step whose parts have been added.
  void finish(StepCost& cost) const;

  /// The step time of `cost` (does not read predicted_seconds).
  double seconds(const StepCost& cost) const;

  /// Time of the non-attention layers for a step of `tokens` tokens with no KV reads and no fixed
  /// overhead: gmax(W / (eta_bw BW), 2 N T / (eta_f F)). What the calibration compares.
  double linear_seconds(std::int64_t tokens) const;

 private:
  double gmax(double a, double b) const;

  double weight_bytes_;
  double parameters_;
  double kv_bytes_per_token_;
  double attention_flops_per_pair_;  ///< 4 x hidden x layers: QK^T and AV for one (query, key) pair
  double bandwidth_;                 ///< eta_bw x BW, bytes/s
  double flops_;                     ///< eta_f x F, flop/s
  double sharpness_;
  double fixed_seconds_;
};

}  // namespace llmload::server
