#pragma once
// What a request with tools or a JSON output format generates instead of prose
// (docs/server-apis.md, "Tool calls and structured output"): ONE tool call, whose arguments are a
// JSON object generated from the tool's parameter schema, or a JSON document generated from the
// format's schema. The JSON text is the output proper: split into tokens by the server's
// tokenizer (ServerTokenizer::encode_text), timed and counted like any tokens, after the
// reasoning tokens; the output ends at EOS after it (ignore_eos and min_tokens do not pad it),
// unless max_tokens cuts it first (then the JSON is cut too, as a real server's would be).
//   - Which tool: the one tool_choice names, else tool (H(output_seed) mod the number of tools):
//     a function of the prompt and the request's seed, as the generated text is.
//   - The arguments / document: generate_schema_json(schema, H'(output_seed)) (schema_json_generator.hpp).
// The API front ends (tool_request_fields.hpp) read their own field shapes into ToolSpec /
// ToolChoice / OutputFormat and call make_structured_output. Pure.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/server/json.hpp"

namespace llmload::server {

enum class StructuredKind {
  kToolCall,  ///< a function call: `text` is its arguments
  kJson,      ///< a JSON answer (response_format / text.format / output_config.format): `text` is the answer
};

struct StructuredOutput {
  StructuredKind kind = StructuredKind::kJson;
  std::string tool_name;  ///< kToolCall: the function called
  /// The schema `text` was generated from (a tool's parameters; for json_object the mock's own
  /// small schema). The invalid-output fault's schema variant breaks it (invalid_output.hpp).
  nlohmann::json schema;
  std::string text;                     ///< the JSON text generated (the tokens' concatenation)
  std::optional<std::string> invalid;  ///< set by the invalid-output fault: "json" or "schema"
};

/// One function tool of a request.
struct ToolSpec {
  std::string name;
  nlohmann::json parameters;  ///< its JSON Schema (absent: an object without properties)
};

enum class ToolChoiceMode { kNone, kAuto, kRequired, kNamed };
struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string name;  ///< kNamed: the tool's name (checked against the tools by the front end)
};

enum class OutputFormatKind { kText, kJsonObject, kJsonSchema };
struct OutputFormat {
  OutputFormatKind kind = OutputFormatKind::kText;
  nlohmann::json schema;  ///< kJsonSchema
};

/// The schema a json_object answer is generated from: {"answer": string, "confidence": number
/// in [0, 1]}, both required.
const nlohmann::json& json_object_schema();

/// A tool call when there are tools and `choice` is not none; else the JSON answer of `format`
/// (kText: null, the plain output). `output_seed` is GenerationRequest::output_seed.
std::shared_ptr<const StructuredOutput> make_structured_output(const std::vector<ToolSpec>& tools,
                                                               const ToolChoice& choice, const OutputFormat& format,
                                                               std::uint64_t output_seed);

/// 24 hex digits from (seed, id): the tool call ids ("call_…", "fc_…", "toolu_…"), reproducible
/// per response.
std::string tool_call_id_suffix(std::uint64_t seed, std::string_view response_id, std::uint64_t salt);

}  // namespace llmload::server
