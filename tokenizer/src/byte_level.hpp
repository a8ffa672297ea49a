// The byte-level alphabet of GPT-2-style tokenizers: each of the 256 byte values stands for one
// printable code point (printable Latin-1 bytes for themselves, the others for U+0100 onwards,
// in byte order), so that any byte string can be spelled with vocabulary characters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace llmload::tokenizer::byte_level {

char32_t char_for_byte(std::uint8_t byte);
// The byte a code point stands for, or -1 when it is not in the alphabet.
int byte_for_char(char32_t cp);
// The alphabet spelling of raw bytes.
std::string spell(std::string_view bytes);

}  // namespace llmload::tokenizer::byte_level
