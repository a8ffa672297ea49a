#pragma once
// Shared by the libFuzzer targets: an always-on assertion (fuzz builds may define NDEBUG) that
// prints what was violated and aborts, which libFuzzer reports as a crash with a reproducer.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s at %s:%d\n", #cond, __FILE__, __LINE__);    \
      std::abort();                                                                            \
    }                                                                                          \
  } while (false)

namespace llmload::fuzz {

/// FNV-1a hash: derives a deterministic seed from the input (same input, same splits).
inline std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

/// SplitMix64 step: a small deterministic generator for split points and pacing.
inline std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace llmload::fuzz
