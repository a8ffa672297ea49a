// The "random" workload: synthesized prompts with lengths from distributions.

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/workload/sources.hpp"

namespace llmload {

namespace {

// Independent streams derived from one item's seed (arbitrary distinct constants).
constexpr std::uint64_t kInputStream = 0x1a2b3c4d5e6f7081ULL;
constexpr std::uint64_t kOutputStream = 0x2b3c4d5e6f708192ULL;
constexpr std::uint64_t kRandomTextStream = 0x3c4d5e6f708192a3ULL;
constexpr std::uint64_t kPrefixStream = 0x4d5e6f708192a3b4ULL;

class RandomWorkload final : public Workload {
 public:
  RandomWorkload(const WorkloadConfig& cfg, LengthPair lengths, std::uint64_t seed, TokenModel tokens)
      : lengths_(std::move(lengths)),
        seed_(seed),
        tokens_(std::move(tokens)),
        prefix_groups_(cfg.prefix_groups),
        prefix_tokens_(cfg.prefix_tokens),
        genai_scenario_(cfg.genai_scenario),
        range_ratio_(cfg.random_range_ratio) {}

  std::optional<std::uint64_t> size() const override { return std::nullopt; }

  WorkItem item(std::uint64_t index) const override {
    const std::uint64_t item_seed = mix_seed(seed_ + index);
    std::mt19937_64 in_rng(mix_seed(item_seed ^ kInputStream));
    std::mt19937_64 out_rng(mix_seed(item_seed ^ kOutputStream));
    const std::uint64_t text_seed = mix_seed(item_seed ^ kRandomTextStream);
    const std::int64_t l_in = lengths_.input.sample(in_rng);

    WorkItem w;
    w.output_tokens = lengths_.output.sample(out_rng);
    const std::int64_t own_words = std::max<std::int64_t>(1, l_in - tokens_.overhead);
    if (prefix_groups_ > 0) {
      const auto group = static_cast<std::int64_t>(index % static_cast<std::uint64_t>(prefix_groups_));
      w.prompt = tokens_.words_text(prefix_tokens_, prefix_seed(group));
      w.prompt.push_back(' ');
      w.prefix_chars = w.prompt.size();
      w.prefix_tokens = prefix_tokens_;
      w.prompt += tokens_.words_text(own_words, text_seed);
      w.input_tokens = tokens_.overhead + prefix_tokens_ + own_words;
      w.prefix_group = group;
    } else {
      w.prompt = tokens_.synthesize(l_in, text_seed);
      w.input_tokens = tokens_.overhead + own_words;
    }
    return w;
  }

  nlohmann::json describe() const override {
    nlohmann::json j;
    j["dataset"] = "random";
    j["input"] = lengths_.input.describe();
    j["output"] = lengths_.output.describe();
    if (!genai_scenario_.empty()) j["genai_scenario"] = genai_scenario_;
    j["random_range_ratio"] = range_ratio_;
    j["seed"] = seed_;
    j["prompts"] = "synthesized words, one token each under the token model";
    j["token_model"] = {{"method", tokens_.method}, {"overhead", tokens_.overhead},
                        {"vocabulary", tokens_.words.size()}};
    if (prefix_groups_ > 0) {
      j["shared_prefix"] = {{"groups", prefix_groups_},
                            {"prefix_tokens", prefix_tokens_},
                            {"assignment", "request i uses group i mod groups"}};
      j["input_tokens_meaning"] =
          "prefix_tokens + the sampled input length (the request's own suffix; the server's overhead counts "
          "towards it)";
    } else {
      j["input_tokens_meaning"] = "the sampled input length, as the server counts the prompt (overhead included)";
    }
    return j;
  }

 private:
  std::uint64_t prefix_seed(std::int64_t group) const {
    return mix_seed(mix_seed(seed_ ^ kPrefixStream) + static_cast<std::uint64_t>(group));
  }

  LengthPair lengths_;
  std::uint64_t seed_;
  TokenModel tokens_;
  std::int64_t prefix_groups_;
  std::int64_t prefix_tokens_;
  std::string genai_scenario_;
  double range_ratio_;
};

void check_prefix_settings(const WorkloadConfig& cfg) {
  if (cfg.prefix_groups < 0 || cfg.prefix_tokens < 0) {
    throw ConfigError(fmt::format("prefix_groups ({}) and prefix_tokens ({}) must not be negative",
                                  cfg.prefix_groups, cfg.prefix_tokens));
  }
  if (cfg.prefix_groups > 0 && cfg.prefix_tokens == 0) {
    throw ConfigError(fmt::format("prefix_groups is {} but prefix_tokens is 0: set prefix_tokens to the length of "
                                  "the shared prefixes (e.g. 1024), or prefix_groups to 0 for no shared prefix",
                                  cfg.prefix_groups));
  }
  if (cfg.prefix_tokens > 0 && cfg.prefix_groups == 0) {
    throw ConfigError(fmt::format("prefix_tokens is {} but prefix_groups is 0: set prefix_groups to the number of "
                                  "distinct prefixes (1 for one prefix shared by all requests, as vLLM's "
                                  "--random-prefix-len)", cfg.prefix_tokens));
  }
  if (cfg.prefix_tokens > kMaxLength) {
    throw ConfigError(fmt::format("prefix_tokens {} is over the limit of {}", cfg.prefix_tokens, kMaxLength));
  }
}

}  // namespace

LengthPair resolve_lengths(const WorkloadConfig& cfg, std::int64_t input_tokens, std::int64_t output_tokens) {
  if (!(cfg.random_range_ratio >= 0.0 && cfg.random_range_ratio < 1.0)) {
    throw ConfigError(fmt::format("random_range_ratio {} is out of range: it must be in [0, 1) as in vLLM's "
                                  "--random-range-ratio (e.g. 0.1 for lengths within +-10%)", cfg.random_range_ratio));
  }
  if (!cfg.genai_scenario.empty()) return parse_genai_scenario(cfg.genai_scenario);
  auto one = [&](const std::string& spec, std::int64_t fixed_length, std::string_view name) {
    if (!spec.empty()) return LengthDistribution::parse(spec);
    if (fixed_length < kMinLength) {
      throw ConfigError(fmt::format("{} is {}: it must be at least 1 (or give a {} distribution)", name,
                                    fixed_length, name));
    }
    return LengthDistribution::around(fixed_length, cfg.random_range_ratio);
  };
  return {one(cfg.input_dist, input_tokens, "input length"), one(cfg.output_dist, output_tokens, "output length")};
}

std::unique_ptr<Workload> make_random_workload(const WorkloadConfig& cfg, std::int64_t input_tokens,
                                               std::int64_t output_tokens, std::uint64_t seed,
                                               const TokenModel& tokens) {
  if (tokens.words.empty()) throw ConfigError("the token model has no words to synthesize prompts from");
  check_prefix_settings(cfg);
  return std::make_unique<RandomWorkload>(cfg, resolve_lengths(cfg, input_tokens, output_tokens), seed, tokens);
}

}  // namespace llmload
