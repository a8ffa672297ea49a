#include "llmload/analysis/consistency.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "llmload/analysis/accuracy.hpp"

namespace llmload::analysis {
namespace consistency_impl {
namespace {

constexpr std::size_t kExcerptBefore = 40;  // bytes shown before the first differing byte
constexpr std::size_t kExcerptMax = 160;    // bytes in an excerpt at most
constexpr std::size_t kMaxBins = 10;

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

struct Word {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// Runs of non-space bytes, split on runs of ASCII whitespace.
std::vector<Word> split_words(std::string_view s) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_ascii_space(s[i])) ++i;
    if (i == s.size()) break;
    const std::size_t b = i;
    while (i < s.size() && !is_ascii_space(s[i])) ++i;
    out.push_back({b, i});
  }
  return out;
}

// The whitespace before word i (i == words.size(): after the last word).
std::string_view gap_before(std::string_view s, const std::vector<Word>& w, std::size_t i) {
  const std::size_t from = i == 0 ? 0 : w[i - 1].end;
  const std::size_t to = i < w.size() ? w[i].begin : s.size();
  return s.substr(from, to - from);
}

std::int64_t word_divergence(std::string_view a, std::string_view b) {
  const auto wa = split_words(a);
  const auto wb = split_words(b);
  const std::size_t n = std::min(wa.size(), wb.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a.substr(wa[i].begin, wa[i].end - wa[i].begin) != b.substr(wb[i].begin, wb[i].end - wb[i].begin))
      return static_cast<std::int64_t>(i);
  if (wa.size() != wb.size()) return static_cast<std::int64_t>(n);
  // The same words, different whitespace: the first word whose preceding whitespace differs.
  for (std::size_t i = 0; i <= n; ++i)
    if (gap_before(a, wa, i) != gap_before(b, wb, i)) return static_cast<std::int64_t>(i);
  return static_cast<std::int64_t>(n);
}

std::int64_t id_divergence(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  const auto mm = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::int64_t>(mm.first - a.begin());  // equal ids: the length (past the end)
}

// The length of a valid UTF-8 sequence at s[i], or 0 (RFC 3629: no overlongs, surrogates or
// code points past U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto u = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = u(i);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size() || u(i + 1) < lo || u(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (!is_continuation(s[i + k])) return 0;
  return len;
}

// `s` with each byte that is not part of valid UTF-8 replaced by U+FFFD, cut to at most `max`
// bytes at a code point's boundary.
std::string valid_utf8(std::string_view s, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_sequence(s, i);
    const std::string_view piece = len > 0 ? s.substr(i, len) : std::string_view("\xEF\xBF\xBD");
    if (out.size() + piece.size() > max) break;
    out.append(piece);
    i += len > 0 ? len : 1;
  }
  return out;
}

// The excerpt of `s` from a little before byte `anchor`, starting and ending on code point
// boundaries, valid UTF-8, at most kExcerptMax bytes.
std::string excerpt(std::string_view s, std::size_t anchor) {
  std::size_t start = anchor > kExcerptBefore ? anchor - kExcerptBefore : 0;
  start = std::min(start, s.size());
  while (start < s.size() && is_continuation(s[start])) ++start;
  std::size_t end = std::min(start + kExcerptMax, s.size());
  while (end > start && end < s.size() && is_continuation(s[end])) --end;
  return valid_utf8(s.substr(start, end - start), kExcerptMax);
}

// Nearest rank (rank = ceil(q n), at least 1) of sorted values.
std::int64_t nearest_rank(const std::vector<std::int64_t>& sorted, double q) {
  const auto n = static_cast<double>(sorted.size());
  const auto rank = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(q * n - 1e-9)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

nlohmann::json histogram(const std::vector<std::int64_t>& sorted) {
  const std::int64_t lo = sorted.front();
  const std::int64_t span = sorted.back() - lo + 1;
  const auto bins = static_cast<std::int64_t>(kMaxBins);
  const std::int64_t width = (span + bins - 1) / bins;
  nlohmann::json out = nlohmann::json::array();
  std::size_t k = 0;
  for (std::int64_t from = lo; from <= sorted.back(); from += width) {
    const std::int64_t to = std::min(from + width - 1, sorted.back());
    std::int64_t count = 0;
    for (; k < sorted.size() && sorted[k] <= to; ++k) ++count;
    out.push_back({{"from", from}, {"to", to}, {"count", count}});
  }
  return out;
}

nlohmann::json divergence_stats(std::vector<std::int64_t> positions) {
  if (positions.empty()) return nullptr;
  std::sort(positions.begin(), positions.end());
  double sum = 0;
  for (const auto p : positions) sum += static_cast<double>(p);
  return {{"count", positions.size()},
          {"min", positions.front()},
          {"p50", nearest_rank(positions, 0.5)},
          {"p90", nearest_rank(positions, 0.9)},
          {"max", positions.back()},
          {"mean", sum / static_cast<double>(positions.size())},
          {"histogram", histogram(positions)}};
}

}  // namespace
}  // namespace consistency_impl

std::optional<std::int64_t> first_divergence(const std::string& a, const std::string& b, const TokenSplitter& split) {
  if (a == b) return std::nullopt;
  if (split.ids) return consistency_impl::id_divergence(split.ids(a), split.ids(b));
  return consistency_impl::word_divergence(a, b);
}

std::optional<std::int64_t> first_divergence(const OutputPair& pair, const TokenSplitter& split) {
  if (pair.tokens_from.empty()) return first_divergence(pair.reference, pair.output, split);
  if (pair.reference == pair.output && pair.reference_tokens == pair.output_tokens) return std::nullopt;
  const auto& a = pair.reference_tokens;
  const auto& b = pair.output_tokens;
  const auto mm = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::int64_t>(mm.first - a.begin());
}

nlohmann::json consistency_summary(const std::vector<OutputPair>& pairs, const TokenSplitter& split,
                                   double confidence, std::size_t keep_diverged) {
  namespace ci = consistency_impl;
  struct Diverged {
    const OutputPair* pair;
    std::int64_t position;
  };
  std::vector<Diverged> diverged;
  std::vector<std::int64_t> positions;
  std::int64_t identical = 0;
  std::map<std::string, std::int64_t> methods;
  for (const OutputPair& p : pairs) {
    ++methods[p.tokens_from.empty() ? split.method : p.tokens_from];
    const auto at = first_divergence(p, split);
    if (!at) {
      ++identical;
      continue;
    }
    diverged.push_back({&p, *at});
    positions.push_back(*at);
  }
  const auto compared = static_cast<std::int64_t>(pairs.size());
  const ProportionInterval match_ci = wilson_interval(identical, compared, confidence);
  std::stable_sort(diverged.begin(), diverged.end(),
                   [](const Diverged& x, const Diverged& y) { return x.pair->item < y.pair->item; });
  nlohmann::json listed = nlohmann::json::array();
  for (std::size_t i = 0; i < diverged.size() && i < keep_diverged; ++i) {
    const OutputPair& p = *diverged[i].pair;
    const auto mm = std::mismatch(p.reference.begin(), p.reference.end(), p.output.begin(), p.output.end());
    const auto anchor = static_cast<std::size_t>(mm.first - p.reference.begin());
    listed.push_back({{"item", p.item},
                      {"position", diverged[i].position},
                      {"reference_excerpt", ci::excerpt(p.reference, anchor)},
                      {"output_excerpt", ci::excerpt(p.output, anchor)}});
  }
  const std::string method = methods.size() == 1 ? methods.begin()->first : methods.empty() ? split.method : "mixed";
  return {{"method", method},
          {"methods", methods},
          {"compared", compared},
          {"identical", identical},
          {"exact_match_rate",
           compared > 0 ? nlohmann::json(static_cast<double>(identical) / static_cast<double>(compared))
                        : nlohmann::json(nullptr)},
          {"exact_match_ci95", {match_ci.lo, match_ci.hi}},
          {"confidence", confidence},
          {"first_divergence", ci::divergence_stats(std::move(positions))},
          {"diverged", std::move(listed)}};
}

}  // namespace llmload::analysis
