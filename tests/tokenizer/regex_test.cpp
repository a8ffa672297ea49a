// The regex engine (tokenizer/src/regex.hpp) on the constructs the tokenizers' patterns use,
// and its refusals.
#include "regex.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmload::tokenizer {
namespace {

std::vector<std::string> pieces(const std::string& pattern, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& m : Regex(pattern).find_all(text)) out.push_back(text.substr(m.begin, m.end - m.begin));
  return out;
}

using V = std::vector<std::string>;

TEST(tokenizer_regex, LiteralsAlternationAndGroups) {
  EXPECT_EQ(pieces("ab|c", "abcab"), (V{"ab", "c", "ab"}));
  EXPECT_EQ(pieces("(?:ab)+", "ababxab"), (V{"abab", "ab"}));
  EXPECT_EQ(pieces("a(b|c)d", "abd acd aed"), (V{"abd", "acd"}));
  EXPECT_EQ(pieces("\\.\\*\\\\", ".*\\"), (V{".*\\"}));
}

TEST(tokenizer_regex, CaseInsensitiveGroupFoldsAsciiOnly) {
  EXPECT_EQ(pieces("(?i:'s|'ll)", "it's IT'S we'LL"), (V{"'s", "'S", "'LL"}));
  EXPECT_EQ(pieces("(?i:[a-c]+)", "xAbCx"), (V{"AbC"}));
  EXPECT_EQ(pieces("a(?i:b)c", "aBc ABc"), (V{"aBc"}));
}

TEST(tokenizer_regex, UnicodeCategoriesAndShorthands) {
  EXPECT_EQ(pieces("\\p{L}+", "héllo мир 你好 123"), (V{"héllo", "мир", "你好"}));
  EXPECT_EQ(pieces("\\p{N}+", "a1٣Ⅻ½b"), (V{"1٣Ⅻ½"}));
  EXPECT_EQ(pieces("\\p{Lu}", "aBcÉ"), (V{"B", "É"}));
  EXPECT_EQ(pieces("\\P{L}+", "ab12cd"), (V{"12"}));
  EXPECT_EQ(pieces("[\\p{P}\\p{S}]+", "a!?$+b"), (V{"!?$+"}));
  EXPECT_EQ(pieces("\\s+", "a \t\u00a0\u3000b"), (V{" \t\u00a0\u3000"}));
  EXPECT_EQ(pieces("\\d+", "x١٢3y"), (V{"١٢3"}));
  EXPECT_EQ(pieces("\\w+", "ab_1 é!"), (V{"ab_1", "é"}));
  EXPECT_EQ(pieces("[^\\s\\p{L}]+", "ab 12!? cd"), (V{"12!?"}));
  EXPECT_EQ(pieces("[\\u4e00-\\u9fa5]+", "ab中文cd"), (V{"中文"}));
  EXPECT_EQ(pieces("[\\x41-\\x43\\x{1F600}]+", "zABC😀z"), (V{"ABC😀"}));
}

TEST(tokenizer_regex, QuantifiersGreedyLazyPossessiveAndCounted) {
  EXPECT_EQ(pieces("\\p{N}{1,3}", "1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(pieces("a{2}", "aaaaa"), (V{"aa", "aa"}));
  EXPECT_EQ(pieces("a{2,}", "a aa aaaa"), (V{"aa", "aaaa"}));
  EXPECT_EQ(pieces("a+?", "aaa"), (V{"a", "a", "a"}));
  EXPECT_EQ(pieces("a*+a", "aaa"), V{});  // possessive: gives nothing back
  EXPECT_EQ(pieces("a?b", "ab b"), (V{"ab", "b"}));
  EXPECT_EQ(pieces("x{2}+", "xxxxxx"), (V{"xxxxxx"}));  // Oniguruma: (x{2})+, not possessive
}

TEST(tokenizer_regex, Lookahead) {
  // GPT-2's \s+(?!\S): a run of spaces before a word leaves its last space to the word.
  EXPECT_EQ(pieces("\\s+(?!\\S)|\\s+", "a   b"), (V{"  ", " "}));
  EXPECT_EQ(pieces("a(?=b)", "ab ac"), (V{"a"}));
}

TEST(tokenizer_regex, Llama3PatternSplitsLikeTheReference) {
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(pieces(llama3, "Hello world, it's 12345!\n\n  ok"),
            (V{"Hello", " world", ",", " it", "'s", " ", "123", "45", "!\n\n", " ", " ok"}));
}

TEST(tokenizer_regex, SearchFromAnOffset) {
  RegexMatch m;
  ASSERT_TRUE(Regex("\\d+").search("ab12cd34", 4, m));
  EXPECT_EQ(m.begin, 6U);
  EXPECT_EQ(m.end, 8U);
  EXPECT_FALSE(Regex("\\d+").search("ab12cd", 4, m));
}

TEST(tokenizer_regex, EmptyMatchesAdvance) {
  EXPECT_EQ(pieces("a*", "bab"), (V{"", "a", "", ""}));
}

TEST(tokenizer_regex, RefusesConstructsOutsideTheSubsetNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(?<=a)b", "lookbehind"}, {"(?<!a)b", "lookbehind"}, {"^a", "anchor"},       {"a$", "anchor"},
      {"\\bword", "\\b"},        {"(a)\\1", "\\1"},         {"(?>a)", "atomic"},      {"\\p{Han}", "\\p{Han}"},
      {"[[:alpha:]]", "POSIX"},  {"[a&&b]", "&&"},          {"(?x)a", "inline option"}, {"(?<n>a)", "named"},
      {"a)", "unmatched"},       {"(a", "without its ')'"}, {"*a", "nothing to repeat"},
  };
  for (const auto& [pattern, named] : cases) {
    try {
      Regex r(pattern);
      ADD_FAILURE() << pattern << " was accepted";
    } catch (const RegexError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(named), std::string::npos) << pattern << ": " << msg;
      EXPECT_NE(msg.find("not supported"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace llmload::tokenizer
