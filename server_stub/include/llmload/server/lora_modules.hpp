#pragma once
// LoRA adapters served by llmload-server (docs/server.md, "LoRA adapters"): the --lora-modules
// items in vLLM's syntax, the settings of the engine's adapter slots, and the lookups that map a
// request's `model` to its base model and adapter. Plain values and pure functions.

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::server {

struct ServerConfig;  // server_config.hpp

/// A --lora-modules item that cannot be used; the message says what is wrong and the fix.
class LoraModuleError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// One served adapter: `name` is what requests put in `model`; `path` is only reported
/// (/v1/models "root"): the mock reads no file; `base_model` is the --model it runs on.
struct LoraModule {
  std::string name;
  std::string path;
  std::string base_model;
};

/// LoRA serving, vLLM's knobs. Off (no adapter, no lora metrics) unless `enabled`.
struct LoraConfig {
  bool enabled = false;             ///< --enable-lora, or any --lora-modules
  std::vector<LoraModule> modules;  ///< adapter id k (1-based) is modules[k - 1]
  std::int64_t max_loras = 1;       ///< distinct adapters in one running batch = GPU adapter slots
  std::int64_t max_cpu_loras = 1;   ///< adapters kept in CPU memory (>= max_loras)
  std::int64_t max_lora_rank = 16;  ///< the rank every adapter is costed at
  /// Loading an adapter into a GPU slot from CPU memory; unset: derived from the rank and the
  /// profile (engine/lora_cache.hpp, lora_costs()).
  std::optional<std::chrono::nanoseconds> load_time;
  /// Loading an adapter from disk into CPU memory (paid on top of load_time by an adapter that
  /// is not among the max_cpu_loras cached); unset: derived.
  std::optional<std::chrono::nanoseconds> disk_load_time;
};

/// Parses one --lora-modules item: `name=path`, or vLLM's JSON form
/// `{"name": ..., "path": ..., "base_model_name": ...}` (base_model_name optional). Without a
/// base model the adapter runs on `models.front()`; a base model must be one of `models`.
LoraModule parse_lora_module(std::string_view item, const std::vector<std::string>& models);

/// Checks the modules against each other and the served models (unique names, none equal to a
/// --model) and the slot counts (max_loras >= 1, max_cpu_loras >= max_loras, max_lora_rank one
/// of vLLM's). Throws LoraModuleError naming the flag.
void validate_lora_config(const LoraConfig& lora, const std::vector<std::string>& models);

/// vLLM's accepted --max-lora-rank values.
const std::vector<std::int64_t>& lora_rank_choices();

/// The adapter id of `model` (1-based index into lora.modules), or 0 when it names no adapter.
std::int32_t lora_adapter_id(const LoraConfig& lora, std::string_view model);

/// Whether `model` is served: a --model, or an adapter of --lora-modules.
bool serves_model(const ServerConfig& config, std::string_view model);

}  // namespace llmload::server
