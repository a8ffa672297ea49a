// Unicode services for the tokenizer: UTF-8 decoding and encoding, general categories, the
// White_Space property, NFC normalization. Pure functions over the generated tables; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::tokenizer::unicode {

// The Unicode general categories, in the order the generator numbers them.
enum class GeneralCategory : std::uint8_t {
  Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co, Cn
};
inline constexpr std::uint32_t category_bit(GeneralCategory c) {
  return std::uint32_t{1} << static_cast<unsigned>(c);
}

// The Unicode version the tables were generated from (e.g. "14.0.0").
const char* version();

GeneralCategory category(char32_t cp);
// White_Space: \t \n \v \f \r, U+0085 and the separators (Zs, Zl, Zp).
bool is_white_space(char32_t cp);
std::uint8_t combining_class(char32_t cp);

// Decodes the UTF-8 sequence at text[pos]; returns the code point and advances pos. Invalid
// input yields U+FFFD for one byte (callers only pass text that came in as valid UTF-8, or
// accept the replacement).
char32_t next_code_point(std::string_view text, std::size_t& pos);
void append_utf8(std::string& out, char32_t cp);
// Whether text is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);
// Bytes to text as a WHATWG TextDecoder does: each maximal invalid subsequence becomes U+FFFD.
std::string decode_utf8_lossy(std::string_view bytes);

// Canonical composition (NFC). Text that passes the NFC quick check is returned unchanged.
std::string nfc(std::string_view text);

}  // namespace llmload::tokenizer::unicode
