#pragma once
// The mock's deterministic "tokenizer". It has no vocabulary file: one token is one
// whitespace-separated word (split on ASCII space, \t, \n, \v, \f, \r). The same rule is used
// for usage numbers, /tokenize and context-length validation, so a client can predict it.
// Generated text is made of words from a fixed list, each with a leading space, so a client
// that counts words in the output sees exactly the number of tokens generated.
// All functions are pure and thread-safe.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace llmload::server {

/// Number of whitespace-separated words in `text`.
std::int64_t count_words(std::string_view text);

/// The words of `text`, as views into it.
std::vector<std::string_view> split_words(std::string_view text);

/// A stable token id for a word (FNV-1a hash folded into [0, 100000)); not reversible.
std::int32_t token_id(std::string_view word);

/// Generated token k (0-based): a word from a fixed list with a leading space, e.g. " the".
/// Cycles through the list; never empty, never needs JSON escaping.
std::string_view generated_token(std::int64_t k);

}  // namespace llmload::server
