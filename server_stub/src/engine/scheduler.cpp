#include "llmload/server/engine/scheduler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace llmload::server {

std::vector<std::uint64_t> prompt_block_hashes(const std::vector<std::uint32_t>& token_ids, std::int64_t block_size) {
  std::vector<std::uint64_t> out;
  if (block_size <= 0) return out;
  const auto bs = static_cast<std::size_t>(block_size);
  out.reserve(token_ids.size() / bs);
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis, chained over blocks
  for (std::size_t start = 0; start + bs <= token_ids.size(); start += bs) {
    for (std::size_t i = start; i < start + bs; ++i) {
      std::uint32_t id = token_ids[i];
      for (int b = 0; b < 4; ++b) {
        h ^= static_cast<std::uint8_t>(id & 0xffU);
        h *= 0x100000001b3ULL;
        id >>= 8;
      }
    }
    // Finalized (splitmix64) so that nearby chains spread; 0 means "not cached" in the pool.
    std::uint64_t z = h + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    out.push_back(z == 0 ? 1 : z);
  }
  return out;
}

/// KV blocks: free ones, and cached ones (full prompt blocks keyed by their chained hash). A
/// cached block held by nobody is evictable: it counts as free, and is reused (least recently
/// released first) when no plain free block is left.
class Scheduler::BlockPool {
 public:
  explicit BlockPool(std::int64_t num_blocks) : total_(num_blocks), free_(num_blocks) {}

  std::int64_t available() const { return free_ + static_cast<std::int64_t>(evictable_.size()); }
  std::int64_t used() const { return total_ - available(); }

  /// Takes one block for new KV; false when none is free or evictable.
  bool allocate() {
    if (free_ > 0) {
      --free_;
      return true;
    }
    if (evictable_.empty()) return false;
    cached_.erase(evictable_.front());
    evictable_.pop_front();
    return true;
  }

  /// Gives a block back: 0 = a plain block; else a cached block's hash.
  void release(std::uint64_t hash) {
    if (hash == 0) {
      ++free_;
      return;
    }
    auto it = cached_.find(hash);
    if (it == cached_.end()) {  // cannot happen: a held cached block is never evicted
      ++free_;
      return;
    }
    if (--it->second.refs == 0) {
      evictable_.push_back(hash);
      it->second.lru = std::prev(evictable_.end());
      it->second.evictable = true;
    }
  }

  /// How many leading hashes are cached, and how many of those are evictable right now.
  std::pair<std::int64_t, std::int64_t> lookup(const std::vector<std::uint64_t>& hashes) const {
    std::int64_t hits = 0;
    std::int64_t evictable = 0;
    for (const auto h : hashes) {
      const auto it = cached_.find(h);
      if (it == cached_.end()) break;
      ++hits;
      if (it->second.evictable) ++evictable;
    }
    return {hits, evictable};
  }

  /// Takes a reference on a cached block found by lookup().
  void acquire(std::uint64_t hash) {
    auto& e = cached_.at(hash);
    if (e.evictable) {
      evictable_.erase(e.lru);
      e.evictable = false;
    }
    ++e.refs;
  }

  /// Turns a plain block just filled with prompt tokens into a cached one (held once). False when
  /// that prefix is cached already (the block stays plain, as vLLM keeps the first copy).
  bool register_block(std::uint64_t hash) {
    if (cached_.count(hash) != 0) return false;
    cached_.emplace(hash, Entry{1, {}, false});
    return true;
  }

 private:
  struct Entry {
    std::int64_t refs = 0;
    std::list<std::uint64_t>::iterator lru;
    bool evictable = false;
  };
  std::int64_t total_;
  std::int64_t free_;
  std::list<std::uint64_t> evictable_;  ///< front: released longest ago
  std::unordered_map<std::uint64_t, Entry> cached_;
};

struct Scheduler::Request {
  EngineRequest spec;
  std::shared_ptr<OutputDecider> output;  ///< null: exactly spec.max_tokens tokens
  std::int64_t preemptions = 0;
  std::int64_t generated = 0;  ///< output tokens produced (and handed out) so far
  std::int64_t computed = 0;   ///< tokens whose KV is in the cache
  std::vector<std::uint64_t> blocks;  ///< held blocks: 0 plain, else the cached block's hash
  std::size_t registered = 0;  ///< blocks[0, registered) checked for the prefix cache
  bool scheduled_once = false;
  std::int64_t cached_tokens = 0;
  std::int64_t planned = 0;  ///< tokens planned in the step being built
  bool planned_decode = false;
  /// To emit output token `generated`, every token before it must be in the KV cache.
  std::int64_t target() const { return spec.prompt_tokens + generated; }
};

Scheduler::Scheduler(SchedulerConfig config, CostModel cost_model)
    : config_(config),
      cost_model_(std::move(cost_model)),
      pool_(std::make_unique<BlockPool>(config.num_blocks)),
      lora_cache_(config.lora) {
  if (config_.block_size < 1 || config_.num_blocks < 1 || config_.max_num_seqs < 1 ||
      config_.max_num_batched_tokens < 1) {
    throw std::invalid_argument("scheduler: block_size, num_blocks, max_num_seqs and max_num_batched_tokens must be >= 1");
  }
}

Scheduler::~Scheduler() = default;

void Scheduler::add(const EngineRequest& request, std::shared_ptr<OutputDecider> output) {
  if (request.prompt_tokens < 1 || request.max_tokens < 1) {
    throw std::invalid_argument("scheduler: a request needs prompt_tokens >= 1 and max_tokens >= 1");
  }
  if (request.lora < 0 || (request.lora > 0 && !config_.lora.enabled())) {
    throw std::invalid_argument("scheduler: request " + std::to_string(request.id) + " names LoRA adapter " +
                                std::to_string(request.lora) + " but the engine serves no adapters");
  }
  const std::int64_t need_blocks =
      (request.prompt_tokens + request.max_tokens + config_.block_size - 1) / config_.block_size;
  if (need_blocks > config_.num_blocks) {
    throw std::invalid_argument("scheduler: request " + std::to_string(request.id) + " needs " +
                                std::to_string(need_blocks) + " KV blocks, more than the cache has (" +
                                std::to_string(config_.num_blocks) + ")");
  }
  auto r = std::make_unique<Request>();
  r->spec = request;
  r->output = std::move(output);
  Request* raw = r.get();
  if (!requests_.emplace(request.id, std::move(r)).second) {
    throw std::invalid_argument("scheduler: duplicate request id " + std::to_string(request.id));
  }
  waiting_.push_back(raw);
}

void Scheduler::abort(std::uint64_t id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return;
  Request* r = it->second.get();
  free_blocks(*r);
  running_.erase(std::remove(running_.begin(), running_.end(), r), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), r), waiting_.end());
  requests_.erase(it);
}

bool Scheduler::has_work() const { return !running_.empty() || !waiting_.empty(); }

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.running = static_cast<std::int64_t>(running_.size());
  s.waiting = static_cast<std::int64_t>(waiting_.size());
  s.used_blocks = pool_->used();
  s.num_blocks = config_.num_blocks;
  s.preemptions_total = preemptions_total_;
  if (config_.lora.enabled()) {
    auto collect = [](auto begin, auto end, std::vector<std::int32_t>& out) {
      for (auto it = begin; it != end; ++it) {
        if ((*it)->spec.lora != 0) out.push_back((*it)->spec.lora);
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
    };
    collect(running_.begin(), running_.end(), s.running_loras);
    collect(waiting_.begin(), waiting_.end(), s.waiting_loras);
  }
  return s;
}

bool Scheduler::allocate_to(Request& r, std::int64_t tokens_after) {
  const std::int64_t need =
      (tokens_after + config_.block_size - 1) / config_.block_size - static_cast<std::int64_t>(r.blocks.size());
  if (need <= 0) return true;
  if (pool_->available() < need) return false;
  for (std::int64_t i = 0; i < need; ++i) {
    pool_->allocate();
    r.blocks.push_back(0);
  }
  return true;
}

void Scheduler::free_blocks(Request& r) {
  // Released in reverse, as vLLM does, so that a prefix's tail is evicted before its head.
  for (auto it = r.blocks.rbegin(); it != r.blocks.rend(); ++it) pool_->release(*it);
  r.blocks.clear();
  r.registered = 0;
}

void Scheduler::preempt(Request& victim, Step& step) {
  free_blocks(victim);
  victim.computed = 0;
  victim.planned = 0;
  ++victim.preemptions;
  running_.erase(std::remove(running_.begin(), running_.end(), &victim), running_.end());
  waiting_.push_front(&victim);
  ++step.preemptions;
  ++preemptions_total_;
  step.events.push_back(StepEvent{StepEvent::Kind::kPreempted, victim.spec.id, 0, false, 0});
}

void Scheduler::note_scheduled(Request& r, Step& step) {
  if (r.scheduled_once) return;
  r.scheduled_once = true;
  step.events.push_back(StepEvent{StepEvent::Kind::kScheduled, r.spec.id, 0, false, r.cached_tokens});
}

/// The step being planned: what is left of the token budget and who gets tokens, in order
/// (entries whose planned count is back to 0 were preempted after they were planned).
struct Scheduler::Plan {
  std::int64_t budget = 0;
  std::vector<Request*> planned;
  void add(Request& r, std::int64_t n, bool decode) {
    r.planned = n;
    r.planned_decode = decode;
    budget -= n;
    planned.push_back(&r);
  }
};

void Scheduler::plan_running(Plan& plan, Step& step) {
  // Preempts the most recently admitted running request; gives back its planned budget.
  auto preempt_last = [&]() -> Request* {
    Request* victim = running_.back();
    plan.budget += victim->planned;
    preempt(*victim, step);
    return victim;
  };

  // 1. One decode token for every running request that has its whole context computed.
  for (std::size_t i = 0; i < running_.size() && plan.budget > 0; ++i) {
    Request* r = running_[i];
    if (r->target() - r->computed != 1) continue;
    bool preempted_self = false;
    while (!allocate_to(*r, r->computed + 1)) {
      if (preempt_last() == r) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;  // r was the last running request
    plan.add(*r, 1, /*decode=*/true);
  }

  // 2. The rest of the budget: running requests still prefilling (chunked prefill).
  for (std::size_t i = 0; i < running_.size() && plan.budget > 0; ++i) {
    Request* r = running_[i];
    const std::int64_t remaining = r->target() - r->computed;
    if (remaining <= 1) continue;
    std::int64_t n = std::min(remaining, plan.budget);
    bool preempted_self = false;
    while (!allocate_to(*r, r->computed + n)) {
      // Take what the free blocks hold; preempt only when not even one token fits.
      const std::int64_t fit = (static_cast<std::int64_t>(r->blocks.size()) + pool_->available()) * config_.block_size -
                               r->computed;
      if (fit > 0) {
        n = std::min(n, fit);
        continue;
      }
      if (preempt_last() == r) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    plan.add(*r, n, /*decode=*/false);
  }
}

bool Scheduler::lora_admissible(const Request& r, const std::vector<std::int32_t>& batch_loras) const {
  if (r.spec.lora == 0) return true;
  if (std::find(batch_loras.begin(), batch_loras.end(), r.spec.lora) != batch_loras.end()) return true;
  return static_cast<std::int64_t>(batch_loras.size()) < config_.lora.max_loras;
}

void Scheduler::admit_waiting(Plan& plan, Step& step) {
  // 3. Admit waiting requests in FCFS order, unless this step had to preempt. A request whose
  // adapter cannot join the batch (max_loras) is skipped and keeps its place.
  if (step.preemptions != 0) return;
  std::vector<std::int32_t> batch_loras;
  if (config_.lora.enabled()) {
    for (const Request* r : running_) {
      if (r->spec.lora != 0 && std::find(batch_loras.begin(), batch_loras.end(), r->spec.lora) == batch_loras.end()) {
        batch_loras.push_back(r->spec.lora);
      }
    }
  }
  std::size_t i = 0;
  while (i < waiting_.size() && plan.budget > 0 && static_cast<std::int64_t>(running_.size()) < config_.max_num_seqs) {
    Request* r = waiting_[i];
    if (!lora_admissible(*r, batch_loras)) {
      ++i;
      continue;
    }
    std::int64_t hits = 0;
    std::int64_t evictable_hits = 0;
    if (config_.enable_prefix_caching && r->blocks.empty() && !r->spec.block_hashes.empty()) {
      std::tie(hits, evictable_hits) = pool_->lookup(r->spec.block_hashes);
    }
    // At least one token is computed, as in vLLM: the last one's logits are needed.
    const std::int64_t computed = std::min(hits * config_.block_size, r->target() - 1);
    const std::int64_t n = std::min(r->target() - computed, plan.budget);
    const std::int64_t need_blocks = (computed + n + config_.block_size - 1) / config_.block_size - hits;
    if (need_blocks > pool_->available() - evictable_hits) break;  // the head waits; FCFS
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    if (config_.enable_prefix_caching) {
      step.prefix_queried_tokens += r->spec.prompt_tokens;
      step.prefix_hit_tokens += computed;
    }
    for (std::int64_t b = 0; b < hits; ++b) {
      pool_->acquire(r->spec.block_hashes[static_cast<std::size_t>(b)]);
      r->blocks.push_back(r->spec.block_hashes[static_cast<std::size_t>(b)]);
    }
    r->registered = static_cast<std::size_t>(hits);
    r->computed = computed;
    if (!r->scheduled_once) r->cached_tokens = computed;
    allocate_to(*r, computed + n);  // checked above
    running_.push_back(r);
    if (r->spec.lora != 0 && std::find(batch_loras.begin(), batch_loras.end(), r->spec.lora) == batch_loras.end()) {
      batch_loras.push_back(r->spec.lora);
    }
    note_scheduled(*r, step);
    plan.add(*r, n, /*decode=*/false);
  }
}

void Scheduler::load_loras(const std::vector<Request*>& planned, Step& step) {
  if (!config_.lora.enabled()) return;
  std::vector<std::int32_t> active;
  std::int64_t lora_tokens = 0;
  for (const Request* r : planned) {
    if (r->planned == 0 || r->spec.lora == 0) continue;
    lora_tokens += r->planned;
    if (std::find(active.begin(), active.end(), r->spec.lora) == active.end()) active.push_back(r->spec.lora);
  }
  if (active.empty()) return;
  step.lora_loads = lora_cache_.activate(active);
  charge_lora(config_.lora, step.cost, step.lora_loads, active.size(), lora_tokens);
}

Step Scheduler::step() {
  Step step;
  Plan plan;
  plan.budget = config_.max_num_batched_tokens;
  plan_running(plan, step);
  admit_waiting(plan, step);
  load_loras(plan.planned, step);

  // Apply the plan: KV computed, blocks registered in the prefix cache, tokens emitted.
  std::vector<Request*> finished;
  step.batch = std::count_if(plan.planned.begin(), plan.planned.end(), [](const Request* r) { return r->planned > 0; });
  for (Request* r : plan.planned) {
    if (r->planned == 0) continue;  // preempted after it was planned
    const std::int64_t n = r->planned;
    r->planned = 0;
    note_scheduled(*r, step);
    cost_model_.add(step.cost, r->computed, n, r->planned_decode);
    r->computed += n;
    if (config_.enable_prefix_caching) {
      const auto full_prompt_blocks = std::min<std::size_t>(
          r->spec.block_hashes.size(), static_cast<std::size_t>(std::min(r->computed, r->spec.prompt_tokens) /
                                                                config_.block_size));
      for (; r->registered < full_prompt_blocks && r->registered < r->blocks.size(); ++r->registered) {
        auto& block = r->blocks[r->registered];
        const std::uint64_t hash = r->spec.block_hashes[r->registered];
        if (block == 0 && pool_->register_block(hash)) block = hash;
      }
    }
    if (r->computed == r->target()) {
      // The prompt counts once, when its first token comes (a recompute after preemption does not).
      if (r->generated == 0) step.prompt_tokens_computed += r->spec.prompt_tokens;
      bool last = r->generated + 1 == r->spec.max_tokens;
      if (r->output && r->output->on_token(r->generated, step.batch, r->preemptions)) last = true;
      step.events.push_back(StepEvent{StepEvent::Kind::kToken, r->spec.id, r->generated, last, 0});
      ++r->generated;
      if (last) finished.push_back(r);
    }
  }
  for (Request* r : finished) {
    free_blocks(*r);
    running_.erase(std::remove(running_.begin(), running_.end(), r), running_.end());
    requests_.erase(r->spec.id);
  }
  cost_model_.finish(step.cost);
  step.running = static_cast<std::int64_t>(running_.size());
  step.waiting = static_cast<std::int64_t>(waiting_.size());
  return step;
}

}  // namespace llmload::server
