// Unicode services (tokenizer/src/unicode.hpp): categories, White_Space, NFC, lossy UTF-8.
#include "unicode.hpp"

#include <gtest/gtest.h>

#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::tokenizer::unicode {
namespace {

TEST(tokenizer_unicode, CategoriesFromTheGeneratedTables) {
  EXPECT_EQ(category(U'A'), GeneralCategory::Lu);
  EXPECT_EQ(category(U'z'), GeneralCategory::Ll);
  EXPECT_EQ(category(U'ǅ'), GeneralCategory::Lt);
  EXPECT_EQ(category(U'中'), GeneralCategory::Lo);
  EXPECT_EQ(category(0x0301), GeneralCategory::Mn);
  EXPECT_EQ(category(U'٣'), GeneralCategory::Nd);
  EXPECT_EQ(category(U'Ⅻ'), GeneralCategory::Nl);
  EXPECT_EQ(category(U'½'), GeneralCategory::No);
  EXPECT_EQ(category(U'!'), GeneralCategory::Po);
  EXPECT_EQ(category(U'€'), GeneralCategory::Sc);
  EXPECT_EQ(category(0x1F600), GeneralCategory::So);
  EXPECT_EQ(category(0x3000), GeneralCategory::Zs);
  EXPECT_EQ(category(0x200D), GeneralCategory::Cf);
  EXPECT_EQ(category(0xE000), GeneralCategory::Co);
  EXPECT_EQ(category(0x10FFFF), GeneralCategory::Cn);
  EXPECT_STREQ(version(), unicode_version());
}

TEST(tokenizer_unicode, WhiteSpaceProperty) {
  for (char32_t c : {U' ', U'\t', U'\n', U'\v', U'\f', U'\r', char32_t{0x85}, char32_t{0xA0}, char32_t{0x2028},
                     char32_t{0x3000}}) {
    EXPECT_TRUE(is_white_space(c)) << static_cast<unsigned>(c);
  }
  for (char32_t c : {U'a', char32_t{0x200B}, char32_t{0xFEFF}, char32_t{0x180E}}) {
    EXPECT_FALSE(is_white_space(c)) << static_cast<unsigned>(c);
  }
}

TEST(tokenizer_unicode, NfcComposesReordersAndLeavesNormalizedTextAlone) {
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(nfc("Cafe\u0301"), "Caf\u00e9");
  EXPECT_EQ(nfc("A\u030a"), "\u00c5");
  EXPECT_EQ(nfc("\u212b"), "\u00c5");                      // singleton decomposition (Angstrom sign)
  EXPECT_EQ(nfc("\u1100\u1161\u11a8"), "\uac01");          // Hangul L V T
  EXPECT_EQ(nfc("a\u0323\u0302"), "\u1ead");               // ậ -> ậ
  EXPECT_EQ(nfc("a\u0302\u0323"), "\u1ead");               // reordered by combining class first
  EXPECT_EQ(nfc("\u0344"), "\u0308\u0301");                // excluded from composition
  EXPECT_EQ(nfc("한국어 中文 😀"), "한국어 中文 😀");
}

TEST(tokenizer_unicode, LossyDecodingReplacesEachMaximalInvalidSubsequence) {
  EXPECT_EQ(decode_utf8_lossy("ok"), "ok");
  EXPECT_EQ(decode_utf8_lossy("\xE4\xB8"), "\uFFFD");            // truncated 3-byte sequence: one U+FFFD
  EXPECT_EQ(decode_utf8_lossy("\xE4\xB8x"), "\uFFFDx");
  EXPECT_EQ(decode_utf8_lossy("\xFF\xFE"), "\uFFFD\uFFFD");
  EXPECT_EQ(decode_utf8_lossy("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate is not UTF-8
  EXPECT_TRUE(is_valid_utf8("中文"));
  EXPECT_FALSE(is_valid_utf8("\xC3"));
}

}  // namespace
}  // namespace llmload::tokenizer::unicode
