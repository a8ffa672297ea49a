// Fuzz target: the tokenizer library (tokenizer/) on tokenizer.json files a user points
// --tokenizer at, and on the text it then counts.
//
// Input: the tokenizer.json document, then a NUL byte, then the text (at most kMaxText bytes are
// used; any bytes, not necessarily UTF-8). Without a NUL the whole input is the document and
// kDefaultText is encoded. The document is loaded in memory with load_hf_tokenizer_json; only
// TokenizerError may escape it, and its message must name the file. When it loads, the text is
// encoded without and with special tokens, and:
//   - count(text) == encode(text).size(), and encoding again (from the word cache) gives the same
//     ids;
//   - every id of encode(text) is in [0, vocab_size());
//   - decode of those ids, of the special-token encoding and of arbitrary ids (negative, out of
//     range) does not throw, with and without skip_special, and gives well-formed UTF-8.
// Anything else that escapes (std::bad_alloc, nlohmann::json errors...) is a crash.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace {

namespace tk = llmload::tokenizer;

constexpr std::size_t kMaxText = 4096;
constexpr std::string_view kOrigin = "fuzz/tokenizer.json";
// Used when the input has no NUL: ASCII words, whitespace runs, digits, accents (composed and
// not), CJK, an emoji with a ZWJ sequence, a byte-fallback candidate and special-token spellings.
constexpr std::string_view kDefaultText =
    "Hello world!  It's 2024: \t\n\n  caf\xC3\xA9 cafe\xCC\x81 \xE4\xBD\xA0\xE5\xA5\xBD "
    "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB <|end|><s> hi\xE2\x96\x81there   ";

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool well_formed_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (b < 0x80) len = 1;
    else if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b >= 0xE0 && b <= 0xEF) len = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4) len = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return false;
    }
    i += len;
  }
  return true;
}

void check_decode(const tk::Tokenizer& t, const std::vector<tk::TokenId>& ids) {
  for (const bool skip : {true, false}) {
    const std::string text = t.decode(ids, skip);
    if (!well_formed_utf8(text)) std::fprintf(stderr, "decode gave ill-formed UTF-8 (%zu bytes)\n", text.size());
    FUZZ_CHECK(well_formed_utf8(text));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? kDefaultText : input.substr(nul + 1, kMaxText);

  std::unique_ptr<tk::Tokenizer> t;
  try {
    t = tk::load_hf_tokenizer_json(json, std::string(kOrigin));
  } catch (const tk::TokenizerError& e) {
    // The message names the file first.
    const std::string_view what = e.what();
    if (what.substr(0, kOrigin.size()) != kOrigin) std::fprintf(stderr, "error: %s\n", e.what());
    FUZZ_CHECK(what.substr(0, kOrigin.size()) == kOrigin);
    return 0;
  }
  FUZZ_CHECK(t != nullptr);
  FUZZ_CHECK(t->kind() == "hf-bpe-byte-level" || t->kind() == "hf-bpe-sentencepiece");
  FUZZ_CHECK(t->source() == std::string(kOrigin));

  const std::vector<tk::TokenId> ids = t->encode(text);
  FUZZ_CHECK(t->count(text) == ids.size());
  FUZZ_CHECK(t->encode(text, false) == ids);  // again, from the word cache
  for (const tk::TokenId id : ids) FUZZ_CHECK(id >= 0 && static_cast<std::size_t>(id) < t->vocab_size());
  check_decode(*t, ids);

  // The post-processor adds the ids the file declares (they need not be in the vocabulary).
  const std::vector<tk::TokenId> with_special = t->encode(text, true);
  check_decode(*t, with_special);

  // Arbitrary ids, from -1 to vocab_size(), in the order the text's bytes give.
  std::vector<tk::TokenId> any;
  const std::size_t range = t->vocab_size() + 2;
  for (std::size_t i = 0; i + 1 < std::min<std::size_t>(text.size(), 128); i += 2) {
    const std::size_t v = static_cast<unsigned char>(text[i]) << 8 | static_cast<unsigned char>(text[i + 1]);
    any.push_back(static_cast<tk::TokenId>(v % range) - 1);
  }
  check_decode(*t, any);
  return 0;
}
