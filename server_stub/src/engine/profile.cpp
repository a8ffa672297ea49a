#include "llmload/server/engine/profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "llmload/common/duration.hpp"

namespace llmload::server {

// Generated at configure time from server_stub/profiles/*.yaml (profiles_embedded.cpp).
struct EmbeddedProfile {
  const char* name;
  const char* text;
};
extern const EmbeddedProfile kEmbeddedProfiles[];
extern const std::size_t kEmbeddedProfileCount;

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw ProfileError(fmt::format("profile {}: {}", origin, what));
}

/// Reads a YAML mapping with a fixed set of keys; unknown keys are errors.
class Section {
 public:
  Section(const YAML::Node& parent, const char* key, const std::string& origin, bool required)
      : node_(parent[key]), origin_(origin), path_(key) {
    if (!node_ || node_.IsNull()) {
      if (required) fail(origin_, fmt::format("missing section '{}'", path_));
      return;
    }
    if (!node_.IsMap()) fail(origin_, fmt::format("'{}' must be a mapping of keys to values", path_));
  }

  bool present() const { return node_ && node_.IsMap(); }

  void check_keys(std::initializer_list<const char*> allowed) const {
    if (!present()) return;
    const std::set<std::string> names(allowed.begin(), allowed.end());
    for (const auto& kv : node_) {
      const auto key = kv.first.as<std::string>();
      if (names.count(key) == 0) {
        std::string list;
        for (const auto* n : allowed) list += (list.empty() ? "" : ", ") + std::string(n);
        fail(origin_, fmt::format("unknown key '{}.{}' (valid keys of '{}': {})", path_, key, path_, list));
      }
    }
  }

  std::optional<std::string> scalar(const char* key) const {
    if (!present()) return std::nullopt;
    const YAML::Node v = node_[key];
    if (!v || v.IsNull()) return std::nullopt;
    if (!v.IsScalar()) fail(origin_, fmt::format("'{}.{}' must be a single value", path_, key));
    return v.as<std::string>();
  }

  std::string where(const char* key) const { return fmt::format("'{}.{}'", path_, key); }

  double number(const char* key, std::optional<double> fallback, bool bytes = false) const {
    const auto text = scalar(key);
    if (!text) {
      if (!fallback) fail(origin_, fmt::format("missing {}", where(key)));
      return *fallback;
    }
    double v = 0;
    try {
      v = bytes ? parse_bytes(*text) : parse_plain(*text);
    } catch (const std::invalid_argument& e) {
      fail(origin_, fmt::format("{}: {}", where(key), e.what()));
    }
    if (!std::isfinite(v) || v < 0) fail(origin_, fmt::format("{} must be a finite number >= 0, got '{}'", where(key), *text));
    return v;
  }

  std::int64_t integer(const char* key, std::optional<std::int64_t> fallback, std::int64_t min_value) const {
    const auto text = scalar(key);
    if (!text) {
      if (!fallback) fail(origin_, fmt::format("missing {}", where(key)));
      return *fallback;
    }
    std::int64_t v = 0;
    std::size_t used = 0;
    try {
      v = std::stoll(*text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text->size()) fail(origin_, fmt::format("{} must be a whole number, got '{}'", where(key), *text));
    if (v < min_value) fail(origin_, fmt::format("{} must be >= {}, got {}", where(key), min_value, v));
    return v;
  }

  bool boolean(const char* key, bool fallback) const {
    const auto text = scalar(key);
    if (!text) return fallback;
    if (*text == "true") return true;
    if (*text == "false") return false;
    fail(origin_, fmt::format("{} must be true or false, got '{}'", where(key), *text));
  }

  std::chrono::nanoseconds duration(const char* key, std::chrono::nanoseconds fallback) const {
    const auto text = scalar(key);
    if (!text) return fallback;
    try {
      return parse_duration(*text, "");
    } catch (const DurationParseError& e) {
      fail(origin_, fmt::format("{}: {}", where(key), e.what()));
    }
  }

 private:
  static double parse_plain(const std::string& text) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) throw std::invalid_argument(fmt::format("not a number: '{}'", text));
    return v;
  }

  YAML::Node node_;
  const std::string& origin_;
  std::string path_;
};

bool looks_like_path(const std::string& s) {
  auto ends_with = [&](std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

}  // namespace

double parse_bytes(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0) throw std::invalid_argument(fmt::format("not a byte size: '{}' (e.g. 16GB, 80GiB, 3e9)", text));
  std::string unit = s.substr(used);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(unit.begin());
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1.0},        {"B", 1.0},           {"KB", 1e3},           {"MB", 1e6},
      {"GB", 1e9},      {"TB", 1e12},         {"KiB", 1024.0},       {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) return v * factor;
  }
  throw std::invalid_argument(
      fmt::format("unknown byte unit '{}' in '{}' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", unit, text));
}

std::int64_t Profile::kv_cache_tokens() const {
  const std::int64_t bs = engine.block_size;
  if (engine.kv_cache_tokens) return (*engine.kv_cache_tokens / bs) * bs;
  const double count = static_cast<double>(device.count);
  const double room = count * device.memory_bytes * engine.gpu_memory_utilization - model.weight_bytes -
                      count * engine.memory_reserve_bytes;
  const double per_token = model.kv_bytes_per_token();
  if (room <= per_token * static_cast<double>(bs)) {
    throw ProfileError(fmt::format(
        "profile {}: the model does not fit: {} device(s) x {:.1f} GB x utilization {} leaves {:.2f} GB for the KV "
        "cache after {:.2f} GB of weights and {:.2f} GB of reserve (raise gpu_memory_utilization or device.count, "
        "or set engine.kv_cache_tokens)",
        source, device.count, device.memory_bytes / 1e9, engine.gpu_memory_utilization, room / 1e9,
        model.weight_bytes / 1e9, count * engine.memory_reserve_bytes / 1e9));
  }
  // Bounded so the conversion is defined (profile limits keep real values far below this).
  const auto tokens = static_cast<std::int64_t>(std::min(std::floor(room / per_token), 1e15));
  return (tokens / bs) * bs;
}

const std::vector<std::string>& builtin_profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out{std::string(kDefaultProfile)};
    for (std::size_t i = 0; i < kEmbeddedProfileCount; ++i) {
      if (kEmbeddedProfiles[i].name != kDefaultProfile) out.emplace_back(kEmbeddedProfiles[i].name);
    }
    return out;
  }();
  return names;
}

std::optional<std::string_view> builtin_profile_text(std::string_view name) {
  for (std::size_t i = 0; i < kEmbeddedProfileCount; ++i) {
    if (kEmbeddedProfiles[i].name == name) return std::string_view(kEmbeddedProfiles[i].text);
  }
  return std::nullopt;
}

void validate_engine(const Profile& p) {
  const auto& e = p.engine;
  const std::string& o = p.source;
  if (e.block_size < 1 || e.block_size > 1024) fail(o, fmt::format("block_size must be in [1, 1024], got {}", e.block_size));
  if (e.max_num_seqs < 1) fail(o, "max_num_seqs must be >= 1");
  if (e.max_num_batched_tokens < 1) fail(o, "max_num_batched_tokens must be >= 1");
  if (e.max_model_len < 1) fail(o, "max_model_len must be >= 1");
  if (!(e.gpu_memory_utilization > 0 && e.gpu_memory_utilization <= 1)) {
    fail(o, fmt::format("gpu_memory_utilization must be in (0, 1], got {}", e.gpu_memory_utilization));
  }
  if (e.max_num_batched_tokens < e.max_num_seqs) {
    // vLLM refuses this too: a step could not give every running sequence its decode token.
    fail(o, fmt::format("max_num_batched_tokens ({}) must be >= max_num_seqs ({}): raise --max-num-batched-tokens "
                        "or lower --max-num-seqs",
                        e.max_num_batched_tokens, e.max_num_seqs));
  }
  const double usable = static_cast<double>(p.device.count) * p.device.memory_bytes * e.gpu_memory_utilization;
  if (p.model.weight_bytes > usable) {
    fail(o, fmt::format("the weights ({:.2f} GB) do not fit in {} device(s) x {:.2f} GB x utilization {}",
                        p.model.weight_bytes / 1e9, p.device.count, p.device.memory_bytes / 1e9,
                        e.gpu_memory_utilization));
  }
  {
    // One decode step must take a plausible time (catches a typo of orders of magnitude).
    const double read = p.model.weight_bytes / (p.efficiency.bandwidth * p.total_bandwidth());
    if (!(read < 60.0)) {
      fail(o, fmt::format("reading the weights once takes {:g} s at the given bandwidth and efficiency: check "
                          "'model.weight_bytes', 'device.memory_bandwidth' and 'efficiency.bandwidth'",
                          read));
    }
  }
  if (e.kv_cache_tokens && *e.kv_cache_tokens < e.block_size) {
    fail(o, fmt::format("kv_cache_tokens ({}) must hold at least one block of {} tokens", *e.kv_cache_tokens,
                        e.block_size));
  }
  const std::int64_t capacity = p.kv_cache_tokens();
  if (e.max_model_len > capacity) {
    // vLLM refuses to start in this case too: one request of max_model_len could never run.
    fail(o, fmt::format("max_model_len ({}) is larger than the KV cache ({} tokens): lower --max-model-len or raise "
                        "--kv-cache-tokens",
                        e.max_model_len, capacity));
  }
  if (p.efficiency.bandwidth <= 0 || p.efficiency.bandwidth > 1 || p.efficiency.compute <= 0 ||
      p.efficiency.compute > 1) {
    fail(o, "efficiency.bandwidth and efficiency.compute must be in (0, 1]");
  }
}

Profile parse_profile(std::string_view yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    fail(origin, fmt::format("not valid YAML: {}", e.what()));
  }
  if (!root.IsMap()) fail(origin, "must be a YAML mapping with sections model, device, efficiency, engine");
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    static const std::set<std::string> top = {"name", "description", "model", "device", "efficiency", "engine"};
    if (top.count(key) == 0) {
      fail(origin, fmt::format("unknown key '{}' (valid: name, description, model, device, efficiency, engine)", key));
    }
  }
  Profile p;
  p.source = origin;
  p.name = root["name"] && root["name"].IsScalar() ? root["name"].as<std::string>() : origin;
  if (root["description"] && root["description"].IsScalar()) p.description = root["description"].as<std::string>();

  const Section model(root, "model", origin, true);
  model.check_keys({"parameters", "weight_bytes", "layers", "hidden_size", "kv_heads", "head_dim", "kv_dtype_bytes"});
  p.model.parameters = model.number("parameters", std::nullopt);
  p.model.weight_bytes = model.number("weight_bytes", 2.0 * p.model.parameters, /*bytes=*/true);
  p.model.layers = model.integer("layers", std::nullopt, 1);
  p.model.hidden_size = model.integer("hidden_size", std::nullopt, 1);
  p.model.kv_heads = model.integer("kv_heads", std::nullopt, 1);
  p.model.head_dim = model.integer("head_dim", std::nullopt, 1);
  p.model.kv_dtype_bytes = model.integer("kv_dtype_bytes", 2, 1);
  if (p.model.parameters <= 0) fail(origin, "'model.parameters' must be > 0");
  // Far beyond any real model or device, and small enough that no product below overflows.
  auto at_most = [&](const char* key, double value, double limit) {
    if (value > limit) fail(origin, fmt::format("'{}' is {:g}, more than the largest accepted ({:g})", key, value, limit));
  };
  at_most("model.parameters", p.model.parameters, 1e15);
  at_most("model.weight_bytes", p.model.weight_bytes, 1e16);
  at_most("model.layers", static_cast<double>(p.model.layers), 1e4);
  at_most("model.hidden_size", static_cast<double>(p.model.hidden_size), 1e6);
  at_most("model.kv_heads", static_cast<double>(p.model.kv_heads), 1e4);
  at_most("model.head_dim", static_cast<double>(p.model.head_dim), 1e5);
  at_most("model.kv_dtype_bytes", static_cast<double>(p.model.kv_dtype_bytes), 16);

  const Section device(root, "device", origin, true);
  device.check_keys({"name", "count", "memory_bytes", "memory_bandwidth", "peak_flops"});
  p.device.name = device.scalar("name").value_or("unnamed device");
  p.device.count = device.integer("count", 1, 1);
  p.device.memory_bytes = device.number("memory_bytes", std::nullopt, /*bytes=*/true);
  p.device.memory_bandwidth = device.number("memory_bandwidth", std::nullopt);
  p.device.peak_flops = device.number("peak_flops", std::nullopt);
  if (p.device.memory_bandwidth <= 0 || p.device.peak_flops <= 0) {
    fail(origin, "'device.memory_bandwidth' and 'device.peak_flops' must be > 0");
  }
  at_most("device.count", static_cast<double>(p.device.count), 1e5);
  at_most("device.memory_bytes", p.device.memory_bytes, 1e15);
  at_most("device.memory_bandwidth", p.device.memory_bandwidth, 1e16);
  at_most("device.peak_flops", p.device.peak_flops, 1e20);

  const Section eff(root, "efficiency", origin, false);
  eff.check_keys({"bandwidth", "compute", "roofline_sharpness", "step_overhead"});
  p.efficiency.bandwidth = eff.number("bandwidth", 0.7);
  p.efficiency.compute = eff.number("compute", 0.7);
  p.efficiency.roofline_sharpness = eff.number("roofline_sharpness", 1.5);
  p.efficiency.step_overhead = eff.duration("step_overhead", std::chrono::nanoseconds(0));
  if (p.efficiency.step_overhead > std::chrono::seconds(10)) fail(origin, "'efficiency.step_overhead' must be at most 10s");
  if (p.efficiency.roofline_sharpness != 0 && p.efficiency.roofline_sharpness < 1) {
    fail(origin, "'efficiency.roofline_sharpness' must be >= 1 (or 0 for a plain max)");
  }

  const Section eng(root, "engine", origin, false);
  eng.check_keys({"gpu_memory_utilization", "memory_reserve_bytes", "kv_cache_tokens", "max_num_seqs",
                  "max_num_batched_tokens", "block_size", "max_model_len", "enable_prefix_caching"});
  p.engine.gpu_memory_utilization = eng.number("gpu_memory_utilization", 0.9);
  p.engine.memory_reserve_bytes = eng.number("memory_reserve_bytes", 0.0, /*bytes=*/true);
  if (eng.scalar("kv_cache_tokens")) p.engine.kv_cache_tokens = eng.integer("kv_cache_tokens", std::nullopt, 1);
  p.engine.max_num_seqs = eng.integer("max_num_seqs", 256, 1);
  p.engine.max_num_batched_tokens = eng.integer("max_num_batched_tokens", 2048, 1);
  p.engine.block_size = eng.integer("block_size", 16, 1);
  p.engine.max_model_len = eng.integer("max_model_len", 8192, 1);
  p.engine.enable_prefix_caching = eng.boolean("enable_prefix_caching", true);
  validate_engine(p);
  return p;
}

Profile load_profile(const std::string& name_or_file) {
  if (const auto text = builtin_profile_text(name_or_file)) {
    Profile p = parse_profile(*text, "'" + name_or_file + "' (built-in)");
    return p;
  }
  if (!looks_like_path(name_or_file)) {
    std::string names;
    for (const auto& n : builtin_profile_names()) names += (names.empty() ? "" : ", ") + n;
    throw ProfileError(fmt::format("unknown profile '{}': use a built-in name ({}) or the path of a YAML file",
                                   name_or_file, names));
  }
  std::ifstream in(name_or_file);
  if (!in) {
    throw ProfileError(fmt::format("cannot read profile file '{}' (--profile takes a built-in name or a YAML file)",
                                   name_or_file));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_profile(text.str(), name_or_file);
}

void apply_overrides(Profile& p, const EngineOverrides& o) {
  if (o.max_num_seqs) p.engine.max_num_seqs = *o.max_num_seqs;
  if (o.max_num_batched_tokens) p.engine.max_num_batched_tokens = *o.max_num_batched_tokens;
  if (o.kv_cache_tokens) p.engine.kv_cache_tokens = *o.kv_cache_tokens;
  if (o.block_size) p.engine.block_size = *o.block_size;
  if (o.max_model_len) p.engine.max_model_len = *o.max_model_len;
  if (o.enable_prefix_caching) p.engine.enable_prefix_caching = *o.enable_prefix_caching;
  if (o.gpu_memory_utilization) p.engine.gpu_memory_utilization = *o.gpu_memory_utilization;
  validate_engine(p);
}

}  // namespace llmload::server
