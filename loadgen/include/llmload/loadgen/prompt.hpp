#pragma once
// Synthetic prompts of a given length.

#include <cstdint>
#include <string>

namespace llmload {

/// A prompt of exactly `words` space-separated words from a vocabulary of common English words,
/// chosen by a PRNG seeded with `seed` (same seed, same prompt). For llmload-server one word is
/// one token exactly; for BPE tokenizers of real models these words are single tokens, so the
/// count is close (the artifact reports requested versus server-counted prompt tokens).
std::string synthesize_prompt(std::int64_t words, std::uint64_t seed);

/// Mixes a 64-bit value (SplitMix64 finalizer); used to derive independent seeds.
std::uint64_t mix_seed(std::uint64_t x);

}  // namespace llmload
