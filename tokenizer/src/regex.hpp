// A small backtracking regular-expression engine for the pre-tokenizer patterns of Hugging Face
// tokenizer.json files (GPT-2, Llama 3, Qwen, DeepSeek V3 and the like), which are written for
// Oniguruma and need Unicode properties and lookahead that std::regex lacks.
//
// Supported, with Oniguruma's meaning: literals and escapes (\t \n \r \f \v \e \a \0, \xHH,
// \x{H..}, \uHHHH, escaped punctuation); `.` (anything but \n); classes [...] with ranges,
// negation, nested escapes; \s \S (White_Space), \d \D (Nd), \w \W (letters, marks, Nd, Nl,
// Pc); \p{..} / \P{..} / \p{^..} with a general category (L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl
// No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Cs Co Cn, or their long names);
// alternation; groups ( ), (?: ), (?i: ) (ASCII case folding), (?= ), (?! ); quantifiers
// ? * + {n} {n,} {n,m}, each greedy, lazy (?) or possessive (+). Capturing groups match as
// plain groups (the splitters use the whole match).
// Anything else (anchors, \b, lookbehind, backreferences, atomic groups, scripts, inline flags
// other than i) is refused by the constructor with a RegexError naming the construct.
//
// Matching is over code points of UTF-8 text; positions are byte offsets. A compiled Regex is
// immutable and may be shared by threads.
//
// Bounds (for patterns from malformed files): the constructor refuses groups nested more than 64
// deep and more than 4 quantifiers in a row; find_all and search give up after 256 steps per
// code point of the text or 2000 levels of recursion (catastrophic backtracking such as "(a|a)*b",
// or a repeated group iterated thousands of times), and then report no more matches. The
// tokenizers' own patterns never come near either.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::tokenizer {

class RegexError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RegexMatch {
  std::size_t begin = 0;  // byte offsets into the searched text
  std::size_t end = 0;
};

class Regex {
 public:
  // Throws RegexError for syntax outside the subset above (the message names the construct
  // and its offset in the pattern).
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every non-overlapping match, leftmost first (an empty match advances by one code point); the
  // matches before the budget ran out, if it did.
  std::vector<RegexMatch> find_all(std::string_view text) const;
  // The first match starting at or after byte offset `from`; false when there is none (or the
  // budget ran out first).
  bool search(std::string_view text, std::size_t from, RegexMatch& match) const;

  const std::string& pattern() const { return pattern_; }

  struct Program;  // the parsed pattern (regex.cpp)

 private:
  std::string pattern_;
  std::unique_ptr<Program> program_;
};

}  // namespace llmload::tokenizer
