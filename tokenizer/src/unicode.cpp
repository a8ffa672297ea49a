// UTF-8, categories and NFC over the generated tables (unicode_tables.cpp). The NFC algorithm is
// the one UAX #15 describes: full canonical decomposition (Hangul arithmetically), canonical
// ordering by combining class, then canonical composition of unblocked pairs.
#include "unicode.hpp"

#include <algorithm>
#include <array>

#include "unicode_tables.hpp"

namespace llmload::tokenizer::unicode {
namespace {

namespace ud = unicode_data;

constexpr char32_t kReplacement = 0xFFFD;
constexpr char32_t kHangulBase = 0xAC00, kHangulL = 0x1100, kHangulV = 0x1161, kHangulT = 0x11A7;
constexpr char32_t kHangulLCount = 19, kHangulVCount = 21, kHangulTCount = 28;
constexpr char32_t kHangulNCount = kHangulVCount * kHangulTCount;
constexpr char32_t kHangulSCount = kHangulLCount * kHangulNCount;

GeneralCategory search_category(char32_t cp) {
  const auto* begin = ud::kCategoryRanges;
  const auto* end = begin + ud::kCategoryRangeCount;
  const auto* it = std::upper_bound(begin, end, std::uint32_t{cp},
                                    [](std::uint32_t v, const ud::CategoryRange& r) { return v < r.first; });
  if (it == begin) return GeneralCategory::Cn;
  --it;
  return cp <= it->last ? static_cast<GeneralCategory>(it->category) : GeneralCategory::Cn;
}

const std::array<GeneralCategory, 256>& latin1_categories() {
  static const std::array<GeneralCategory, 256> table = [] {
    std::array<GeneralCategory, 256> t{};
    for (char32_t cp = 0; cp < 256; ++cp) t[cp] = search_category(cp);
    return t;
  }();
  return table;
}

template <typename Table>
const Table* find_range(const Table* begin, std::size_t count, char32_t cp) {
  const Table* end = begin + count;
  const Table* it = std::upper_bound(begin, end, std::uint32_t{cp},
                                     [](std::uint32_t v, const Table& r) { return v < r.first; });
  if (it == begin) return nullptr;
  --it;
  return cp <= it->last ? it : nullptr;
}

bool nfc_quick_check_fails(char32_t cp) {
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return true;  // Hangul V, T
  return find_range(ud::kNfcQuickCheckNotYes, ud::kNfcQuickCheckNotYesCount, cp) != nullptr;
}

void decompose_into(char32_t cp, std::u32string& out) {
  if (cp >= kHangulBase && cp < kHangulBase + kHangulSCount) {
    const char32_t s = cp - kHangulBase;
    out.push_back(kHangulL + s / kHangulNCount);
    out.push_back(kHangulV + (s % kHangulNCount) / kHangulTCount);
    if (s % kHangulTCount != 0) out.push_back(kHangulT + s % kHangulTCount);
    return;
  }
  const auto* begin = ud::kDecompositions;
  const auto* end = begin + ud::kDecompositionCount;
  const auto* it = std::lower_bound(begin, end, std::uint32_t{cp},
                                    [](const ud::Decomposition& d, std::uint32_t v) { return d.code_point < v; });
  if (it == end || it->code_point != cp) {
    out.push_back(cp);
    return;
  }
  decompose_into(it->first, out);
  if (it->second != 0) decompose_into(it->second, out);
}

void canonical_order(std::u32string& s) {
  // Stable insertion sort of each run of non-starters by combining class.
  for (std::size_t i = 1; i < s.size(); ++i) {
    const auto cc = combining_class(s[i]);
    if (cc == 0) continue;
    std::size_t j = i;
    while (j > 0 && combining_class(s[j - 1]) > cc) {
      std::swap(s[j - 1], s[j]);
      --j;
    }
  }
}

char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kHangulL && first < kHangulL + kHangulLCount && second >= kHangulV &&
      second < kHangulV + kHangulVCount) {
    return kHangulBase + ((first - kHangulL) * kHangulVCount + (second - kHangulV)) * kHangulTCount;
  }
  if (first >= kHangulBase && first < kHangulBase + kHangulSCount && (first - kHangulBase) % kHangulTCount == 0 &&
      second > kHangulT && second < kHangulT + kHangulTCount) {
    return first + (second - kHangulT);
  }
  const auto* begin = ud::kCompositions;
  const auto* end = begin + ud::kCompositionCount;
  const auto* it = std::lower_bound(begin, end, std::pair{std::uint32_t{first}, std::uint32_t{second}},
                                    [](const ud::Composition& c, const std::pair<std::uint32_t, std::uint32_t>& v) {
                                      return c.first < v.first || (c.first == v.first && c.second < v.second);
                                    });
  if (it == end || it->first != first || it->second != second) return 0;
  return it->composite;
}

void compose(std::u32string& s) {
  if (s.empty()) return;
  std::size_t starter_pos = 0;
  int last_class = combining_class(s[0]) == 0 ? 0 : 256;
  std::size_t out = 1;
  for (std::size_t i = 1; i < s.size(); ++i) {
    const char32_t ch = s[i];
    const int ch_class = combining_class(ch);
    const char32_t composite = last_class == 256 ? 0 : compose_pair(s[starter_pos], ch);
    if (composite != 0 && (last_class < ch_class || last_class == 0)) {
      s[starter_pos] = composite;
      continue;
    }
    if (ch_class == 0) starter_pos = out;
    last_class = ch_class;
    s[out++] = ch;
  }
  s.resize(out);
}

}  // namespace

const char* version() { return ud::kUnicodeVersion; }

GeneralCategory category(char32_t cp) {
  if (cp < 256) return latin1_categories()[cp];
  return search_category(cp);
}

bool is_white_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  if (cp == 0x85) return true;
  const auto c = category(cp);
  return c == GeneralCategory::Zs || c == GeneralCategory::Zl || c == GeneralCategory::Zp;
}

std::uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* r = find_range(ud::kCombiningRanges, ud::kCombiningRangeCount, cp);
  return r == nullptr ? 0 : r->combining_class;
}

char32_t next_code_point(std::string_view text, std::size_t& pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  const std::size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (len == 0 || pos + len > text.size()) {
    ++pos;
    return kReplacement;
  }
  char32_t cp = b0 & (0x7F >> len);
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(text[pos + i]);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  pos += len;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string decode_utf8_lossy(std::string_view bytes) {
  // The WHATWG "UTF-8 decoder": a byte outside the bounds the lead byte allows ends the
  // sequence with one U+FFFD and is then read again as a lead byte.
  std::string out;
  out.reserve(bytes.size());
  char32_t cp = 0;
  int needed = 0, seen = 0;
  unsigned lower = 0x80, upper = 0xBF;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const unsigned b = static_cast<unsigned char>(bytes[i]);
    if (needed == 0) {
      if (b <= 0x7F) {
        out.push_back(static_cast<char>(b));
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed = 1, cp = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) lower = 0xA0;
        if (b == 0xED) upper = 0x9F;
        needed = 2, cp = b & 0x0F;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) lower = 0x90;
        if (b == 0xF4) upper = 0x8F;
        needed = 3, cp = b & 0x07;
      } else {
        append_utf8(out, kReplacement);
      }
      continue;
    }
    if (b < lower || b > upper) {
      cp = 0, needed = 0, seen = 0, lower = 0x80, upper = 0xBF;
      append_utf8(out, kReplacement);
      --i;  // read this byte again as the start of a sequence
      continue;
    }
    lower = 0x80, upper = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
    if (++seen == needed) {
      append_utf8(out, cp);
      cp = 0, needed = 0, seen = 0;
    }
  }
  if (needed != 0) append_utf8(out, kReplacement);
  return out;
}

bool is_valid_utf8(std::string_view text) { return decode_utf8_lossy(text) == text; }

std::string nfc(std::string_view text) {
  bool quick = true;
  std::uint8_t last_class = 0;
  for (std::size_t pos = 0; pos < text.size() && quick;) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos, last_class = 0;
      continue;
    }
    const char32_t cp = next_code_point(text, pos);
    const auto cc = combining_class(cp);
    if ((cc != 0 && cc < last_class) || nfc_quick_check_fails(cp)) quick = false;
    last_class = cc;
  }
  if (quick) return std::string(text);
  std::u32string decomposed;
  decomposed.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) decompose_into(next_code_point(text, pos), decomposed);
  canonical_order(decomposed);
  compose(decomposed);
  std::string out;
  out.reserve(text.size());
  for (const char32_t cp : decomposed) append_utf8(out, cp);
  return out;
}

}  // namespace llmload::tokenizer::unicode
