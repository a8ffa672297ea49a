#pragma once
// Keeping secrets out of everything llmload writes.

#include <string>
#include <string_view>

namespace llmload {

/// Replaces every occurrence of `secret` in `text` with "***" (nothing to do for an empty secret).
inline std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  std::size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), "***");
    pos += 3;
  }
  return text;
}

}  // namespace llmload
