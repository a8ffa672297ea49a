#pragma once
// Deterministic uniform and normal variates for the statistics tests (splitmix64 + Box-Muller):
// the same sequence on every standard library, unlike <random>'s distributions.

#include <cmath>
#include <cstdint>
#include <numbers>

namespace llmload::testing {

class NormalRng {
 public:
  explicit NormalRng(std::uint64_t seed) : state_(seed) {}
  double uniform() {  // (0, 1)
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
  }
  double normal() {
    const double u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t state_;
};

}  // namespace llmload::testing
