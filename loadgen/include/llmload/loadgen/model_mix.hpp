#pragma once
// Many models or adapters in one run (issue 19): `--model a,b,c` with `--model-weights` (a list
// of weights, or a Zipf skew) deals each request to one model, seeded, so a run is reproducible
// and a session stays on one model. Pure logic: no I/O.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmload {

/// The models of a `--model` value: split on commas, spaces trimmed, empty names refused
/// (ConfigError naming the flag).
std::vector<std::string> split_model_list(std::string_view value);

class ModelMix {
 public:
  /// `weights`: "" (every model alike), "w1,w2,..." (one positive weight per model, in order) or
  /// "zipf" / "zipf:S" (the k-th model, from 1, weighs 1/k^S; S defaults to 1). Throws ConfigError
  /// naming what is wrong and the fix.
  ModelMix(std::vector<std::string> models, const std::string& weights, std::uint64_t seed);

  /// The model of the request (or session) `key`: the same key always gets the same model.
  const std::string& pick(std::uint64_t key) const;
  const std::vector<std::string>& models() const { return models_; }
  /// Each model's share of requests (the weights normalized), in the models' order.
  const std::vector<double>& shares() const { return shares_; }
  /// How the shares were set: "uniform", "weights" or "zipf:S".
  const std::string& rule() const { return rule_; }

 private:
  std::vector<std::string> models_;
  std::vector<double> shares_;
  std::vector<double> cumulative_;
  std::string rule_;
  std::uint64_t seed_;
};

}  // namespace llmload
