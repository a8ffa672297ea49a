#pragma once
// Output consistency (issue 18): the same prompts answered at a reference load and at the load
// under test, compared request by request: exact-match rate with its Wilson interval and the
// first divergent token position.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmload::analysis {

/// One prompt's two answers (matched on the workload item).
struct OutputPair {
  std::uint64_t item = 0;
  std::string reference;  // the answer at the reference load
  std::string output;     // the answer at the load under test
  // The server's own tokens of each answer, when both have them from the same source:
  // `tokens_from` is "token_ids" or "logprobs" ("" when they are not compared).
  std::string tokens_from;
  std::vector<std::string> reference_tokens;
  std::vector<std::string> output_tokens;
};

/// Splits a text into tokens for the position of the first divergence. The method's name goes
/// into the artifact: "tokenizer" (the model's tokenizer, --tokenizer) or "words" (whitespace
/// separated words; exact for llmload-server, whose tokens are words).
struct TokenSplitter {
  std::string method = "words";
  std::function<std::vector<std::int64_t>(const std::string&)> ids;  // empty: words
};

/// The index of the first token where `a` and `b` differ (nullopt when the texts are equal).
/// When one is a prefix of the other, the first token past the shorter one. Words are runs of
/// non-whitespace split on runs of ASCII whitespace; texts with the same words and different
/// whitespace diverge at the first word whose preceding whitespace differs (the word count when
/// only trailing whitespace differs). With `ids`, the id sequences are compared; different texts
/// with the same ids diverge at their length.
std::optional<std::int64_t> first_divergence(const std::string& a, const std::string& b, const TokenSplitter& split);

/// A pair's first divergence: by the server's tokens when the pair has them (texts and tokens
/// both equal: nullopt; otherwise the first differing token, or the shorter list's length),
/// else by `split`.
std::optional<std::int64_t> first_divergence(const OutputPair& pair, const TokenSplitter& split);

/// The consistency section of result.json. Shape:
///   {"method", "methods": {method: pairs}, "compared", "identical", "exact_match_rate", "exact_match_ci95": [lo, hi],
///    "confidence", "first_divergence": {"count", "min", "p50", "p90", "max", "mean",
///    "histogram": [{"from", "to", "count"}] (up to 10 bins of equal integer width, "from" and
///    "to" inclusive)} (null when none diverged; p50/p90 by nearest rank, ceil(q n)),
///    "diverged": [{"item", "position", "reference_excerpt", "output_excerpt"}] (the first
///    `keep_diverged` by item, excerpts from 40 bytes before the first differing byte, at most
///    160 bytes, cut at code point boundaries, invalid UTF-8 replaced by U+FFFD)}
/// "method" is the one way every pair was compared ("token_ids", "logprobs", or the splitter's
/// "tokenizer" / "words"), or "mixed" when pairs differ ("methods" counts them). "exact_match_rate" is null when nothing was compared; "exact_match_ci95" is the Wilson
/// interval at `confidence`.
nlohmann::json consistency_summary(const std::vector<OutputPair>& pairs, const TokenSplitter& split,
                                   double confidence = 0.95, std::size_t keep_diverged = 20);

}  // namespace llmload::analysis
