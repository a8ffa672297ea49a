// The Unicode Character Database facts the tokenizer needs, generated into unicode_tables.cpp
// by tokenizer/tools/gen_unicode_tables.py (Python's unicodedata; kUnicodeVersion names the
// version). Every table is sorted by its first column. Searched by unicode.cpp only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace llmload::tokenizer::unicode_data {

struct CategoryRange {
  std::uint32_t first;
  std::uint32_t last;
  std::uint8_t category;  // index into the GeneralCategory enumeration (unicode.hpp)
};
struct CombiningRange {
  std::uint32_t first;
  std::uint32_t last;
  std::uint8_t combining_class;
};
struct Decomposition {  // one level of a canonical decomposition; second == 0: a singleton
  std::uint32_t code_point;
  std::uint32_t first;
  std::uint32_t second;
};
struct Composition {  // a primary composite: first + second -> composite (sorted by first, second)
  std::uint32_t first;
  std::uint32_t second;
  std::uint32_t composite;
};
struct Range {
  std::uint32_t first;
  std::uint32_t last;
};

extern const char* const kUnicodeVersion;
extern const CategoryRange kCategoryRanges[];
extern const std::size_t kCategoryRangeCount;
extern const CombiningRange kCombiningRanges[];
extern const std::size_t kCombiningRangeCount;
extern const Decomposition kDecompositions[];
extern const std::size_t kDecompositionCount;
extern const Composition kCompositions[];
extern const std::size_t kCompositionCount;
extern const Range kNfcQuickCheckNotYes[];
extern const std::size_t kNfcQuickCheckNotYesCount;

}  // namespace llmload::tokenizer::unicode_data
