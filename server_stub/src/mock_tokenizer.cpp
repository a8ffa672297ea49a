#include "llmload/server/mock_tokenizer.hpp"

#include <array>
#include <charconv>

#include <fmt/format.h>

namespace llmload::server {
namespace {

constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// The generated "text": common English words, so the output looks like (nonsense) prose.
// Letters only, so no token ever needs JSON escaping. 32 entries; the index is the token id.
constexpr std::array<std::string_view, kGeneratorWords> kWords = {
    " the",   " of",   " and",  " to",    " in",    " a",    " is",    " that",
    " for",   " it",   " as",   " was",   " with",  " be",   " by",    " on",
    " not",   " this", " are",  " or",    " from",  " at",   " which", " but",
    " have",  " an",   " had",  " they",  " you",   " were", " their", " one"};

// All 32 words once, in order, and the length of each prefix of it: generated text is this
// cycle repeated and cut.
struct Cycle {
  std::string text;
  std::array<std::size_t, kGeneratorWords + 1> prefix{};
};
const Cycle& cycle() {
  static const Cycle c = [] {
    Cycle out;
    for (std::size_t i = 0; i < kWords.size(); ++i) {
      out.prefix[i] = out.text.size();
      out.text += kWords[i];
    }
    out.prefix[kWords.size()] = out.text.size();
    return out;
  }();
  return c;
}

constexpr std::uint64_t kHashedIds = kVocabSize - kGeneratorWords;

/// The id N of a word "<|N|>" (N decimal, < kVocabSize, no sign, no leading '+'), if it is one.
bool parse_escape(std::string_view word, std::uint32_t& id) {
  if (word.size() < 5 || word.substr(0, 2) != "<|" || word.substr(word.size() - 2) != "|>") return false;
  const std::string_view digits = word.substr(2, word.size() - 4);
  if (digits.empty() || digits.size() > 10) return false;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value >= kVocabSize) return false;
  id = static_cast<std::uint32_t>(value);
  return true;
}

std::uint32_t generator_id(std::string_view word) {
  for (std::uint32_t i = 0; i < kGeneratorWords; ++i) {
    if (kWords[i].substr(1) == word) return i;
  }
  return kGeneratorWords;
}

/// True for a word whose id is a hash (the only words worth remembering).
bool is_hashed(std::string_view word) {
  std::uint32_t unused = 0;
  return generator_id(word) == kGeneratorWords && !parse_escape(word, unused);
}

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

std::uint32_t token_id(std::string_view word) {
  if (const std::uint32_t g = generator_id(word); g < kGeneratorWords) return g;
  if (std::uint32_t escaped = 0; parse_escape(word, escaped)) return escaped;
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64: byte-wise, so the same on every platform
  for (char c : word) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return static_cast<std::uint32_t>(kGeneratorWords + h % kHashedIds);
}

void append_token_ids(std::string_view text, std::vector<std::uint32_t>& ids) {
  for (auto word : split_words(text)) ids.push_back(token_id(word));
}

std::string_view generated_token(std::int64_t k) {
  const auto n = static_cast<std::int64_t>(kWords.size());
  return kWords[static_cast<std::size_t>(((k % n) + n) % n)];
}

std::uint32_t generated_token_id(std::int64_t k) {
  const auto n = static_cast<std::int64_t>(kGeneratorWords);
  return static_cast<std::uint32_t>(((k % n) + n) % n);
}

void append_generated_text(std::string& out, std::int64_t n) {
  if (n <= 0) return;
  const Cycle& c = cycle();
  const auto whole = static_cast<std::size_t>(n / kGeneratorWords);
  const auto rest = static_cast<std::size_t>(n % kGeneratorWords);
  out.reserve(out.size() + whole * c.text.size() + c.prefix[rest]);
  for (std::size_t i = 0; i < whole; ++i) out += c.text;
  out.append(c.text, 0, c.prefix[rest]);
}

std::string_view generator_word(std::uint32_t id) {
  return id < kGeneratorWords ? kWords[id].substr(1) : std::string_view();
}

std::string token_escape(std::uint32_t id) { return fmt::format("<|{}|>", id); }

void TokenVocabulary::remember_words(std::string_view text) {
  const auto words = split_words(text);
  std::lock_guard lock(mutex_);
  for (auto word : words) {
    constexpr std::size_t kEntryOverhead = 64;
    if (!is_hashed(word) || bytes_ + word.size() + kEntryOverhead > byte_limit_) continue;
    if (words_.try_emplace(token_id(word), word).second) bytes_ += word.size() + kEntryOverhead;
  }
}

std::string TokenVocabulary::spell(std::uint32_t id) const {
  if (id < kGeneratorWords) return std::string(generator_word(id));
  {
    std::lock_guard lock(mutex_);
    if (auto it = words_.find(id); it != words_.end()) return it->second;
  }
  return token_escape(id);
}

std::string TokenVocabulary::detokenize(const std::vector<std::uint32_t>& ids) const {
  std::string text;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) text += ' ';
    text += spell(ids[i]);
  }
  return text;
}

std::size_t TokenVocabulary::size() const {
  std::lock_guard lock(mutex_);
  return words_.size();
}

}  // namespace llmload::server
