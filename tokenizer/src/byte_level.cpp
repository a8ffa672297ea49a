#include "byte_level.hpp"

#include <array>

#include "unicode.hpp"

namespace llmload::tokenizer::byte_level {
namespace {

bool stands_for_itself(unsigned b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) t[b] = stands_for_itself(b) ? b : next++;
    return t;
  }();
  return table;
}

}  // namespace

char32_t char_for_byte(std::uint8_t byte) { return byte_chars()[byte]; }

int byte_for_char(char32_t cp) {
  constexpr char32_t kAlphabetEnd = 256 + 68;  // 68 byte values are spelled from U+0100 on
  static const std::array<std::int16_t, kAlphabetEnd> reverse = [] {
    std::array<std::int16_t, kAlphabetEnd> r{};
    r.fill(-1);
    for (unsigned b = 0; b < 256; ++b) r[byte_chars()[b]] = static_cast<std::int16_t>(b);
    return r;
  }();
  return cp < kAlphabetEnd ? reverse[cp] : -1;
}

std::string spell(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) unicode::append_utf8(out, char_for_byte(static_cast<std::uint8_t>(c)));
  return out;
}

}  // namespace llmload::tokenizer::byte_level
