// The BPE model of a tokenizer.json: the vocabulary, the ranked merges, and the merge loop that
// turns one pre-tokenized word into ids.
//
// Byte-level vocabularies (GPT-2 family) start a word from its bytes, each spelled in the byte
// alphabet (byte_level.hpp); SentencePiece-style ones start from its code points, and a code
// point outside the vocabulary becomes its <0xXX> byte tokens (byte_fallback) or the unknown
// token. Then the pair of adjacent symbols with the lowest merge rank merges, leftmost first,
// until no pair has a rank. Results are cached per word (words under 256 bytes).
//
// SentencePiece-style files usually have no pre-tokenizer: the whole text is one word. It is cut
// before each "▁" whose preceding character never precedes "▁" inside a vocabulary token: no
// token can span such a cut, so no merge crosses it and the result is the same, while the pieces
// are short and cacheable (a 1 MiB word otherwise makes a heap of a million candidates).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmload/tokenizer/tokenizer.hpp"
#include "string_map.hpp"

namespace llmload::tokenizer {

struct BpeOptions {
  bool byte_level = false;     // symbols start as bytes in the byte alphabet
  bool byte_fallback = false;  // unknown code points become <0xXX> tokens
  bool ignore_merges = false;  // a word that is itself in the vocabulary is taken whole
  std::optional<TokenId> unknown;
};

class BpeModel {
 public:
  // Throws TokenizerError (prefixed with `origin`) for a merge of tokens not in the vocabulary.
  BpeModel(StringMap<TokenId> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           BpeOptions options, const std::string& origin);

  // Appends the ids of one word (raw UTF-8 bytes, as pre-tokenized).
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  std::optional<TokenId> token_id(std::string_view token) const;
  const StringMap<TokenId>& vocab() const { return vocab_; }
  const BpeOptions& options() const { return options_; }

 private:
  struct Merge {
    std::int32_t rank;
    TokenId merged;
  };
  struct Symbol {
    TokenId id;
    std::int32_t prev, next;
    std::uint32_t begin, length;  // bytes of the word it covers
  };

  void encode_piece(std::string_view word, std::vector<TokenId>& out) const;
  void initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const;
  void merge_symbols(std::vector<Symbol>& symbols) const;
  void emit(std::string_view word, const std::vector<Symbol>& symbols, std::vector<TokenId>& out) const;
  const Merge* find_merge(TokenId left, TokenId right) const;

  StringMap<TokenId> vocab_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  BpeOptions options_;
  TokenId byte_ids_[256];       // byte-level: the id of each byte's symbol (-1: absent)
  TokenId fallback_ids_[256];   // byte_fallback: the id of <0xXX> (-1: absent)
  bool cut_at_metaspace_ = false;                  // see the comment at the top
  std::unordered_set<char32_t> joins_metaspace_;   // characters some token has right before "▁"

  static constexpr std::size_t kMaxCachedWordBytes = 256;
  static constexpr std::size_t kMaxCacheEntries = 1U << 18;  // then it starts over: tens of MB at most
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<TokenId>> cache_;
};

}  // namespace llmload::tokenizer
