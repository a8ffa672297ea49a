// Output consistency (analysis/consistency.hpp): the first divergent token by words and by token
// ids, and the consistency section's rate, interval, histogram and diverged list.
#include "llmload/analysis/consistency.hpp"

#include <gtest/gtest.h>

#include <string>

namespace consistency_test {

using namespace llmload::analysis;

const TokenSplitter kWords{};

// A "tokenizer" for the ids method: one id per byte.
TokenSplitter byte_ids() {
  TokenSplitter s;
  s.method = "tokenizer";
  s.ids = [](const std::string& t) { return std::vector<std::int64_t>(t.begin(), t.end()); };
  return s;
}

// A valid UTF-8 string (no byte outside a complete sequence).
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

OutputPair pair(std::uint64_t item, std::string reference, std::string output) {
  OutputPair p;
  p.item = item;
  p.reference = std::move(reference);
  p.output = std::move(output);
  return p;
}


TEST(ConsistencyDivergence, Words) {
  EXPECT_EQ(first_divergence("the cat sat", "the cat sat", kWords), std::nullopt);
  EXPECT_EQ(first_divergence("", "", kWords), std::nullopt);
  EXPECT_EQ(first_divergence("dog sat", "cat sat", kWords), 0);
  EXPECT_EQ(first_divergence("the cat sat on", "the cat ran on", kWords), 2);
  EXPECT_EQ(first_divergence("the cat", "the cats", kWords), 1);  // words, not bytes
  // A prefix: the first word past the shorter text.
  EXPECT_EQ(first_divergence("the cat", "the cat sat down", kWords), 2);
  EXPECT_EQ(first_divergence("the cat sat down", "the cat", kWords), 2);
  EXPECT_EQ(first_divergence("", "word", kWords), 0);
  // Runs of ASCII whitespace separate words: tabs and newlines count as spaces.
  EXPECT_EQ(first_divergence("a\tb\nc d", "a b c e", kWords), 3);
  // The same words, different whitespace: the first word whose preceding whitespace differs.
  EXPECT_EQ(first_divergence("a b  c", "a b c", kWords), 2);
  EXPECT_EQ(first_divergence("a b", "a b\n", kWords), 2);
}

TEST(ConsistencyDivergence, TokenIds) {
  const TokenSplitter ids = byte_ids();
  EXPECT_EQ(first_divergence("abc", "abc", ids), std::nullopt);
  EXPECT_EQ(first_divergence("abc", "xbc", ids), 0);
  EXPECT_EQ(first_divergence("abcdef", "abcxef", ids), 3);
  EXPECT_EQ(first_divergence("abc", "abcdef", ids), 3);
  EXPECT_EQ(first_divergence("abcdef", "ab", ids), 2);
  // Different texts the tokenizer cannot tell apart: past the end.
  TokenSplitter blind;
  blind.ids = [](const std::string&) { return std::vector<std::int64_t>{7, 8}; };
  EXPECT_EQ(first_divergence("x", "y", blind), 2);
}

// The server's own tokens (token_ids or logprobs) come first: a pair compares by them when it has
// them, else by the splitter; the section says which method, or "mixed" with counts.
OutputPair token_pair(std::uint64_t item, std::string text_a, std::vector<std::string> a, std::string text_b,
                      std::vector<std::string> b) {
  OutputPair p = pair(item, std::move(text_a), std::move(text_b));
  p.tokens_from = "token_ids";
  p.reference_tokens = std::move(a);
  p.output_tokens = std::move(b);
  return p;
}

TEST(ConsistencyDivergence, ServerTokensComeFirst) {
  // "hello world" as two tokens vs three: the words agree, the tokens do not (position 1).
  EXPECT_EQ(first_divergence(token_pair(0, "hello world", {"1", "2"}, "hello world", {"1", "3", "4"}), kWords), 1);
  EXPECT_EQ(first_divergence(token_pair(0, "a b", {"1", "2"}, "a b", {"1", "2"}), kWords), std::nullopt);
  // Texts differ in the last word: token 2 of 3.
  EXPECT_EQ(first_divergence(token_pair(0, "a b c", {"5", "6", "7"}, "a b d", {"5", "6", "8"}), kWords), 2);
  // A prefix: the shorter list's length.
  EXPECT_EQ(first_divergence(token_pair(0, "a", {"5"}, "a b", {"5", "6"}), kWords), 1);
  // Without tokens_from, the splitter (words) decides.
  OutputPair plain = pair(0, "a b c", "a x c");
  EXPECT_EQ(first_divergence(plain, kWords), 1);
}

TEST(ConsistencySummary, MethodIsRecordedAndMixedIsCounted) {
  std::vector<OutputPair> pairs = {token_pair(1, "a b", {"1", "2"}, "a b", {"1", "2"}),
                                   token_pair(2, "a b", {"1", "2"}, "a c", {"1", "9"})};
  auto j = consistency_summary(pairs, kWords);
  EXPECT_EQ(j["method"], "token_ids");
  EXPECT_EQ(j["methods"]["token_ids"], 2);
  EXPECT_EQ(j["identical"], 1);
  EXPECT_EQ(j["first_divergence"]["min"], 1);
  pairs.push_back(pair(3, "x y", "x y"));
  j = consistency_summary(pairs, kWords);
  EXPECT_EQ(j["method"], "mixed");
  EXPECT_EQ(j["methods"]["token_ids"], 2);
  EXPECT_EQ(j["methods"]["words"], 1);
  EXPECT_EQ(j["compared"], 3);
}

TEST(ConsistencySummary, RateIntervalAndTheDocumentedShape) {
  std::vector<OutputPair> pairs;
  for (std::uint64_t i = 0; i < 5; ++i) pairs.push_back(pair(i, "same answer", "same answer"));
  for (std::uint64_t i = 5; i < 10; ++i) pairs.push_back(pair(i, "w0 w1 w2 w3", "w0 w1 x w3"));
  const auto j = consistency_summary(pairs, kWords);
  EXPECT_EQ(j["method"], "words");
  EXPECT_EQ(j["compared"], 10);
  EXPECT_EQ(j["identical"], 5);
  EXPECT_DOUBLE_EQ(j["exact_match_rate"].get<double>(), 0.5);
  // 5 of 10 at 95% by hand (accuracy_test.cpp): [0.236593091, 0.763406909].
  EXPECT_NEAR(j["exact_match_ci95"][0].get<double>(), 0.236593091, 1e-8);
  EXPECT_NEAR(j["exact_match_ci95"][1].get<double>(), 0.763406909, 1e-8);
  EXPECT_EQ(j["confidence"], 0.95);
  const auto& fd = j["first_divergence"];
  EXPECT_EQ(fd["count"], 5);
  EXPECT_EQ(fd["min"], 2);
  EXPECT_EQ(fd["max"], 2);
  EXPECT_EQ(fd["p50"], 2);
  EXPECT_DOUBLE_EQ(fd["mean"].get<double>(), 2.0);
  ASSERT_EQ(fd["histogram"].size(), 1u);
  EXPECT_EQ(fd["histogram"][0], (nlohmann::json{{"from", 2}, {"to", 2}, {"count", 5}}));
  ASSERT_EQ(j["diverged"].size(), 5u);
  EXPECT_EQ(j["diverged"][0]["item"], 5);
  EXPECT_EQ(j["diverged"][0]["position"], 2);
  EXPECT_EQ(j["diverged"][0]["reference_excerpt"], "w0 w1 w2 w3");
  EXPECT_EQ(j["diverged"][0]["output_excerpt"], "w0 w1 x w3");
}

TEST(ConsistencySummary, AllIdenticalAndEmpty) {
  const auto j = consistency_summary({pair(1, "a", "a")}, byte_ids(), 0.99);
  EXPECT_EQ(j["method"], "tokenizer");
  EXPECT_EQ(j["identical"], 1);
  EXPECT_TRUE(j["first_divergence"].is_null());
  EXPECT_TRUE(j["diverged"].empty());
  EXPECT_EQ(j["confidence"], 0.99);
  const auto e = consistency_summary({}, kWords);
  EXPECT_EQ(e["compared"], 0);
  EXPECT_TRUE(e["exact_match_rate"].is_null());
  EXPECT_EQ(e["exact_match_ci95"], (nlohmann::json{0.0, 1.0}));
}

TEST(ConsistencySummary, PercentilesAndHistogramOfPositions) {
  // Positions 0..19 (item i diverges at word i): nearest rank p50 = 10th value = 9,
  // p90 = 18th = 17; bins of width 2 (20 positions / 10 bins), each holding 2.
  std::vector<OutputPair> pairs;
  for (std::uint64_t i = 0; i < 20; ++i) {
    std::string common;
    for (std::uint64_t k = 0; k < i; ++k) common += "w ";
    pairs.push_back(pair(i, common + "ref", common + "out"));
  }
  const auto fd = consistency_summary(pairs, kWords)["first_divergence"];
  EXPECT_EQ(fd["count"], 20);
  EXPECT_EQ(fd["min"], 0);
  EXPECT_EQ(fd["max"], 19);
  EXPECT_EQ(fd["p50"], 9);
  EXPECT_EQ(fd["p90"], 17);
  EXPECT_DOUBLE_EQ(fd["mean"].get<double>(), 9.5);
  ASSERT_EQ(fd["histogram"].size(), 10u);
  for (std::size_t b = 0; b < 10; ++b) {
    EXPECT_EQ(fd["histogram"][b]["from"], 2 * b);
    EXPECT_EQ(fd["histogram"][b]["to"], 2 * b + 1);
    EXPECT_EQ(fd["histogram"][b]["count"], 2);
  }
  // 0..22 (23 positions): width 3, 8 bins, the last [21, 22].
  for (std::uint64_t i = 20; i < 23; ++i) {
    std::string common;
    for (std::uint64_t k = 0; k < i; ++k) common += "w ";
    pairs.push_back(pair(i, common + "ref", common + "out"));
  }
  const auto h = consistency_summary(pairs, kWords)["first_divergence"]["histogram"];
  ASSERT_EQ(h.size(), 8u);
  EXPECT_EQ(h[7], (nlohmann::json{{"from", 21}, {"to", 22}, {"count", 2}}));
  EXPECT_EQ(h[0]["count"], 3);
}

TEST(ConsistencySummary, DivergedListIsTheFirstByItem) {
  const std::vector<OutputPair> pairs = {pair(9, "a", "b"), pair(3, "a b", "a c"), pair(7, "x", "x"),
                                         pair(1, "p q r", "p q s"), pair(5, "m", "n")};
  const auto j = consistency_summary(pairs, kWords, 0.95, 3);
  ASSERT_EQ(j["diverged"].size(), 3u);
  EXPECT_EQ(j["diverged"][0]["item"], 1);
  EXPECT_EQ(j["diverged"][0]["position"], 2);
  EXPECT_EQ(j["diverged"][1]["item"], 3);
  EXPECT_EQ(j["diverged"][2]["item"], 5);
  EXPECT_EQ(j["first_divergence"]["count"], 4);  // every divergence is counted, not only those listed
}

TEST(ConsistencySummary, ExcerptsStartBeforeTheDivergenceAndStayValidUtf8) {
  // 100 two-byte characters (é) then the difference: the excerpt starts about 40 bytes before it,
  // on a character boundary, and holds at most 160 bytes.
  std::string common;
  for (int i = 0; i < 100; ++i) common += "\xC3\xA9";
  std::string tail;
  for (int i = 0; i < 100; ++i) tail += "\xE2\x82\xAC";  // euro signs, 3 bytes each
  const auto j = consistency_summary({pair(0, common + "X" + tail, common + "Y" + tail)}, byte_ids());
  const std::string ref = j["diverged"][0]["reference_excerpt"];
  const std::string out = j["diverged"][0]["output_excerpt"];
  EXPECT_TRUE(valid_utf8(ref));
  EXPECT_TRUE(valid_utf8(out));
  EXPECT_LE(ref.size(), 160u);
  EXPECT_GE(ref.size(), 157u);
  EXPECT_EQ(ref.substr(0, 40), common.substr(0, 40));
  EXPECT_EQ(ref[40], 'X');
  EXPECT_EQ(out[40], 'Y');
  EXPECT_EQ(j["diverged"][0]["position"], 200);
  // Invalid bytes in a text become U+FFFD, and the JSON can be written.
  const auto k = consistency_summary({pair(0, "ok \xFF\xFE bad", "ok fine")}, kWords);
  EXPECT_TRUE(valid_utf8(k["diverged"][0]["reference_excerpt"].get<std::string>()));
  EXPECT_NO_THROW((void)k.dump());
  // 40 bytes before the divergence falls inside an é: the excerpt starts at the next character.
  const std::string odd = common + "a";
  const auto m = consistency_summary({pair(0, odd + "X", odd + "Y")}, kWords);
  const std::string cut = m["diverged"][0]["reference_excerpt"];
  EXPECT_TRUE(valid_utf8(cut));
  EXPECT_EQ(cut, common.substr(0, 38) + "aX");
}

}  // namespace consistency_test
