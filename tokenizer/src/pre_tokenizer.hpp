// tokenizer.json "pre_tokenizer": splits normalized text into the words the model encodes one
// by one. Supported: ByteLevel (add_prefix_space, use_regex with GPT-2's pattern), Split (a
// string or regex pattern; behaviors Isolated, Removed, MergedWithPrevious, MergedWithNext,
// Contiguous; invert), Digits, Metaspace, Sequence; null means the text is one word.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hf_json.hpp"

namespace llmload::tokenizer {

// The words of one section of text: views into the section or into `storage` (text that a
// pre-tokenizer rewrote).
struct Words {
  std::vector<std::string_view> views;
  std::deque<std::string> storage;
  std::string_view own(std::string s) {
    storage.push_back(std::move(s));
    return storage.back();
  }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits each word further. `first_section`: the text is the start of the input (Metaspace's
  // prepend_scheme "first").
  virtual void apply(Words& words, bool first_section) const = 0;
};

struct PreTokenizerInfo {
  bool byte_level = false;  // a ByteLevel step is present: the model works on bytes
};

// nullptr for null; throws TokenizerError for unsupported types or regexes.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const hf::Json& config, const std::string& origin,
                                                 PreTokenizerInfo& info);

}  // namespace llmload::tokenizer
