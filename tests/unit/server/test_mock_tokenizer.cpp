#include "llmload/server/mock_tokenizer.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace llmload::server {
namespace {

TEST(MockTokenizer, CountsWhitespaceSeparatedWords) {
  EXPECT_EQ(count_words(""), 0);
  EXPECT_EQ(count_words("   \t\n "), 0);
  EXPECT_EQ(count_words("hello"), 1);
  EXPECT_EQ(count_words("  hello   world  "), 2);
  EXPECT_EQ(count_words("a\tb\nc\rd\fe\vf"), 6);
  EXPECT_EQ(count_words("don't split-on punctuation, please."), 4);
}

TEST(MockTokenizer, SplitAgreesWithCount) {
  const std::string text = "  The quick\tbrown\n\nfox  ";
  const auto words = split_words(text);
  ASSERT_EQ(static_cast<std::int64_t>(words.size()), count_words(text));
  EXPECT_EQ(words[0], "The");
  EXPECT_EQ(words[3], "fox");
}

TEST(MockTokenizer, TokenIdsAreStableAndInRange) {
  EXPECT_EQ(token_id("hello"), token_id("hello"));
  EXPECT_NE(token_id("hello"), token_id("world"));
  for (const char* w : {"a", "b", "hello", "zzzzzzzz"}) {
    EXPECT_GE(token_id(w), 0);
    EXPECT_LT(token_id(w), 100000);
  }
}

TEST(MockTokenizer, GeneratedTokensAreSingleWordsWithLeadingSpace) {
  for (std::int64_t k = 0; k < 100; ++k) {
    const std::string_view t = generated_token(k);
    ASSERT_GE(t.size(), 2u);
    EXPECT_EQ(t[0], ' ');
    EXPECT_EQ(count_words(t), 1);
    for (char c : t.substr(1)) EXPECT_TRUE((c >= 'a' && c <= 'z')) << "token needs no JSON escaping: " << t;
  }
  EXPECT_EQ(generated_token(0), " the");
}

TEST(MockTokenizer, ConcatenatedOutputHasExactlyOneWordPerToken) {
  std::string text;
  for (std::int64_t k = 0; k < 257; ++k) text += generated_token(k);
  EXPECT_EQ(count_words(text), 257);
}

}  // namespace
}  // namespace llmload::server
