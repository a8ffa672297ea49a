#pragma once
// Request length distributions (prompt and output tokens) for synthesized workloads, and the
// portable random transforms they sample with.
//
// Portability: std::normal_distribution, std::uniform_int_distribution and friends are specified
// by their results' distribution only, so libstdc++ and libc++ give different numbers for the same
// engine state. Everything here draws from std::mt19937_64 (whose output sequence is fixed by the
// standard) through the transforms below, so a seed gives the same lengths everywhere (up to the
// last-bit behaviour of std::log/std::cos/std::exp, which rounding to integers hides in practice).

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmload {

/// Every sampled length is rounded to the nearest integer and clamped to [kMinLength, kMaxLength].
inline constexpr std::int64_t kMinLength = 1;
inline constexpr std::int64_t kMaxLength = 10'000'000;

/// Uniform double in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng);
/// Uniform integer in [lo, hi] (inclusive, lo <= hi), unbiased (rejection sampling).
std::int64_t uniform_int(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi);
/// Standard normal deviate by Box–Muller: two draws per call, nothing cached between calls.
double standard_normal(std::mt19937_64& rng);
/// Rounds half away from zero and clamps to [kMinLength, kMaxLength]; NaN gives kMinLength.
std::int64_t round_length(double x);

/// A distribution of token lengths. Build one with parse() or the named constructors; they throw
/// ConfigError on invalid parameters. Immutable after construction; sample() is const and
/// thread-safe given a per-caller engine.
class LengthDistribution {
 public:
  enum class Kind { kFixed, kUniform, kNormal, kLognormal, kEmpirical };

  /// Always `n` (n >= 1).
  static LengthDistribution fixed(std::int64_t n);
  /// Integers in [min, max], inclusive, equally likely (0 <= min <= max <= kMaxLength; a 0 drawn
  /// becomes 1 by the clamp).
  static LengthDistribution uniform(std::int64_t min, std::int64_t max);
  /// Normal with this mean and standard deviation of the lengths (mean > 0, sd >= 0).
  static LengthDistribution normal(double mean, double sd);
  /// Log-normal whose lengths have this mean and sd (mean > 0, sd >= 0): the underlying normal has
  /// sigma^2 = ln(1 + sd^2/mean^2) and mu = ln(mean) - sigma^2/2.
  static LengthDistribution lognormal(double mean, double sd);
  /// `lengths[k]` with probability weights[k] / sum(weights) (lengths >= 1, weights >= 0, sum > 0).
  /// `source` names where they came from (the file) for describe() and errors.
  static LengthDistribution empirical(std::vector<std::int64_t> lengths, std::vector<double> weights,
                                      std::string source);
  /// vLLM's --random-input-len/--random-range-ratio: `length` when ratio is 0, else integers in
  /// [floor(length*(1-ratio)), ceil(length*(1+ratio))] uniformly. ratio must be in [0, 1).
  static LengthDistribution around(std::int64_t length, double range_ratio);

  /// "fixed:N", "uniform:MIN,MAX", "normal:MEAN,SD", "lognormal:MEAN,SD", "empirical:FILE".
  /// Throws ConfigError naming `spec` and showing a correct example.
  static LengthDistribution parse(std::string_view spec);
  /// The body of an empirical file: one length per line, or "length,weight"; '#' starts a
  /// comment; blank lines are skipped. Errors name `source` and the line.
  static LengthDistribution parse_empirical(std::string_view text, const std::string& source);

  /// One length, rounded and clamped to [kMinLength, kMaxLength].
  std::int64_t sample(std::mt19937_64& rng) const;

  Kind kind() const { return kind_; }
  /// Parameters as given: fixed (n), uniform (min, max), normal/lognormal (mean, sd); 0 for unused.
  double param_a() const { return a_; }
  double param_b() const { return b_; }
  /// Mean of the distribution before rounding and clamping (empirical: the weighted mean).
  double mean() const;
  /// The spec string this distribution parses from ("empirical:FILE" for empirical ones).
  std::string to_string() const;
  /// For the artifact: kind, parameters (lognormal: also mu and sigma), empirical: file and size.
  nlohmann::json describe() const;

 private:
  LengthDistribution() = default;
  Kind kind_ = Kind::kFixed;
  double a_ = 0;       // fixed: n; uniform: min; normal/lognormal: mean
  double b_ = 0;       // uniform: max; normal/lognormal: sd
  double mu_ = 0;      // lognormal: of the underlying normal
  double sigma_ = 0;   // lognormal: of the underlying normal
  std::vector<std::int64_t> values_;  // empirical
  std::vector<double> cumulative_;    // empirical: running sums of the weights
  std::string source_;                // empirical: the file
};

/// The prompt and output length distributions of one workload.
struct LengthPair {
  LengthDistribution input;
  LengthDistribution output;
};

/// A genai-bench traffic scenario (genai_bench/scenarios/text.py):
///   "D(in,out)"                 both fixed;
///   "N(mi,si)/(mo,so)"          normal input (mean mi, sd si) and output (mo, so);
///   "U(a,b)/(c,d)"              uniform input in [a,b], output in [c,d];
///   "U(a,b)"                    uniform input in [1,a], output in [1,b] (genai-bench's short form).
/// Non-negative integers only, as genai-bench's validation patterns require. Throws ConfigError
/// naming the string and listing the forms.
LengthPair parse_genai_scenario(std::string_view scenario);

}  // namespace llmload
