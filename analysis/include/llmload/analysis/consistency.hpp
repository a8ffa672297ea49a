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
};

/// Splits a text into tokens for the position of the first divergence. The method's name goes
/// into the artifact: "tokenizer" (the model's tokenizer, --tokenizer) or "words" (whitespace
/// separated words; exact for llmload-server, whose tokens are words).
struct TokenSplitter {
  std::string method = "words";
  std::function<std::vector<std::int64_t>(const std::string&)> ids;  // empty: words
};

/// The index of the first token where `a` and `b` differ (nullopt when the texts are equal).
/// When one is a prefix of the other, the first token past the shorter one.
std::optional<std::int64_t> first_divergence(const std::string& a, const std::string& b, const TokenSplitter& split);

/// The consistency section of result.json. Shape:
///   {"method", "compared", "identical", "exact_match_rate", "exact_match_ci95": [lo, hi],
///    "confidence", "first_divergence": {"count", "min", "p50", "p90", "max", "mean",
///    "histogram": [{"from", "to", "count"}] (up to 10 bins)} (null when none diverged),
///    "diverged": [{"item", "position", "reference_excerpt", "output_excerpt"}] (the first
///    `keep_diverged` by item, excerpts from a little before the divergence, at most 160 bytes)}
nlohmann::json consistency_summary(const std::vector<OutputPair>& pairs, const TokenSplitter& split,
                                   double confidence = 0.95, std::size_t keep_diverged = 20);

}  // namespace llmload::analysis
