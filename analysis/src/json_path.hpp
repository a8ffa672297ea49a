#pragma once
// Reading artifacts' JSON (internal header): a value at a dotted path, and times written in
// milliseconds or seconds back to nanoseconds. In a namespace of their own, called qualified
// (json_path::at_path), so that no file-local helper of the same name in another analysis source
// collides with them in a unity build.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis::json_path {

// The value at a dotted path; null when any part is missing.
inline const nlohmann::json& at_path(const nlohmann::json& j, std::string_view path) {
  static const nlohmann::json kNull;
  const nlohmann::json* cur = &j;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    const std::size_t dot = std::min(path.find('.', pos), path.size());
    const std::string key(path.substr(pos, dot - pos));
    if (!cur->is_object()) return kNull;
    auto it = cur->find(key);
    if (it == cur->end()) return kNull;
    cur = &*it;
    pos = dot + 1;
  }
  return *cur;
}

inline Nanos from_ms(double ms) { return Nanos(static_cast<std::int64_t>(std::llround(ms * 1e6))); }
inline Nanos from_s(double s) { return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9))); }

}  // namespace llmload::analysis::json_path
