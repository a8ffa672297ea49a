// tokenizer.json "normalizer": text -> text before pre-tokenization. Supported: NFC, Replace
// (a string or a regex pattern), Prepend, Strip, Sequence; null means none.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "hf_json.hpp"

namespace llmload::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
  // At most how many times longer normalize() makes a non-empty text (a bound, not the exact
  // ratio): Replace and Prepend steps multiply in a Sequence, so a malformed file could grow the
  // text exponentially; make_normalizer refuses more than kMaxTextGrowth.
  virtual std::size_t growth() const { return 1; }
};

inline constexpr std::size_t kMaxTextGrowth = 256;
// The growth bound of replace_all(text, pattern, content): a string pattern replaced by a longer
// content, or a regex, whose matches may be empty (content inserted at every code point).
std::size_t replace_growth(const hf::Pattern& pattern, std::string_view content);
// a * b, saturating at kMaxTextGrowth + 1.
std::size_t combine_growth(std::size_t a, std::size_t b);

// nullptr for a null normalizer or an empty Sequence; throws TokenizerError for other types.
std::unique_ptr<Normalizer> make_normalizer(const hf::Json& config, const std::string& origin);

// Replaces every occurrence of a string or regex pattern (shared with decoders).
std::string replace_all(std::string_view text, const hf::Pattern& pattern, std::string_view content,
                        const class Regex* regex);

}  // namespace llmload::tokenizer
