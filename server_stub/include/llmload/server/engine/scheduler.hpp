#pragma once
// The iteration-level scheduler of the engine simulator, modelled on vLLM's (V1) scheduler:
//
// - FCFS waiting queue; at most max_num_seqs running; a per-step token budget
//   max_num_batched_tokens.
// - Each step first gives one decode token to every running request that has finished its
//   prefill (in admission order), then spends the rest of the budget on prefill chunks: running
//   requests still prefilling first, then waiting requests admitted in FCFS order (chunked
//   prefill). A waiting request is admitted only when free blocks hold its chunk; the queue head
//   blocks the rest (no reordering), and nobody is admitted in a step that preempted.
// - KV cache in blocks of block_size tokens. When a running request needs a new block and none
//   is free, the most recently admitted running request is preempted by recompute: its blocks
//   are freed, it goes back to the front of the waiting queue, and later recomputes its prompt
//   and the tokens it already generated (which are not sent again).
// - Optional prefix caching: full prompt blocks are keyed by a chained hash of their token ids;
//   a block whose request finished stays cached (evictable, LRU) until its memory is needed; a
//   new request starts after its longest cached prefix (at least one token is always computed).
//
// - LoRA (config.lora, engine/lora_cache.hpp): a waiting request of adapter A is admitted only
//   when A already has requests running or fewer than max_loras distinct adapters run; else it
//   is skipped (it keeps its place) and the requests behind it may go, as vLLM V1 does. Base
//   model requests are never held back. A step whose batch uses an adapter that is not in a GPU
//   slot pays its load (StepCost::lora_load_seconds): the whole batch waits for it, as vLLM's
//   worker loads adapters before it runs the model.
//
// - A request generates max_tokens tokens unless its OutputDecider (the output model,
//   output_sequence.hpp) ends it earlier (EOS); the decider is told the batch each token came from.
//
// Pure and deterministic: no clock, no threads. step() plans one step and applies its effects at
// once; the caller lets the step's time pass (cost.predicted_seconds, or a GPU) before it hands
// the emitted tokens out. Not thread-safe: one engine thread owns it.

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "llmload/server/engine/cost_model.hpp"
#include "llmload/server/engine/lora_cache.hpp"
#include "llmload/server/engine/step_cost.hpp"

namespace llmload::server {

struct SchedulerConfig {
  std::int64_t max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 2048;
  std::int64_t block_size = 16;
  std::int64_t num_blocks = 1024;
  bool enable_prefix_caching = true;
  EngineLoraConfig lora{};  ///< max_loras 0: no adapters
};

struct EngineRequest {
  std::uint64_t id = 0;
  std::int64_t prompt_tokens = 1;  ///< >= 1
  std::int64_t max_tokens = 1;     ///< >= 1; the request generates exactly this many
  /// Chained hashes of the prompt's full blocks (prompt_block_hashes()); empty: nothing cacheable.
  std::vector<std::uint64_t> block_hashes;
  /// The LoRA adapter (1-based id, engine/lora_cache.hpp) the request runs with; 0: the base model.
  std::int32_t lora = 0;
};

/// Decides, token by token, what a request generates and where it ends: the scheduler calls it
/// as each output token is produced, in order, once per token (tokens kept across a preemption
/// are not produced again). Called on the scheduler's thread only.
class OutputDecider {
 public:
  virtual ~OutputDecider() = default;
  /// Output token `index` is produced by a step that ran `batch` sequences (>= 1); the request
  /// has been preempted `preemptions` times before. Returns true when this is its last token
  /// (EOS); the scheduler also ends the request at max_tokens whatever this returns.
  virtual bool on_token(std::int64_t index, std::int64_t batch, std::int64_t preemptions) = 0;
};

/// Chained hashes of each full block of `token_ids` (block i's hash covers blocks 0..i), never 0.
std::vector<std::uint64_t> prompt_block_hashes(const std::vector<std::uint32_t>& token_ids, std::int64_t block_size);

/// Something that happened to a request in a step.
struct StepEvent {
  enum class Kind {
    kScheduled,  ///< first time the request got tokens in a step (its queue time ends); once per request
    kToken,      ///< output token `token_index` is produced at the end of the step
    kPreempted,  ///< preempted in this step (it keeps its tokens; nothing to send)
  };
  Kind kind = Kind::kToken;
  std::uint64_t id = 0;
  std::int64_t token_index = 0;  ///< kToken
  bool finished = false;         ///< kToken: this was the last token; the request is gone
  std::int64_t cached_tokens = 0;  ///< kScheduled: prompt tokens served from the prefix cache
};

struct Step {
  StepCost cost;  ///< predicted_seconds filled by the cost model
  std::vector<StepEvent> events;
  std::int64_t running = 0;  ///< after the step was planned
  std::int64_t waiting = 0;
  std::int64_t preemptions = 0;
  std::int64_t prefix_queried_tokens = 0;  ///< admissions in this step: prompt tokens looked up
  std::int64_t prefix_hit_tokens = 0;      ///< ... and found cached
  std::int64_t prompt_tokens_computed = 0; ///< first-time prompt tokens finished (vllm:prompt_tokens_total)
  std::int64_t batch = 0;  ///< sequences that computed tokens in the step (the running batch)
  std::vector<LoraLoad> lora_loads;  ///< adapters loaded into GPU slots before the step ran
};

struct SchedulerStats {
  std::int64_t running = 0;
  std::int64_t waiting = 0;
  std::int64_t used_blocks = 0;  ///< held by requests (cached blocks nobody holds count as free)
  std::int64_t num_blocks = 0;
  std::int64_t preemptions_total = 0;
  /// With LoRA on: the adapters (ids, ascending) that have running requests, and waiting ones.
  std::vector<std::int32_t> running_loras;
  std::vector<std::int32_t> waiting_loras;
  double kv_cache_usage() const {
    return num_blocks > 0 ? static_cast<double>(used_blocks) / static_cast<double>(num_blocks) : 0.0;
  }
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, CostModel cost_model);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Queues a request at the back of the waiting queue. Its whole length (prompt + max_tokens)
  /// must fit in the KV cache (the server checks max_model_len <= capacity). Ids are unique.
  /// `output`, when given, is told each token and may end the request before max_tokens.
  void add(const EngineRequest& request, std::shared_ptr<OutputDecider> output = nullptr);
  /// Forgets a request (the client went away): frees its blocks. Unknown ids are ignored.
  void abort(std::uint64_t id);
  bool has_work() const;
  /// Plans one step and applies it. Requires has_work().
  Step step();
  SchedulerStats stats() const;
  const SchedulerConfig& config() const { return config_; }
  const CostModel& cost_model() const { return cost_model_; }

 private:
  struct Request;
  class BlockPool;

  bool allocate_to(Request& r, std::int64_t tokens_after);
  void free_blocks(Request& r);
  void preempt(Request& victim, Step& step);
  struct Plan;
  void plan_running(Plan& plan, Step& step);
  void admit_waiting(Plan& plan, Step& step);
  bool lora_admissible(const Request& r, const std::vector<std::int32_t>& batch_loras) const;
  void load_loras(const std::vector<Request*>& planned, Step& step);
  void note_scheduled(Request& r, Step& step);

  SchedulerConfig config_;
  CostModel cost_model_;
  std::unique_ptr<BlockPool> pool_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  ///< in admission order: the back is preempted first
  std::int64_t preemptions_total_ = 0;
  LoraCache lora_cache_;
};

}  // namespace llmload::server
