#pragma once
// A small, portable, seedable random stream (SplitMix64). Used instead of <random>
// distributions because those are not bit-identical across standard libraries, and the same
// seed must give the same timings everywhere. Not thread-safe: one per request.

#include <cstdint>

namespace llmload::server {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  /// An independent stream for item `index` (e.g. a request's sequence number) under `seed`.
  static Rng for_stream(std::uint64_t seed, std::uint64_t index) {
    Rng mixer(seed ^ (index * 0xD1B54A32D192ED03ULL));
    return Rng(mixer.next_u64());
  }

  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, 1), 53 bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

 private:
  std::uint64_t state_;
};

}  // namespace llmload::server
