#include "llmload/server/mock_tokenizer.hpp"

#include <set>
#include <string>
#include <vector>

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
  for (const char* w : {"b", "hello", "zzzzzzzz", "The", "don't", "\xff\xfe"}) {
    EXPECT_GE(token_id(w), kGeneratorWords) << w << ": hashed ids never take a generator word's id";
    EXPECT_LT(token_id(w), kVocabSize);
  }
}

TEST(MockTokenizer, TokenIdsArePinnedAcrossProcessesAndPlatforms) {
  // A pure function of the bytes (FNV-1a 64): these values must never change, or prefix caches
  // and recorded replays built on earlier ids break.
  EXPECT_EQ(token_id("hello"), 216062219U);  // 32 + 0xa430d84680aabd0b % (2^31 - 32)
  EXPECT_EQ(token_id("Hello,"), token_id("Hello,"));
  EXPECT_NE(token_id("Hello"), token_id("hello"));
}

TEST(MockTokenizer, GeneratorWordsHaveIdsZeroToThirtyOne) {
  for (std::int64_t k = 0; k < 64; ++k) {
    const std::string_view word = generated_token(k).substr(1);
    EXPECT_EQ(token_id(word), generated_token_id(k)) << word;
    EXPECT_EQ(generated_token_id(k), static_cast<std::uint32_t>(k % 32));
    EXPECT_EQ(generator_word(generated_token_id(k)), word);
  }
  EXPECT_EQ(token_id("the"), 0U);
  EXPECT_EQ(token_id("of"), 1U);
  EXPECT_TRUE(generator_word(32).empty());
}

TEST(MockTokenizer, EscapeFormIsTheIdItNames) {
  EXPECT_EQ(token_id("<|123456|>"), 123456U);
  EXPECT_EQ(token_id("<|0|>"), 0U);
  EXPECT_EQ(token_id("<|2147483647|>"), 2147483647U);
  EXPECT_EQ(token_escape(77), "<|77|>");
  // Not escapes: hashed like any word.
  for (const char* w : {"<|2147483648|>", "<||>", "<|-1|>", "<|+1|>", "<|1a|>", "<|1|", "|1|>", "<|99999999999|>"}) {
    EXPECT_EQ(token_id(w), token_id(std::string(w))) << w;
    EXPECT_GE(token_id(w), kGeneratorWords) << w;
  }
}

TEST(MockTokenizer, AppendTokenIdsFollowsTheWords) {
  std::vector<std::uint32_t> ids = {9};
  append_token_ids("  the  cat\n<|40|> ", ids);
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{9, 0, token_id("cat"), 40}));
}

TEST(MockTokenizer, DetokenizeOfTokenizeGivesBackTheWords) {
  TokenVocabulary vocab;
  const std::string text = "  Hello,\tbrave new\nworld of <|12345|> tokens  ";
  vocab.remember_words(text);
  std::vector<std::uint32_t> ids;
  append_token_ids(text, ids);
  // The escape spells the id it names (no word was remembered for 12345).
  EXPECT_EQ(vocab.detokenize(ids), "Hello, brave new world of <|12345|> tokens");
  EXPECT_EQ(vocab.size(), 5u) << "generator words and escapes need no memory";
}

TEST(MockTokenizer, UnknownIdsSpellAsEscapesThatTokenizeBack) {
  const TokenVocabulary vocab;  // a fresh process: nothing remembered
  const std::vector<std::uint32_t> ids = {token_id("unseen"), 3, 2147483647U, 40};
  const std::string text = vocab.detokenize(ids);
  EXPECT_EQ(text, "<|" + std::to_string(token_id("unseen")) + "|> to <|2147483647|> <|40|>");
  std::vector<std::uint32_t> again;
  append_token_ids(text, again);
  EXPECT_EQ(again, ids) << "tokenize(detokenize(ids)) == ids for every id";
}

TEST(MockTokenizer, GeneratedTextDetokenizesWithoutMemory) {
  std::string text;
  append_generated_text(text, 40);
  std::vector<std::uint32_t> ids;
  append_token_ids(text, ids);
  ASSERT_EQ(ids.size(), 40u);
  for (std::size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(ids[k], generated_token_id(static_cast<std::int64_t>(k)));
  EXPECT_EQ(" " + TokenVocabulary().detokenize(ids), text);
}

TEST(MockTokenizer, VocabularyIsBounded) {
  TokenVocabulary vocab(/*byte_limit=*/3 * (64 + 5));
  vocab.remember_words("aaaaa bbbbb ccccc ddddd eeeee");
  EXPECT_EQ(vocab.size(), 3u);
  EXPECT_EQ(vocab.spell(token_id("aaaaa")), "aaaaa");
  EXPECT_EQ(vocab.spell(token_id("eeeee")), token_escape(token_id("eeeee")));
  vocab.remember_words("aaaaa");  // already known: no growth
  EXPECT_EQ(vocab.size(), 3u);
}

TEST(MockTokenizer, AppendGeneratedTextMatchesTokenByToken) {
  for (std::int64_t n : {0, 1, 31, 32, 33, 100}) {
    std::string expected;
    for (std::int64_t k = 0; k < n; ++k) expected += generated_token(k);
    std::string got = "x";
    append_generated_text(got, n);
    EXPECT_EQ(got, "x" + expected) << n;
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
