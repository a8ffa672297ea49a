#include "llmload/loadgen/model_mix.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"

namespace llmload {
namespace {

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split_commas(std::string_view value) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = value.find(',', from);
    out.push_back(trimmed(value.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from)));
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  return out;
}

double parse_positive(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0) {
    throw ConfigError(fmt::format("bad --model-weights: {} '{}' is not a positive number", what, text));
  }
  return v;
}

}  // namespace

std::vector<std::string> split_model_list(std::string_view value) {
  std::vector<std::string> models = split_commas(value);
  for (const auto& m : models) {
    if (m.empty()) {
      throw ConfigError(fmt::format("bad --model '{}': an empty model name; give names separated by commas, e.g. "
                                    "--model base,adapter-a,adapter-b",
                                    value));
    }
  }
  return models;
}

ModelMix::ModelMix(std::vector<std::string> models, const std::string& weights, std::uint64_t seed)
    : models_(std::move(models)), seed_(mix_seed(seed ^ 0x6d6f64656c6d6978ULL)) {
  if (models_.empty()) throw ConfigError("--model-weights needs models: give --model a,b,c");
  std::vector<double> w(models_.size(), 1.0);
  rule_ = "uniform";
  if (weights.rfind("zipf", 0) == 0) {
    double s = 1.0;
    if (weights.size() > 4) {
      if (weights[4] != ':') {
        throw ConfigError(fmt::format("bad --model-weights '{}': use zipf or zipf:S (e.g. zipf:1.2)", weights));
      }
      s = parse_positive(weights.substr(5), "the Zipf exponent");
    }
    for (std::size_t k = 0; k < w.size(); ++k) w[k] = 1.0 / std::pow(static_cast<double>(k + 1), s);
    rule_ = fmt::format("zipf:{:g}", s);
  } else if (!weights.empty()) {
    const auto parts = split_commas(weights);
    if (parts.size() != models_.size()) {
      throw ConfigError(fmt::format("bad --model-weights '{}': {} weights for {} models; give one per --model name, "
                                    "in order, or zipf[:S]",
                                    weights, parts.size(), models_.size()));
    }
    for (std::size_t k = 0; k < w.size(); ++k) w[k] = parse_positive(parts[k], "weight");
    rule_ = "weights";
  }
  double total = 0;
  for (const double x : w) total += x;
  double run = 0;
  for (const double x : w) {
    shares_.push_back(x / total);
    run += x / total;
    cumulative_.push_back(run);
  }
  cumulative_.back() = 1.0;
}

const std::string& ModelMix::pick(std::uint64_t key) const {
  // A uniform draw in [0, 1) from the key's own hash: 53 random bits.
  const double u = static_cast<double>(mix_seed(seed_ + key) >> 11) * 0x1.0p-53;
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
  return models_[static_cast<std::size_t>(std::min<std::ptrdiff_t>(it - cumulative_.begin(),
                                                                   static_cast<std::ptrdiff_t>(models_.size()) - 1))];
}

}  // namespace llmload
