// Files the tokenizer does not support are refused at load time with a TokenizerError that
// names the file, the unsupported part and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "llmload/tokenizer/tokenizer.hpp"
#include "tiny_tokenizers.hpp"

namespace llmload::tokenizer {
namespace {

std::string load_error(const nlohmann::json& j) {
  try {
    load_hf_tokenizer_json(j.dump(), "/models/m/tokenizer.json");
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "(loaded without an error)";
}

void expect_mentions(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing \"" << p << "\" in: " << msg;
}

TEST(tokenizer_errors, WordPieceModelIsRefusedByName) {
  auto j = testing::byte_level_json();
  j["model"]["type"] = "WordPiece";
  expect_mentions(load_error(j), {"/models/m/tokenizer.json", "WordPiece", "not supported", "omit --tokenizer"});
}

TEST(tokenizer_errors, UnknownPreTokenizerNormalizerDecoderAreRefusedByName) {
  auto j = testing::byte_level_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_mentions(load_error(j), {"pre_tokenizer type \"Whitespace\"", "supported: ", "ByteLevel"});
  j = testing::byte_level_json();
  j["normalizer"] = {{"type", "NFKC"}};
  expect_mentions(load_error(j), {"normalizer type \"NFKC\"", "NFC"});
  j = testing::byte_level_json();
  j["decoder"] = {{"type", "WordPiece"}};
  expect_mentions(load_error(j), {"decoder type \"WordPiece\""});
  j = testing::byte_level_json();
  j["post_processor"] = {{"type", "Mystery"}};
  expect_mentions(load_error(j), {"post_processor type \"Mystery\""});
}

TEST(tokenizer_errors, RegexOutsideTheSubsetIsRefusedNamingTheConstruct) {
  auto j = testing::byte_level_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(?<=x)\\p{L}+"}}}, {"behavior", "Isolated"}, {"invert", false}};
  expect_mentions(load_error(j), {"/models/m/tokenizer.json", "pre_tokenizer Split", "lookbehind", "not supported"});
}

TEST(tokenizer_errors, DropoutAndSubwordAffixesAreRefused) {
  auto j = testing::byte_level_json();
  j["model"]["dropout"] = 0.1;
  expect_mentions(load_error(j), {"dropout"});
  j = testing::byte_level_json();
  j["model"]["continuing_subword_prefix"] = "##";
  expect_mentions(load_error(j), {"continuing_subword_prefix"});
}

TEST(tokenizer_errors, MalformedFilesSayWhatIsWrong) {
  try {
    load_hf_tokenizer_json("{not json", "x/tokenizer.json");
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    expect_mentions(e.what(), {"x/tokenizer.json", "not valid JSON"});
  }
  auto j = testing::byte_level_json();
  j["model"]["merges"].push_back("h zz");
  expect_mentions(load_error(j), {"model.merges[9]", "not in model.vocab"});
}

// Ids that were negative or near INT32_MAX wrote outside the id table or asked for GiBs
// (fuzz_tokenizer found an id of 888888885; tests/data/fuzz/tokenizer/regress-*-id*).
TEST(tokenizer_errors, TokenIdsOutOfRangeAreRefused) {
  auto j = testing::byte_level_json();
  j["added_tokens"][0]["id"] = -1;
  expect_mentions(load_error(j), {"/models/m/tokenizer.json", "added token \"<|end|>\" has id -1", "not a token id"});
  j = testing::byte_level_json();
  j["added_tokens"][0]["id"] = 2147483647;
  expect_mentions(load_error(j), {"added token \"<|end|>\" has id 2147483647", "0 to 16777215"});
  j = testing::byte_level_json();
  j["model"]["vocab"]["hello"] = 2147483647;
  expect_mentions(load_error(j), {"model.vocab[\"hello\"] is not a token id", "0 to 16777215"});
  j = testing::byte_level_json();
  j["model"]["vocab"]["hello"] = -5;
  expect_mentions(load_error(j), {"model.vocab[\"hello\"] is not a token id"});
  // Sparse but bounded ids load.
  j = testing::byte_level_json();
  j["added_tokens"][0]["id"] = 100000;
  j["post_processor"] = nullptr;
  const auto tok = load_hf_tokenizer_json(j.dump());
  EXPECT_EQ(tok->vocab_size(), 100001U);
  EXPECT_EQ(tok->encode("hello<|end|>"), (std::vector<TokenId>{11, 100000}));
}

nlohmann::json with_split(const std::string& regex) {
  auto j = testing::byte_level_json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  return j;
}

// "((((...a))))" recursed once per level in the parser (a stack overflow at a few thousand levels,
// within an 8 KiB file), and "a*****..." made as deep a tree
// (tests/data/fuzz/tokenizer/regress-regex-nested-groups, regress-regex-stacked-quantifiers).
TEST(tokenizer_errors, DeeplyNestedRegexesAreRefused) {
  expect_mentions(load_error(with_split(std::string(4000, '(') + "a" + std::string(4000, ')'))),
                  {"pre_tokenizer Split", "groups nested more than 64 deep", "not supported"});
  expect_mentions(load_error(with_split("a" + std::string(3000, '*'))), {"more than 4 quantifiers in a row"});
  EXPECT_NO_THROW(load_hf_tokenizer_json(with_split(std::string(64, '(') + "l+" + std::string(64, ')')).dump()));
  EXPECT_NO_THROW(load_hf_tokenizer_json(with_split("l{1,2}+?").dump()));
}

// A Split pattern that backtracks exponentially ("(h|h)*e" on a run of h) hung encode, and a
// repeated group ("(?:he)*") recursed once per repetition (a stack overflow on a long text). The
// matcher now gives up past its budget: the rest of the text is then not split (here: one word, as
// it would have been anyway), and encode returns (tests/data/fuzz/tokenizer/regress-regex-*).
TEST(tokenizer_errors, PathologicalRegexesGiveUpInsteadOfHangingOrOverflowing) {
  const auto backtracking = load_hf_tokenizer_json(with_split("(h|h)*e").dump());
  EXPECT_EQ(backtracking->encode(std::string(60, 'h')), std::vector<TokenId>(60, 0));  // 60 "h"
  EXPECT_EQ(backtracking->encode("he he"), (std::vector<TokenId>{8, 4, 8}));          // split as usual
  const auto recursive = load_hf_tokenizer_json(with_split("(?:he)*").dump());
  std::string long_text;
  for (int i = 0; i < 100000; ++i) long_text += "he";
  EXPECT_EQ(recursive->encode(long_text), std::vector<TokenId>(100000, 8));  // "he" 100000 times
  EXPECT_EQ(recursive->encode("hehe hehe"), (std::vector<TokenId>{8, 8, 4, 8, 8}));
}

// Replace steps in a Sequence multiply the text's length (8 steps of "a" -> 16 "a" asked for 16^8
// times the text: out of memory), as do Metaspace steps whose replacement holds a space
// (tests/data/fuzz/tokenizer/regress-*-growth, regress-normalizer-regex-empty-matches).
TEST(tokenizer_errors, NormalizersAndDecodersThatGrowTextWithoutBoundAreRefused) {
  const nlohmann::json grow = {{"type", "Replace"}, {"pattern", {{"String", "l"}}}, {"content", std::string(16, 'l')}};
  auto j = testing::byte_level_json();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", nlohmann::json::array({grow, grow, grow})}};
  expect_mentions(load_error(j),
                  {"/models/m/tokenizer.json", "a normalizer that can make the text more than 256 times longer",
                   "not supported"});
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", nlohmann::json::array({grow, grow})}};
  EXPECT_NO_THROW(load_hf_tokenizer_json(j.dump()));  // 16 * 16 = 256
  j = testing::byte_level_json();
  j["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "x*"}}}, {"content", std::string(200, 'l')}};
  expect_mentions(load_error(j), {"more than 256 times longer"});
  j = testing::byte_level_json();
  j["decoder"] = {{"type", "Sequence"}, {"decoders", nlohmann::json::array({grow, grow, grow})}};
  expect_mentions(load_error(j), {"a decoder that can make the text more than 256 times longer"});
  j = testing::sentencepiece_style_json();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "  "}};
  expect_mentions(load_error(j), {"Metaspace replacement \"  \" is not one character"});
}

TEST(tokenizer_errors, MissingFilesAndDirectories) {
  try {
    load_tokenizer("/nonexistent/model/dir");
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    expect_mentions(e.what(), {"/nonexistent/model/dir", "no such file"});
  }
  const auto dir = std::filesystem::temp_directory_path() / ("llmload_tokenizer_err_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  try {
    load_tokenizer(dir);
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    expect_mentions(e.what(), {"neither tokenizer.json nor tokenizer.model"});
  }
  std::ofstream(dir / "tokenizer.model") << "not a sentencepiece model";
  try {
    load_tokenizer(dir);
    ADD_FAILURE();
  } catch (const TokenizerError& e) {
    expect_mentions(e.what(), {"tokenizer.model"});
    if (sentencepiece_available()) expect_mentions(e.what(), {"libsentencepiece cannot load it"});
    else expect_mentions(e.what(), {"install libsentencepiece-dev"});
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmload::tokenizer
