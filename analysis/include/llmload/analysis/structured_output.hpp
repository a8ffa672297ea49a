#pragma once
// Tool-call and structured-output validity of a run (issue 19; docs/metrics.md "Tool calls and
// structured output"): of the measured successful requests that asked for tools or a response
// schema, how many came back valid, and why the others did not.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

struct StructuredOutputSummary {
  std::int64_t requests = 0;  // measured requests that asked (failed ones included)
  std::int64_t judged = 0;    // ... that succeeded and were judged
  std::int64_t valid = 0;
  std::int64_t invalid = 0;
  std::int64_t text_answers = 0;  // tools with choice auto/none answered in text: neither
  std::int64_t tool_call_requests = 0;  // judged requests that returned tool calls
  std::int64_t tool_calls = 0;          // calls returned
  std::map<std::string, std::int64_t> by_verdict;  // every verdict's count
  std::map<std::string, std::int64_t> by_kind;     // judged requests per kind asked (tools, json_schema, ...)
  std::map<std::string, std::int64_t> invalid_by_kind;
  std::vector<std::string> examples;  // the first few reasons (with the request's index)
  /// invalid / (valid + invalid); nullopt when none was valid or invalid.
  std::optional<double> invalid_rate() const;
};

/// Whether a record asked for tools or a response schema and is measured (not warmup, in the
/// window), successful or not.
bool asks_for_structured_output(const RequestRecord& r);

/// nullopt when no record asks_for_structured_output.
std::optional<StructuredOutputSummary> summarize_structured_output(RecordRange records);

/// result.json `structured_output`: {"requests", "judged", "valid", "invalid", "invalid_rate",
/// "text_answers", "tool_call_requests", "tool_calls", "by_verdict", "by_kind" {kind: {judged,
/// invalid, invalid_rate}}, "examples"}; null for nullopt.
nlohmann::json structured_output_json(const std::optional<StructuredOutputSummary>& s);

/// The console line ("" for nullopt).
std::string structured_output_console(const std::optional<StructuredOutputSummary>& s);

}  // namespace llmload::analysis
