#include "llmload/server/mock_tokenizer.hpp"

#include <array>

namespace llmload::server {
namespace {

constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// The generated "text": common English words, so the output looks like (nonsense) prose.
// Letters only, so no token ever needs JSON escaping. 32 entries.
constexpr std::array<std::string_view, 32> kWords = {
    " the",   " of",   " and",  " to",    " in",    " a",    " is",    " that",
    " for",   " it",   " as",   " was",   " with",  " be",   " by",    " on",
    " not",   " this", " are",  " or",    " from",  " at",   " which", " but",
    " have",  " an",   " had",  " they",  " you",   " were", " their", " one"};

}  // namespace

std::int64_t count_words(std::string_view text) {
  std::int64_t n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = is_space(c);
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > begin) words.push_back(text.substr(begin, i - begin));
  }
  return words;
}

std::int32_t token_id(std::string_view word) {
  std::uint32_t h = 2166136261U;
  for (char c : word) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619U;
  }
  return static_cast<std::int32_t>(h % 100000U);
}

std::string_view generated_token(std::int64_t k) {
  const auto n = static_cast<std::int64_t>(kWords.size());
  return kWords[static_cast<std::size_t>(((k % n) + n) % n)];
}

}  // namespace llmload::server
