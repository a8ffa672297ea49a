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
};

// nullptr for a null normalizer or an empty Sequence; throws TokenizerError for other types.
std::unique_ptr<Normalizer> make_normalizer(const hf::Json& config, const std::string& origin);

// Replaces every occurrence of a string or regex pattern (shared with decoders).
std::string replace_all(std::string_view text, const hf::Pattern& pattern, std::string_view content,
                        const class Regex* regex);

}  // namespace llmload::tokenizer
