#pragma once
// Model profiles of the engine simulator: a model (parameters, weight bytes, attention shape), the
// device it runs on (memory, bandwidth, peak math rate), the efficiencies of the roofline step-time
// model, and the engine knobs (vLLM's names). Written in YAML: the built-in ones live in
// server_stub/profiles/ and are compiled into the binary; users pass their own file with
// --profile FILE. See docs/server.md, "Engine model".

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::server {

/// A profile that cannot be used; the message names the file (or built-in name), the key and
/// what is expected.
class ProfileError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct ModelSpec {
  double parameters = 0;     ///< N
  double weight_bytes = 0;   ///< W, all devices together
  std::int64_t layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t kv_dtype_bytes = 2;
  /// 2 x layers x kv_heads x head_dim x dtype bytes: the KV cache one token takes.
  double kv_bytes_per_token() const {
    return 2.0 * static_cast<double>(layers * kv_heads * head_dim * kv_dtype_bytes);
  }
};

struct DeviceSpec {
  std::string name;
  std::int64_t count = 1;       ///< devices (tensor parallel); bandwidth and flops add up
  double memory_bytes = 0;      ///< per device
  double memory_bandwidth = 0;  ///< bytes/s per device
  double peak_flops = 0;        ///< flop/s per device (dense, the weights' dtype)
};

struct Efficiency {
  double bandwidth = 0.7;  ///< eta_bw: achieved fraction of the memory bandwidth
  double compute = 0.7;    ///< eta_f: achieved fraction of the peak math rate
  /// p of the generalized maximum (a^p + b^p)^(1/p) joining the memory and compute times;
  /// 0 means the plain max() of the textbook roofline.
  double roofline_sharpness = 1.5;
  std::chrono::nanoseconds step_overhead{0};  ///< t_fixed
};

/// The engine's knobs, with vLLM's names.
struct EngineKnobs {
  double gpu_memory_utilization = 0.9;
  double memory_reserve_bytes = 0;  ///< per device: activations, CUDA graphs
  std::optional<std::int64_t> kv_cache_tokens;  ///< set: the KV capacity, instead of derived from memory
  std::int64_t max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 2048;
  std::int64_t block_size = 16;
  std::int64_t max_model_len = 8192;
  bool enable_prefix_caching = true;
};

struct Profile {
  std::string name;
  std::string description;
  std::string source;  ///< "built-in" or the file it was read from
  ModelSpec model;
  DeviceSpec device;
  Efficiency efficiency;
  EngineKnobs engine;

  double total_bandwidth() const { return device.memory_bandwidth * static_cast<double>(device.count); }
  double total_flops() const { return device.peak_flops * static_cast<double>(device.count); }
  /// KV-cache capacity in tokens, a whole number of blocks: engine.kv_cache_tokens when set
  /// (rounded down to blocks), else (count x memory x utilization - weights - count x reserve)
  /// / KV bytes per token. Throws ProfileError when the weights do not fit.
  std::int64_t kv_cache_tokens() const;
  std::int64_t num_blocks() const { return kv_cache_tokens() / engine.block_size; }
};

/// Overrides from the command line (unset: keep the profile's).
struct EngineOverrides {
  std::optional<std::int64_t> max_num_seqs;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<std::int64_t> kv_cache_tokens;
  std::optional<std::int64_t> block_size;
  std::optional<std::int64_t> max_model_len;
  std::optional<bool> enable_prefix_caching;
  std::optional<double> gpu_memory_utilization;
};

/// Names of the built-in profiles, the default first.
const std::vector<std::string>& builtin_profile_names();
inline constexpr std::string_view kDefaultProfile = "llama-3-8b-h100";

/// The YAML text of a built-in profile, or nullopt.
std::optional<std::string_view> builtin_profile_text(std::string_view name);

/// Parses and validates a profile. `origin` names it in errors. Unknown keys are errors (typos).
Profile parse_profile(std::string_view yaml_text, const std::string& origin);

/// `name_or_file`: a built-in name, or a path to a YAML file (anything containing '/' or ending
/// in .yaml/.yml is a path). Throws ProfileError listing the built-in names when neither.
Profile load_profile(const std::string& name_or_file);

/// Applies overrides and re-validates (e.g. max_model_len must fit in the KV cache, the token
/// budget must hold a decode for every sequence). Throws ProfileError naming the flag.
void apply_overrides(Profile& profile, const EngineOverrides& overrides);

/// Checks the engine knobs against each other; throws ProfileError. Called by parse_profile and
/// apply_overrides.
void validate_engine(const Profile& profile);

/// Parses "16.06GB", "80GiB", "3e9", "200MB" (SI: KB MB GB TB; binary: KiB MiB GiB TiB). Throws
/// std::invalid_argument.
double parse_bytes(std::string_view text);

}  // namespace llmload::server
