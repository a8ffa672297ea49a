#pragma once
// The mock's deterministic "tokenizer". It has no vocabulary file: one token is one
// whitespace-separated word (split on ASCII space, \t, \n, \v, \f, \r). The same rule is used
// for usage numbers, /tokenize and context-length validation, so a client can predict it.
// Generated text is made of words from a fixed list (the generator's vocabulary, drawn from in a
// prompt-seeded order: output_sequence.hpp), each with a leading space, and of an answer's words,
// so a client that counts words in the output sees exactly the number of tokens generated.
//
// Token ids. Every id is in [0, 2^31) (kVocabSize), fits an int32 and is a pure function of the
// word, the same in every process and on every platform, so the ids of a prompt (which the
// engine's prefix cache hashes) and replays never depend on what the server saw before:
//   - the 32 generator words (without their leading space) have ids 0..31, in list order:
//     "the" = 0, "of" = 1, ... (generated_token(k) is word k % 32, generated_token_id(k) its id).
//   - a word written "<|N|>" with N a decimal id in [0, 2^31) has id N. This is the escape that
//     detokenize writes for an id it cannot spell, so tokenize(detokenize(ids)) == ids always.
//   - any other word: 32 + FNV-1a-64(word bytes) mod (2^31 - 32). Among n distinct words the
//     chance that two share an id is about n^2 / 2^32 (2% for 10 000 words); such words then
//     count as the same token for prefix caching, which is harmless for a mock.
// A hash cannot be inverted, so detokenize spells an id with, in order: the generator word; the
// word a TokenVocabulary remembers for it (the router remembers every word POST /tokenize has
// seen in this process, and the words of the answers it generated); else the escape "<|N|>".
// Hence detokenize(tokenize(text)) gives back the words of text (joined by single spaces) within
// one server process, and the generator's words in any process. The table is bounded (kVocabularyByteLimit); past it, new words are no
// longer remembered and come back as "<|N|>".
//
// Free functions are pure and thread-safe; TokenVocabulary is thread-safe (internally locked).

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmload::server {

/// Ids are in [0, kVocabSize).
inline constexpr std::uint64_t kVocabSize = std::uint64_t{1} << 31;
/// Number of generator words; they own ids [0, kGeneratorWords).
inline constexpr std::uint32_t kGeneratorWords = 32;

/// Number of whitespace-separated words in `text`.
std::int64_t count_words(std::string_view text);

/// The words of `text`, as views into it.
std::vector<std::string_view> split_words(std::string_view text);

/// The token id of one word (see above). `word` must not contain whitespace.
std::uint32_t token_id(std::string_view word);

/// Appends the ids of the words of `text` to `ids`.
void append_token_ids(std::string_view text, std::vector<std::uint32_t>& ids);

/// Generator word k % kGeneratorWords (0-based) with a leading space, e.g. " the" for k = 0.
/// Never empty, never needs JSON escaping.
std::string_view generated_token(std::int64_t k);

/// The id of generator word k: k % kGeneratorWords.
std::uint32_t generated_token_id(std::int64_t k);

/// Appends generator words [0, n) in list order, cycling (their concatenated text) to `out`.
void append_generated_text(std::string& out, std::int64_t n);

/// The generator word with id `id` (no leading space), or empty if `id` >= kGeneratorWords.
std::string_view generator_word(std::uint32_t id);

/// "<|N|>": the escape that tokenizes back to id N.
std::string token_escape(std::uint32_t id);

/// Upper bound on the bytes a TokenVocabulary keeps (words + ~64 B bookkeeping per word).
inline constexpr std::size_t kVocabularyByteLimit = std::size_t{64} * 1024 * 1024;

/// Remembers which word produced each hashed id, so ids can be spelled back (detokenize).
/// Thread-safe. On a hash collision the first word seen keeps the id.
class TokenVocabulary {
 public:
  explicit TokenVocabulary(std::size_t byte_limit = kVocabularyByteLimit) : byte_limit_(byte_limit) {}

  /// Remembers the hashed words of `text` (generator words and escapes need no memory).
  void remember_words(std::string_view text);

  /// The text of `id`: its generator word, its remembered word, else token_escape(id).
  /// Precondition: id < kVocabSize.
  std::string spell(std::uint32_t id) const;

  /// The words of `ids`, each spelled as above, joined by single spaces.
  std::string detokenize(const std::vector<std::uint32_t>& ids) const;

  /// Number of remembered words (for tests).
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint32_t, std::string> words_;
  std::size_t bytes_ = 0;
  std::size_t byte_limit_;
};

}  // namespace llmload::server
