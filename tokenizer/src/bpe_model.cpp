// The BPE merge loop (bpe_model.hpp): a min-heap of candidate pairs keyed by (rank, position);
// entries made stale by earlier merges are recognized by their symbol ids and dropped.
#include "bpe_model.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "byte_level.hpp"
#include "unicode.hpp"

namespace llmload::tokenizer {
namespace {

constexpr TokenId kNoToken = -1;
constexpr std::string_view kMetaspace = "\u2581";
constexpr TokenId kMergedAway = -2;

std::uint64_t pair_key(TokenId left, TokenId right) {
  return (std::uint64_t{static_cast<std::uint32_t>(left)} << 32) | static_cast<std::uint32_t>(right);
}

struct Candidate {
  std::int32_t rank;
  std::int32_t left;  // symbol index
  TokenId left_id, right_id;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

}  // namespace

BpeModel::BpeModel(StringMap<TokenId> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& origin)
    : vocab_(std::move(vocab)), options_(options) {
  merges_.reserve(merges.size());
  std::string joined;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    joined.assign(a).append(b);
    const auto im = vocab_.find(joined);
    if (ia == vocab_.end() || ib == vocab_.end() || im == vocab_.end()) {
      throw TokenizerError(origin + ": model.merges[" + std::to_string(rank) + "] (\"" + a + "\", \"" + b +
                           "\") merges tokens that are not in model.vocab; the file is inconsistent, "
                           "download the model's tokenizer.json again");
    }
    // A pair listed twice keeps its last rank, as the reference implementations' maps do.
    merges_.insert_or_assign(pair_key(ia->second, ib->second), Merge{static_cast<std::int32_t>(rank), im->second});
  }
  char name[8];
  for (unsigned b = 0; b < 256; ++b) {
    std::string spelled;
    unicode::append_utf8(spelled, byte_level::char_for_byte(static_cast<std::uint8_t>(b)));
    const auto it = vocab_.find(spelled);
    byte_ids_[b] = it == vocab_.end() ? kNoToken : it->second;
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const auto fb = vocab_.find(std::string_view(name));
    fallback_ids_[b] = fb == vocab_.end() ? kNoToken : fb->second;
  }
  if (!options_.byte_level) {
    cut_at_metaspace_ = true;
    joins_metaspace_.insert(U'\u2581');
    for (const auto& [token, id] : vocab_) {
      for (std::size_t at = token.find(kMetaspace, 1); at != std::string::npos; at = token.find(kMetaspace, at + 1)) {
        std::size_t start = at - 1;
        while (start > 0 && (static_cast<unsigned char>(token[start]) & 0xC0) == 0x80) --start;
        std::size_t pos = start;
        joins_metaspace_.insert(unicode::next_code_point(token, pos));
      }
    }
  }
}

std::optional<TokenId> BpeModel::token_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const BpeModel::Merge* BpeModel::find_merge(TokenId left, TokenId right) const {
  if (left < 0 || right < 0) return nullptr;
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const {
  symbols.clear();
  if (options_.byte_level) {
    for (std::size_t i = 0; i < word.size(); ++i) {
      const auto b = static_cast<std::uint8_t>(word[i]);
      symbols.push_back({byte_ids_[b], 0, 0, static_cast<std::uint32_t>(i), 1});
    }
  } else {
    for (std::size_t pos = 0; pos < word.size();) {
      const std::size_t begin = pos;
      unicode::next_code_point(word, pos);
      const auto it = vocab_.find(word.substr(begin, pos - begin));
      symbols.push_back({it == vocab_.end() ? kNoToken : it->second, 0, 0, static_cast<std::uint32_t>(begin),
                         static_cast<std::uint32_t>(pos - begin)});
    }
  }
  const auto n = static_cast<std::int32_t>(symbols.size());
  for (std::int32_t i = 0; i < n; ++i) {
    symbols[static_cast<std::size_t>(i)].prev = i - 1;
    symbols[static_cast<std::size_t>(i)].next = i + 1 < n ? i + 1 : -1;
  }
}

void BpeModel::merge_symbols(std::vector<Symbol>& symbols) const {
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](std::int32_t left) {
    if (left < 0) return;
    const Symbol& l = symbols[static_cast<std::size_t>(left)];
    if (l.next < 0) return;
    const Symbol& r = symbols[static_cast<std::size_t>(l.next)];
    if (const Merge* m = find_merge(l.id, r.id)) heap.push({m->rank, left, l.id, r.id});
  };
  for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(symbols.size()); ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = symbols[static_cast<std::size_t>(c.left)];
    if (l.id != c.left_id || l.next < 0) continue;
    Symbol& r = symbols[static_cast<std::size_t>(l.next)];
    if (r.id != c.right_id) continue;
    l.id = find_merge(c.left_id, c.right_id)->merged;
    l.length += r.length;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<std::size_t>(r.next)].prev = c.left;
    r.id = kMergedAway;
    consider(l.prev);
    consider(c.left);
  }
}

void BpeModel::emit(std::string_view word, const std::vector<Symbol>& symbols, std::vector<TokenId>& out) const {
  for (std::int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<std::size_t>(i)];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    bool all_bytes = options_.byte_fallback;
    for (std::uint32_t k = 0; all_bytes && k < s.length; ++k) {
      all_bytes = fallback_ids_[static_cast<std::uint8_t>(word[s.begin + k])] >= 0;
    }
    if (all_bytes) {
      for (std::uint32_t k = 0; k < s.length; ++k) out.push_back(fallback_ids_[static_cast<std::uint8_t>(word[s.begin + k])]);
    } else if (options_.unknown) {
      out.push_back(*options_.unknown);
    }
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (!cut_at_metaspace_) return encode_piece(word, out);
  std::size_t piece = 0;
  for (std::size_t at = word.find(kMetaspace, 1); at != std::string_view::npos; at = word.find(kMetaspace, at + 1)) {
    std::size_t start = at - 1;
    while (start > 0 && (static_cast<unsigned char>(word[start]) & 0xC0) == 0x80) --start;
    std::size_t pos = start;
    if (joins_metaspace_.count(unicode::next_code_point(word, pos)) != 0) continue;
    encode_piece(word.substr(piece, at - piece), out);
    piece = at;
  }
  encode_piece(word.substr(piece), out);
}

void BpeModel::encode_piece(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() < kMaxCachedWordBytes;
  if (cacheable) {
    const std::lock_guard lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<TokenId> ids;
  if (options_.ignore_merges) {
    const auto it = options_.byte_level ? vocab_.find(byte_level::spell(word)) : vocab_.find(word);
    if (it != vocab_.end()) ids.push_back(it->second);
  }
  if (ids.empty()) {
    thread_local std::vector<Symbol> symbols;
    initial_symbols(word, symbols);
    merge_symbols(symbols);
    emit(word, symbols, ids);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    const std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(ids));
  }
}

}  // namespace llmload::tokenizer
