#pragma once
// The verdict on a tool-call or structured-output response (issue 19, docs/metrics.md "Tool calls
// and structured output"): did the model return what the request asked for, in a form a program
// can use? Pure logic.

#include <string>
#include <vector>

#include "llmload/loadgen/stream_decoder.hpp"
#include "llmload/loadgen/structured_request.hpp"

namespace llmload {

/// `verdict` is one of:
///   valid             every tool call names a tool of the request and its arguments parse and
///                     satisfy the tool's schema; or (no call) the answer parses and satisfies
///                     the response schema
///   invalid_json      arguments or answer that do not parse as JSON (also a response cut by
///                     max_tokens inside the JSON)
///   schema_violation  parsed, but the schema is not satisfied
///   unknown_tool      a call names a tool the request did not offer
///   no_tool_call      the tool choice forced a call ("required" or a name) and none came
///   text_answer       tools offered with choice auto/none, no call, no response schema: a plain
///                     answer, which is allowed (neither valid nor invalid)
/// `error` says why a response is invalid, with the JSON Pointer of the offending value.
struct StructuredJudgement {
  std::string verdict;
  std::string error;
  bool invalid() const { return verdict != "valid" && verdict != "text_answer"; }
};

StructuredJudgement judge_structured(const StructuredSpec& spec, const std::vector<ToolCall>& calls,
                                     const std::string& answer_text);

/// What the request asked for, for the record: "tools", "json_schema" or "tools+json_schema".
std::string structured_kind(const StructuredSpec& spec);

}  // namespace llmload
