#pragma once
// The reasoning phases of a run (issue 19; docs/metrics.md "Reasoning"): how many of the output
// tokens were reasoning, how long the reasoning took before the first output token, and how fast
// the answer came after it. From the measured successful requests' records.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "llmload/analysis/distribution.hpp"
#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

struct ReasoningSummary {
  std::int64_t requests = 0;          // measured successful requests that reported reasoning (a source)
  std::int64_t reasoning_first = 0;   // ... of all measured successful ones, whose first token was reasoning
  std::int64_t reasoning_only = 0;    // ... that carried reasoning and no output token at all
  std::int64_t reasoning_tokens = 0;  // summed over the measured successful requests
  std::int64_t output_tokens = 0;     // every output token of the same requests (reasoning included)
  /// Requests per reasoning_tokens_source ("usage", "tokenizer", "events").
  std::map<std::string, std::int64_t> sources;
  DistributionSummary duration;     // RequestRecord::reasoning_duration()
  DistributionSummary answer_tpot;  // RequestRecord::answer_tpot(), every measured successful request
  /// reasoning_tokens / output_tokens; nullopt without output tokens.
  std::optional<double> share() const;
};

/// Whether a record has reasoning to report: measured (not warmup, in the window), successful,
/// with a reasoning_tokens_source.
bool reports_reasoning(const RequestRecord& r);

/// nullopt when no record reports_reasoning: the run had no reasoning to report.
std::optional<ReasoningSummary> summarize_reasoning(RecordRange records);

/// result.json `reasoning`: {"requests", "reasoning_first", "reasoning_only", "reasoning_tokens",
/// "output_tokens", "share_of_output_tokens", "sources", "duration", "answer_tpot"} (each
/// distribution as to_json(DistributionSummary)); null for nullopt.
nlohmann::json to_json(const std::optional<ReasoningSummary>& r);

/// The console's Reasoning block ("" for nullopt).
std::string reasoning_console(const std::optional<ReasoningSummary>& r);

}  // namespace llmload::analysis
