#include "added_tokens.hpp"

#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

std::uint64_t edge_key(std::uint32_t node, unsigned char byte) { return (std::uint64_t{node} << 8) | byte; }

std::string_view trim_white_space_end(std::string_view s) {
  while (!s.empty()) {
    std::size_t start = s.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    std::size_t probe = start;
    if (!unicode::is_white_space(unicode::next_code_point(s, probe))) break;
    s = s.substr(0, start);
  }
  return s;
}

std::string_view trim_white_space_start(std::string_view s) {
  while (!s.empty()) {
    std::size_t next = 0;
    if (!unicode::is_white_space(unicode::next_code_point(s, next))) break;
    s.remove_prefix(next);
  }
  return s;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<const AddedToken*>& tokens) : nodes_(1) {
  for (const AddedToken* t : tokens) {
    if (t->content.empty()) continue;
    std::uint32_t node = 0;
    for (const char c : t->content) {
      const auto key = edge_key(node, static_cast<unsigned char>(c));
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        it = edges_.emplace(key, static_cast<std::uint32_t>(nodes_.size())).first;
        nodes_.emplace_back();
      }
      node = it->second;
    }
    if (nodes_[node].token == nullptr) nodes_[node].token = t;
    first_byte_[static_cast<unsigned char>(t->content[0])] = true;
  }
}

const AddedToken* AddedTokenMatcher::longest_at(std::string_view text, std::size_t pos, std::size_t& length) const {
  const AddedToken* best = nullptr;
  std::uint32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    const auto it = edges_.find(edge_key(node, static_cast<unsigned char>(text[i])));
    if (it == edges_.end()) break;
    node = it->second;
    if (nodes_[node].token != nullptr) best = nodes_[node].token, length = i + 1 - pos;
  }
  return best;
}

std::vector<Section> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Section> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 0;
    const AddedToken* t = first_byte_[static_cast<unsigned char>(text[i])] ? longest_at(text, i, length) : nullptr;
    if (t == nullptr) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), nullptr});
    out.push_back({text.substr(i, length), t});
    i += length;
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), nullptr});
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k].token == nullptr) continue;
    if (out[k].token->lstrip && k > 0 && out[k - 1].token == nullptr) out[k - 1].text = trim_white_space_end(out[k - 1].text);
    if (out[k].token->rstrip && k + 1 < out.size() && out[k + 1].token == nullptr) {
      out[k + 1].text = trim_white_space_start(out[k + 1].text);
    }
  }
  return out;
}

}  // namespace llmload::tokenizer
