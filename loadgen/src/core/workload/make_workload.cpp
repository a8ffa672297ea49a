// make_workload(): the dispatch on WorkloadConfig::dataset, and the token estimate shared by the
// text datasets.

#include <cmath>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/workload.hpp"
#include "llmload/loadgen/workload/sources.hpp"

namespace llmload {

std::int64_t estimate_text_tokens(std::string_view text) {
  return static_cast<std::int64_t>((text.size() + 3) / 4);
}

std::unique_ptr<Workload> make_workload(const WorkloadConfig& cfg, std::int64_t input_tokens,
                                        std::int64_t output_tokens, std::optional<std::uint64_t> max_items,
                                        std::uint64_t seed, const TokenModel& tokens) {
  if (!(cfg.time_scale > 0) || !std::isfinite(cfg.time_scale)) {
    throw ConfigError(fmt::format("time_scale {} is invalid: it must be a positive number (2 replays twice as fast)",
                                  cfg.time_scale));
  }
  if (cfg.dataset.empty() || cfg.dataset == "random") {
    return make_random_workload(cfg, input_tokens, output_tokens, seed, tokens);
  }
  if (cfg.dataset == "sharegpt") return make_sharegpt_workload(cfg, max_items, seed, tokens);
  if (cfg.dataset == "custom") return make_custom_workload(cfg, output_tokens, max_items, tokens);
  if (cfg.dataset == "trace") return make_trace_workload(cfg, max_items, seed, tokens);
  if (cfg.dataset == "gsm8k") return make_gsm8k_workload(cfg, output_tokens, max_items, tokens);
  if (cfg.dataset == "mmlu") return make_mmlu_workload(cfg, output_tokens, max_items, tokens);
  throw ConfigError(fmt::format("unknown dataset \"{}\": choose random (synthesized prompts), sharegpt (a ShareGPT "
                                "JSON file), custom (JSONL with \"prompt\" per line), trace (Azure CSV or "
                                "Mooncake JSONL), gsm8k (GSM8K JSONL) or mmlu (MMLU CSV files)", cfg.dataset));
}

}  // namespace llmload
