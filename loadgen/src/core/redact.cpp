#include "llmload/loadgen/redact.hpp"

#include <algorithm>

namespace llmload {

void Secrets::add(std::string_view secret) {
  if (secret.empty()) return;
  if (std::find(values_.begin(), values_.end(), secret) == values_.end()) values_.emplace_back(secret);
}

void Secrets::add_header_value(std::string_view value) {
  if (value.size() >= kMinSecretFragment) add(value);
}

std::string Secrets::redact(std::string text) const {
  if (values_.empty()) return text;
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    // The longest run of some secret's consecutive characters starting at text[i].
    std::size_t best = 0;
    for (const auto& s : values_) {
      const std::size_t need = std::min(kMinSecretFragment, s.size());
      for (std::size_t j = 0; j < s.size(); ++j) {
        if (s[j] != text[i]) continue;
        std::size_t k = 0;
        while (i + k < text.size() && j + k < s.size() && text[i + k] == s[j + k]) ++k;
        if (k >= need) best = std::max(best, k);
      }
    }
    if (best > 0) {
      out += "***";
      i += best;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// Escapes first, then redacts: an escape's digits next to a fragment could otherwise complete a
// run of a secret's characters (found by fuzz_secret_scan: "\x00" + "0_tcOP" holds "000_tcOP").
// Secrets are printable, so escaping never hides one from the redaction.
std::string Secrets::for_output(std::string text) const { return redact(printable(text)); }

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      const auto d = static_cast<unsigned char>(text[++i]);
      out += "\\u00";
      out += kHex[d >> 4];
      out += kHex[d & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string redact(std::string text, std::string_view secret) {
  Secrets s;
  s.add(secret);
  return s.redact(std::move(text));
}

}  // namespace llmload
