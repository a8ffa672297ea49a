// The parsed form of a Regex (regex.hpp): a tree of nodes, built by regex_parse.cpp and walked
// by the backtracking matcher in regex.cpp. Internal to the tokenizer library.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "regex.hpp"

namespace llmload::tokenizer {

// One member of a character class, possibly negated (\S, \P{L}).
struct ClassItem {
  enum class Kind { Range, Categories, WhiteSpace, Word } kind = Kind::Range;
  char32_t lo = 0;
  char32_t hi = 0;
  std::uint32_t categories = 0;  // bit per unicode::GeneralCategory
  bool negated = false;
};

struct CharClass {
  std::vector<ClassItem> items;
  bool negated = false;
  bool ignore_case = false;
  std::array<std::uint64_t, 2> ascii{};  // precomputed answers for code points < 128

  void finish();  // fills `ascii`; call once the items are complete
  bool contains(char32_t cp) const {
    if (cp < 128) return ((ascii[cp >> 6] >> (cp & 63)) & 1U) != 0;
    return slow_contains(cp);
  }
  bool slow_contains(char32_t cp) const;
};

struct RegexNode {
  enum class Kind { Char, Class, AnyButNewline, Sequence, Alternation, Repeat, Lookahead };
  enum class Greed { Greedy, Lazy, Possessive };
  static constexpr std::size_t kUnbounded = static_cast<std::size_t>(-1);

  Kind kind = Kind::Sequence;
  char32_t ch = 0;          // Char
  bool ignore_case = false;  // Char
  CharClass set;            // Class
  std::vector<std::unique_ptr<RegexNode>> children;  // Sequence, Alternation; [0] of Repeat, Lookahead
  std::size_t min = 0, max = 0;                      // Repeat
  Greed greed = Greed::Greedy;                       // Repeat
  bool negative = false;                             // Lookahead

  // What a match can start with (filled by analyze_first_chars): lets an alternation skip the
  // alternatives that cannot match at a position without trying them.
  struct FirstChars {
    std::array<std::uint64_t, 2> ascii{};  // possible first code points below 128
    bool non_ascii = false;                 // whether a code point >= 128 may come first
    bool nullable = false;                  // may match the empty string (then no filtering)
    bool can_start_with(char32_t cp) const {
      if (nullable) return true;
      if (cp >= 128) return non_ascii;
      return ((ascii[cp >> 6] >> (cp & 63)) & 1U) != 0;
    }
  } first;

  bool is_single_char() const {
    return kind == Kind::Char || kind == Kind::Class || kind == Kind::AnyButNewline;
  }
  bool matches_char(char32_t cp) const;
};

struct Regex::Program {
  std::unique_ptr<RegexNode> root;
};

// Parses `pattern`; throws RegexError naming an unsupported construct and its offset.
std::unique_ptr<RegexNode> parse_regex(std::string_view pattern);

// Fills RegexNode::first for `node` and everything below it.
void analyze_first_chars(RegexNode& node);

}  // namespace llmload::tokenizer
