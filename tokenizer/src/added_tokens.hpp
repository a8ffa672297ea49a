// tokenizer.json "added_tokens": strings recognized in the text before anything else (special
// tokens such as "<|im_start|>", and added words). The matcher finds them leftmost-longest, the
// way the reference implementations do; lstrip/rstrip take the whitespace beside a match with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::tokenizer {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in normalized text rather than in the input
};

// A stretch of text: an added token (`token` set) or text between them.
struct Section {
  std::string_view text;
  const AddedToken* token = nullptr;
};

class AddedTokenMatcher {
 public:
  // `tokens` must outlive the matcher.
  explicit AddedTokenMatcher(const std::vector<const AddedToken*>& tokens);

  bool empty() const { return nodes_.size() <= 1; }
  // Splits text into sections; the whitespace an lstrip/rstrip token takes is dropped.
  std::vector<Section> split(std::string_view text) const;

 private:
  const AddedToken* longest_at(std::string_view text, std::size_t pos, std::size_t& length) const;

  struct Node {
    const AddedToken* token = nullptr;
  };
  std::vector<Node> nodes_;                                      // trie nodes; [0] is the root
  std::unordered_map<std::uint64_t, std::uint32_t> edges_;        // (node << 8 | byte) -> child
  bool first_byte_[256] = {};
};

}  // namespace llmload::tokenizer
