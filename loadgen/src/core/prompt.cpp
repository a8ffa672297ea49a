#include "llmload/loadgen/prompt.hpp"

#include <algorithm>

#include "llmload/loadgen/workload.hpp"

#include <array>
#include <string_view>

namespace llmload {
namespace {

// Common English words that are single tokens in the usual BPE vocabularies (with a leading space).
constexpr std::array<std::string_view, 128> kWords = {
    "the",   "of",    "and",   "to",    "in",    "is",    "that",  "for",   "it",    "as",    "was",   "with",
    "be",    "by",    "on",    "not",   "he",    "this",  "are",   "or",    "his",   "from",  "at",    "which",
    "but",   "have",  "an",   "had",   "they",  "you",   "were",  "their", "one",   "all",   "we",    "can",
    "her",   "has",   "there", "been",  "if",    "more",  "when",  "will",  "would", "who",   "so",    "no",
    "she",   "other", "its",   "may",   "these", "what",  "them",  "than",  "some",  "him",   "time",  "into",
    "only",  "do",    "could", "new",   "about", "two",   "first", "then",  "also",  "any",   "like",  "our",
    "over",  "such",  "many",  "most",  "after", "made",  "well",  "very",  "where", "world", "work",  "year",
    "water", "light", "house", "place", "small", "large", "river", "city",  "music", "green", "stone", "paper",
    "table", "night", "story", "field", "horse", "train", "cloud", "bread", "chair", "glass", "plant", "sound",
    "model", "power", "order", "point", "value", "space", "state", "group", "line",  "form",  "hand",  "part",
    "day",   "way",   "man",   "life",  "game",  "car",   "door",  "road"};

}  // namespace

std::uint64_t mix_seed(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string synthesize_prompt(std::int64_t words, std::uint64_t seed) {
  std::string out;
  if (words <= 0) return out;
  out.reserve(static_cast<std::size_t>(words) * 6);
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < words; ++i) {
    state = mix_seed(state);
    if (i > 0) out.push_back(' ');
    out.append(kWords[state % kWords.size()]);
  }
  return out;
}

TokenModel TokenModel::builtin() {
  TokenModel m;
  m.words.assign(kWords.begin(), kWords.end());
  m.overhead = 0;
  m.method = "estimate";
  return m;
}

std::string TokenModel::words_text(std::int64_t n, std::uint64_t seed) const {
  std::string out;
  if (n <= 0 || words.empty()) return out;
  out.reserve(static_cast<std::size_t>(n) * 6);
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < n; ++i) {
    state = mix_seed(state);
    if (i > 0) out.push_back(' ');
    out.append(words[state % words.size()]);
  }
  return out;
}

std::string TokenModel::synthesize(std::int64_t tokens, std::uint64_t seed) const {
  return words_text(std::max<std::int64_t>(1, tokens - overhead), seed);
}

}  // namespace llmload
