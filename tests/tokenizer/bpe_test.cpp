// BPE tokenizers built from hand-made tokenizer.json files (tiny_tokenizers.hpp): merges by
// rank, leftmost first; added tokens; post-processor; decoders; byte fallback; loading from a
// model directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "llmload/tokenizer/tokenizer.hpp"
#include "tiny_tokenizers.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

using Ids = std::vector<TokenId>;

std::unique_ptr<Tokenizer> from_json(const nlohmann::json& j) { return load_hf_tokenizer_json(j.dump(), "tiny.json"); }

TEST(tokenizer_bpe, ByteLevelMergesByRankAndDecodes) {
  const auto tok = from_json(testing::byte_level_json());
  EXPECT_EQ(tok->kind(), "hf-bpe-byte-level");
  EXPECT_EQ(tok->encode("hello world"), (Ids{11, 16}));
  EXPECT_EQ(tok->encode("lll"), (Ids{9, 2}));  // two equal-rank pairs: the leftmost merges
  EXPECT_EQ(tok->encode(" worl"), (Ids{14, 2}));
  EXPECT_EQ(tok->decode(Ids{11, 16}), "hello world");
  EXPECT_EQ(tok->count("hello world hello"), 4U);  // " hello" is "Ġ" + "hello" here
  EXPECT_EQ(tok->vocab_size(), 19U);
  EXPECT_EQ(tok->token_id("Ġworld"), 16);
  EXPECT_EQ(tok->token_id("<|end|>"), 17);
  EXPECT_FALSE(tok->token_id("nope").has_value());
}

TEST(tokenizer_bpe, MergesInArrayFormAreTheSame) {
  const auto a = from_json(testing::byte_level_json(false));
  const auto b = from_json(testing::byte_level_json(true));
  for (const char* text : {"hello world", "lll", "hold the door", "he  llo\n"}) {
    EXPECT_EQ(a->encode(text), b->encode(text)) << text;
  }
}

TEST(tokenizer_bpe, IgnoreMergesTakesAWordInTheVocabularyWhole) {
  const auto tok = from_json(testing::byte_level_json(false, true));
  EXPECT_EQ(tok->encode(" worl"), (Ids{18}));
  EXPECT_EQ(tok->encode("hello world"), (Ids{11, 16}));
}

TEST(tokenizer_bpe, AddedTokensAreMatchedBeforePreTokenization) {
  const auto tok = from_json(testing::byte_level_json());
  EXPECT_EQ(tok->encode("hello<|end|> world"), (Ids{11, 17, 16}));
  EXPECT_EQ(tok->encode("hello world", true), (Ids{11, 16, 17}));
  EXPECT_EQ(tok->decode(Ids{11, 17, 16}, true), "hello world");
  EXPECT_EQ(tok->decode(Ids{11, 17, 16}, false), "hello<|end|> world");
  EXPECT_EQ(tok->decode(Ids{11, 9999, -1}), "hello");  // unknown ids are skipped
}

TEST(tokenizer_bpe, SentencePieceStyleWithByteFallback) {
  const auto tok = from_json(testing::sentencepiece_style_json());
  EXPECT_EQ(tok->kind(), "hf-bpe-sentencepiece");
  EXPECT_EQ(tok->encode("hi hi"), (Ids{7, 7}));
  EXPECT_EQ(tok->encode("hi\u00e9"), (Ids{7, 1, 2}));  // é is not in the vocabulary: its bytes
  EXPECT_EQ(tok->encode("hiz"), (Ids{7, 0}));          // z has no byte token either: <unk>
  EXPECT_EQ(tok->encode("hi", true), (Ids{8, 7}));
  EXPECT_EQ(tok->decode(Ids{7, 1, 2, 7}), "hi\u00e9 hi");
  EXPECT_EQ(tok->decode(Ids{8, 7}, false), "<s> hi");
  EXPECT_EQ(tok->decode(Ids{7, 1}), "hi\uFFFD");  // a lone byte of a 2-byte character
}

TEST(tokenizer_bpe, SentencePieceStyleTextIsCutOnlyWhereNoTokenCanSpan) {
  auto j = testing::sentencepiece_style_json();
  const auto plain = from_json(j);
  EXPECT_EQ(plain->encode("hi hi hi"), (Ids{7, 7, 7}));  // cut before each "▁": same as one word
  // A token "i▁" (ranked first) spans the place before the second "▁": no cut there.
  j["model"]["vocab"]["i▁"] = 9;
  j["model"]["merges"] = {"i ▁", "▁ h", "▁h i"};
  const auto spanning = from_json(j);
  EXPECT_EQ(spanning->encode("hi hi"), (Ids{6, 9, 4, 5}));
}

TEST(tokenizer_bpe, LoadsFromAModelDirectoryOrTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("llmload_tokenizer_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << testing::byte_level_json().dump();
  const auto from_dir = load_tokenizer(dir);
  const auto from_file = load_tokenizer(dir / "tokenizer.json");
  EXPECT_EQ(from_dir->encode("hello world"), (Ids{11, 16}));
  EXPECT_EQ(from_file->source(), dir / "tokenizer.json");
  std::filesystem::remove_all(dir);
}

TEST(tokenizer_bpe, ArbitraryBytesAreEncodedAndDecodedWithoutHarm) {
  // Not UTF-8 at all, truncated sequences, NULs: every path must cope (the sanitizer builds
  // check), and decoding always gives UTF-8.
  const auto byte_level = from_json(testing::byte_level_json());
  const auto sp_style = from_json(testing::sentencepiece_style_json());
  std::uint32_t x = 12345;
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int length = round % 40;
    for (int i = 0; i < length; ++i) {
      x = x * 1664525U + 1013904223U;
      text.push_back(static_cast<char>(x >> 24));
    }
    if (round % 3 == 0) text += "\xE2\x96";  // a truncated "▁"
    const auto a = byte_level->encode(text, true);
    const auto b = sp_style->encode(text, true);
    EXPECT_TRUE(unicode::is_valid_utf8(byte_level->decode(a, false))) << round;
    EXPECT_TRUE(unicode::is_valid_utf8(sp_style->decode(b, false))) << round;
  }
}

TEST(tokenizer_bpe, ConcurrentEncodingGivesTheSameIds) {
  const auto tok = from_json(testing::byte_level_json());
  std::vector<std::thread> threads;
  std::vector<Ids> results(4);
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) results[t] = tok->encode("hello world lll hold " + std::to_string(i % 7));
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& r : results) EXPECT_EQ(r, tok->encode("hello world lll hold 6"));
}

}  // namespace
}  // namespace llmload::tokenizer
