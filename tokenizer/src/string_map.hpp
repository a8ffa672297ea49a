// A string-keyed hash map that can be searched with a string_view (no temporary string).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace llmload::tokenizer {

struct StringViewHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <typename Value>
using StringMap = std::unordered_map<std::string, Value, StringViewHash, std::equal_to<>>;

}  // namespace llmload::tokenizer
