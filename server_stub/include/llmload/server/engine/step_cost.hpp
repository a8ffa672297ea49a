#pragma once
// What one engine step costs: the work a step does, in the units a roofline model or a GPU needs.
// Produced by the scheduler for each step (engine/scheduler.hpp), consumed by a step timer: the
// CPU roofline model predicts its duration, the CUDA step runner (server_stub/gpu) runs kernels
// of that size and takes what the GPU takes.

#include <cstdint>

namespace llmload::server {

struct StepCost {
  std::int64_t tokens = 0;          ///< tokens processed in the step (decodes + prefill chunk tokens)
  std::int64_t decode_tokens = 0;   ///< of which decodes (one per decoding request)
  std::int64_t prefill_tokens = 0;  ///< of which prompt (prefill / recompute) tokens
  double weight_bytes = 0;          ///< model weights read once per step (all devices together)
  double kv_bytes = 0;              ///< KV-cache bytes read by attention in the step
  double linear_flops = 0;          ///< 2 x parameters x tokens
  double attention_flops = 0;       ///< causal attention scores and mixing (QK^T, AV)
  double lora_bytes = 0;            ///< LoRA adapter weights read in the step (each active adapter once)
  double lora_load_seconds = 0;     ///< loading adapters into GPU slots before the step (lora_cache.hpp)
  double predicted_seconds = 0;     ///< the roofline model's duration (0 when not computed)
};

}  // namespace llmload::server
