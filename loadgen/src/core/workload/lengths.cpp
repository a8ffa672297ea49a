#include "llmload/loadgen/workload/lengths.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "text_util.hpp"

namespace llmload {

using workload_detail::parse_double;
using workload_detail::parse_int;
using workload_detail::trim;

// --- portable transforms ------------------------------------------------------------------------

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::int64_t uniform_int(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  if (range == 0) return static_cast<std::int64_t>(rng());  // the whole 64-bit range
  // Accept draws in [2^64 mod range, 2^64): that span is a multiple of `range`, so x % range is
  // exactly uniform.
  const std::uint64_t threshold = (0 - range) % range;
  while (true) {
    const std::uint64_t x = rng();
    if (x >= threshold) return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + x % range);
  }
}

double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]: log is finite
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::int64_t round_length(double x) {
  if (!(x >= static_cast<double>(kMinLength))) return kMinLength;  // also NaN
  if (x >= static_cast<double>(kMaxLength)) return kMaxLength;
  return std::clamp<std::int64_t>(std::llround(x), kMinLength, kMaxLength);
}

// --- construction -------------------------------------------------------------------------------

namespace {

constexpr std::string_view kDistForms =
    "use fixed:N, uniform:MIN,MAX, normal:MEAN,SD, lognormal:MEAN,SD or empirical:FILE "
    "(e.g. \"normal:512,128\" or \"uniform:100,1000\")";

[[noreturn]] void bad_spec(std::string_view spec, std::string_view what) {
  throw ConfigError(fmt::format("invalid length distribution \"{}\": {}; {}", spec, what, kDistForms));
}

// "A,B" split at the single comma; nullopt when there is not exactly one.
std::optional<std::pair<std::string_view, std::string_view>> split_pair(std::string_view s) {
  const auto comma = s.find(',');
  if (comma == std::string_view::npos || s.find(',', comma + 1) != std::string_view::npos) return std::nullopt;
  return std::pair{s.substr(0, comma), s.substr(comma + 1)};
}

std::string fmt_num(double v) { return fmt::format("{:g}", v); }

}  // namespace

LengthDistribution LengthDistribution::fixed(std::int64_t n) {
  if (n < kMinLength || n > kMaxLength) {
    throw ConfigError(fmt::format("fixed length {} is out of range: it must be in [{}, {}] (e.g. fixed:512)", n,
                                  kMinLength, kMaxLength));
  }
  LengthDistribution d;
  d.kind_ = Kind::kFixed;
  d.a_ = static_cast<double>(n);
  return d;
}

LengthDistribution LengthDistribution::uniform(std::int64_t min, std::int64_t max) {
  if (min < 0 || max > kMaxLength || min > max) {
    throw ConfigError(fmt::format("uniform length range [{}, {}] is invalid: it needs 0 <= MIN <= MAX <= {} "
                                  "(e.g. uniform:100,1000)", min, max, kMaxLength));
  }
  LengthDistribution d;
  d.kind_ = Kind::kUniform;
  d.a_ = static_cast<double>(min);
  d.b_ = static_cast<double>(max);
  return d;
}

LengthDistribution LengthDistribution::normal(double mean, double sd) {
  if (!(mean > 0) || !(sd >= 0) || !std::isfinite(mean) || !std::isfinite(sd)) {
    throw ConfigError(fmt::format("normal length distribution with mean {} and sd {} is invalid: it needs "
                                  "MEAN > 0 and SD >= 0 (e.g. normal:512,128)", mean, sd));
  }
  LengthDistribution d;
  d.kind_ = Kind::kNormal;
  d.a_ = mean;
  d.b_ = sd;
  return d;
}

LengthDistribution LengthDistribution::lognormal(double mean, double sd) {
  if (!(mean > 0) || !(sd >= 0) || !std::isfinite(mean) || !std::isfinite(sd)) {
    throw ConfigError(fmt::format("lognormal length distribution with mean {} and sd {} is invalid: it needs "
                                  "MEAN > 0 and SD >= 0 (e.g. lognormal:512,256)", mean, sd));
  }
  LengthDistribution d;
  d.kind_ = Kind::kLognormal;
  d.a_ = mean;
  d.b_ = sd;
  // Moments of a log-normal: E = exp(mu + s^2/2), Var = (exp(s^2) - 1) E^2; solved for mu and s.
  const double sigma2 = std::log1p((sd * sd) / (mean * mean));
  d.sigma_ = std::sqrt(sigma2);
  d.mu_ = std::log(mean) - sigma2 / 2.0;
  return d;
}

LengthDistribution LengthDistribution::empirical(std::vector<std::int64_t> lengths, std::vector<double> weights,
                                                 std::string source) {
  if (lengths.empty() || lengths.size() != weights.size()) {
    throw ConfigError(fmt::format("empirical length distribution \"{}\" has no lengths: give one length per line "
                                  "or \"length,weight\" per line", source));
  }
  LengthDistribution d;
  d.kind_ = Kind::kEmpirical;
  d.cumulative_.reserve(weights.size());
  double total = 0;
  for (std::size_t k = 0; k < lengths.size(); ++k) {
    if (lengths[k] < kMinLength || lengths[k] > kMaxLength || !(weights[k] >= 0) || !std::isfinite(weights[k])) {
      throw ConfigError(fmt::format("empirical length distribution \"{}\": length {} with weight {} is invalid: "
                                    "lengths must be in [{}, {}] and weights >= 0", source, lengths[k], weights[k],
                                    kMinLength, kMaxLength));
    }
    total += weights[k];
    d.cumulative_.push_back(total);
  }
  if (!(total > 0)) {
    throw ConfigError(fmt::format("empirical length distribution \"{}\": the weights sum to 0; give at least one "
                                  "positive weight", source));
  }
  d.values_ = std::move(lengths);
  d.source_ = std::move(source);
  return d;
}

LengthDistribution LengthDistribution::around(std::int64_t length, double range_ratio) {
  if (!(range_ratio >= 0.0 && range_ratio < 1.0)) {
    throw ConfigError(fmt::format("random_range_ratio {} is out of range: it must be in [0, 1) as in vLLM's "
                                  "--random-range-ratio (e.g. 0.1 for lengths within +-10%)", range_ratio));
  }
  if (length < kMinLength || length > kMaxLength) {
    throw ConfigError(fmt::format("length {} is out of range: it must be in [{}, {}]", length, kMinLength,
                                  kMaxLength));
  }
  if (range_ratio == 0.0) return fixed(length);
  // The same double arithmetic as vLLM's RandomDataset.get_sampling_params (math.floor/math.ceil).
  const double l = static_cast<double>(length);
  const auto lo = static_cast<std::int64_t>(std::floor(l * (1.0 - range_ratio)));
  const auto hi = std::min<std::int64_t>(kMaxLength, static_cast<std::int64_t>(std::ceil(l * (1.0 + range_ratio))));
  return uniform(lo, hi);
}

LengthDistribution LengthDistribution::parse(std::string_view spec) {
  const std::string_view s = trim(spec);
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) bad_spec(spec, "missing \"KIND:\"");
  const std::string_view kind = s.substr(0, colon);
  const std::string_view args = s.substr(colon + 1);
  try {
    if (kind == "fixed") {
      const auto n = parse_int(args);
      if (!n) bad_spec(spec, "fixed takes one integer");
      return fixed(*n);
    }
    if (kind == "empirical") {
      const std::string path(trim(args));
      if (path.empty()) bad_spec(spec, "empirical takes a file name");
      return parse_empirical(workload_detail::read_text_file(path, "empirical length"), path);
    }
    const auto pair = split_pair(args);
    if (kind == "uniform") {
      const auto lo = pair ? parse_int(pair->first) : std::nullopt;
      const auto hi = pair ? parse_int(pair->second) : std::nullopt;
      if (!lo || !hi) bad_spec(spec, "uniform takes two integers MIN,MAX");
      return uniform(*lo, *hi);
    }
    if (kind == "normal" || kind == "lognormal") {
      const auto mean = pair ? parse_double(pair->first) : std::nullopt;
      const auto sd = pair ? parse_double(pair->second) : std::nullopt;
      if (!mean || !sd) bad_spec(spec, fmt::format("{} takes two numbers MEAN,SD", kind));
      return kind == "normal" ? normal(*mean, *sd) : lognormal(*mean, *sd);
    }
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.find(fmt::format("\"{}\"", spec)) != std::string::npos) throw;
    throw ConfigError(fmt::format("invalid length distribution \"{}\": {}", spec, what));
  }
  bad_spec(spec, fmt::format("unknown kind \"{}\"", kind));
}

LengthDistribution LengthDistribution::parse_empirical(std::string_view text, const std::string& source) {
  std::vector<std::int64_t> lengths;
  std::vector<double> weights;
  workload_detail::for_each_line(text, [&](std::int64_t line_no, std::string_view line) {
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) return true;
    const auto comma = line.find(',');
    const auto len = parse_int(line.substr(0, comma));
    std::optional<double> weight = 1.0;
    if (comma != std::string_view::npos) weight = parse_double(line.substr(comma + 1));
    if (!len || !weight || *len < kMinLength || *len > kMaxLength || *weight < 0) {
      throw ConfigError(fmt::format("{}:{}: \"{}\" is not a length: write one integer length in [{}, {}] per line, "
                                    "or \"length,weight\" with a weight >= 0 (e.g. \"512,3\"); '#' starts a comment",
                                    source, line_no, line, kMinLength, kMaxLength));
    }
    lengths.push_back(*len);
    weights.push_back(*weight);
    return true;
  });
  return empirical(std::move(lengths), std::move(weights), source);
}

// --- sampling and description -------------------------------------------------------------------

std::int64_t LengthDistribution::sample(std::mt19937_64& rng) const {
  switch (kind_) {
    case Kind::kFixed:
      return round_length(a_);
    case Kind::kUniform:
      return round_length(static_cast<double>(
          uniform_int(rng, static_cast<std::int64_t>(a_), static_cast<std::int64_t>(b_))));
    case Kind::kNormal:
      return round_length(a_ + b_ * standard_normal(rng));
    case Kind::kLognormal:
      return round_length(std::exp(mu_ + sigma_ * standard_normal(rng)));
    case Kind::kEmpirical: {
      const double u = uniform01(rng) * cumulative_.back();
      // First entry whose running sum exceeds u: entries with weight 0 are never chosen.
      auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
      if (it == cumulative_.end()) --it;  // u rounded up to the total
      return values_[static_cast<std::size_t>(it - cumulative_.begin())];
    }
  }
  return kMinLength;
}

double LengthDistribution::mean() const {
  switch (kind_) {
    case Kind::kFixed:
    case Kind::kNormal:
    case Kind::kLognormal:
      return a_;
    case Kind::kUniform:
      return (a_ + b_) / 2.0;
    case Kind::kEmpirical: {
      double sum = 0;
      double prev = 0;
      for (std::size_t k = 0; k < values_.size(); ++k) {
        sum += static_cast<double>(values_[k]) * (cumulative_[k] - prev);
        prev = cumulative_[k];
      }
      return sum / cumulative_.back();
    }
  }
  return 0;
}

std::string LengthDistribution::to_string() const {
  switch (kind_) {
    case Kind::kFixed:
      return fmt::format("fixed:{}", static_cast<std::int64_t>(a_));
    case Kind::kUniform:
      return fmt::format("uniform:{},{}", static_cast<std::int64_t>(a_), static_cast<std::int64_t>(b_));
    case Kind::kNormal:
      return fmt::format("normal:{},{}", fmt_num(a_), fmt_num(b_));
    case Kind::kLognormal:
      return fmt::format("lognormal:{},{}", fmt_num(a_), fmt_num(b_));
    case Kind::kEmpirical:
      return fmt::format("empirical:{}", source_);
  }
  return {};
}

nlohmann::json LengthDistribution::describe() const {
  nlohmann::json j;
  j["spec"] = to_string();
  switch (kind_) {
    case Kind::kFixed:
      j["kind"] = "fixed";
      j["value"] = static_cast<std::int64_t>(a_);
      break;
    case Kind::kUniform:
      j["kind"] = "uniform";
      j["min"] = static_cast<std::int64_t>(a_);
      j["max"] = static_cast<std::int64_t>(b_);
      break;
    case Kind::kNormal:
      j["kind"] = "normal";
      j["mean"] = a_;
      j["sd"] = b_;
      break;
    case Kind::kLognormal:
      j["kind"] = "lognormal";
      j["mean"] = a_;
      j["sd"] = b_;
      j["mu"] = mu_;
      j["sigma"] = sigma_;
      break;
    case Kind::kEmpirical:
      j["kind"] = "empirical";
      j["file"] = source_;
      j["values"] = values_.size();
      j["mean"] = mean();
      break;
  }
  j["rounding"] = fmt::format("rounded to integers, clamped to [{}, {}]", kMinLength, kMaxLength);
  return j;
}

// --- genai-bench scenarios ----------------------------------------------------------------------

namespace {

constexpr std::string_view kGenaiForms =
    "use D(in,out), N(in_mean,in_sd)/(out_mean,out_sd), U(in_min,in_max)/(out_min,out_max) or "
    "U(in_max,out_max) with non-negative integers (e.g. \"N(480,240)/(300,150)\")";

[[noreturn]] void bad_scenario(std::string_view scenario, std::string_view what) {
  throw ConfigError(fmt::format("invalid genai-bench scenario \"{}\": {}; {}", scenario, what, kGenaiForms));
}

// A non-negative integer of digits only (genai-bench's \d+).
std::optional<std::int64_t> parse_digits(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return parse_int(s);
}

// "(a,b)" → {a, b}; nullopt when the shape is different.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_paren_pair(std::string_view s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return std::nullopt;
  const auto pair = split_pair(s.substr(1, s.size() - 2));
  if (!pair) return std::nullopt;
  const auto a = parse_digits(pair->first);
  const auto b = parse_digits(pair->second);
  if (!a || !b) return std::nullopt;
  return std::pair{*a, *b};
}

}  // namespace

LengthPair parse_genai_scenario(std::string_view scenario) {
  const std::string_view s = trim(scenario);
  if (s.empty()) bad_scenario(scenario, "it is empty");
  const char kind = s.front();
  const std::string_view rest = s.substr(1);
  const auto slash = rest.find('/');
  const auto first = parse_paren_pair(rest.substr(0, slash));
  const auto second = slash == std::string_view::npos ? std::nullopt : parse_paren_pair(rest.substr(slash + 1));
  const bool one = first && slash == std::string_view::npos;
  const bool two = first && second;
  try {
    switch (kind) {
      case 'D':
        if (!one) bad_scenario(scenario, "D takes one pair: D(in,out)");
        return {LengthDistribution::fixed(first->first), LengthDistribution::fixed(first->second)};
      case 'N':
        if (!two) bad_scenario(scenario, "N takes two pairs: N(in_mean,in_sd)/(out_mean,out_sd)");
        return {LengthDistribution::normal(static_cast<double>(first->first), static_cast<double>(first->second)),
                LengthDistribution::normal(static_cast<double>(second->first), static_cast<double>(second->second))};
      case 'U':
        if (two) {
          return {LengthDistribution::uniform(first->first, first->second),
                  LengthDistribution::uniform(second->first, second->second)};
        }
        if (!one) bad_scenario(scenario, "U takes U(in_min,in_max)/(out_min,out_max) or U(in_max,out_max)");
        // genai-bench's short form: the pair holds the two maxima; both minima are 1.
        return {LengthDistribution::uniform(1, first->first), LengthDistribution::uniform(1, first->second)};
      default:
        bad_scenario(scenario, fmt::format("unknown or unsupported kind '{}'", kind));
    }
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.starts_with("invalid genai-bench scenario")) throw;
    throw ConfigError(fmt::format("invalid genai-bench scenario \"{}\": {}; {}", scenario, what, kGenaiForms));
  }
}

}  // namespace llmload
