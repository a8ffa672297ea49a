#pragma once
// Tool calls and structured output (issue 19, docs/workloads.md "Tool calls and structured
// output"): what a request asks for beyond text (function tools and a tool choice, a JSON Schema
// the answer must follow), where it comes from (--tools / --json-schema: built in or a file; a
// dataset row's own fields), which requests get it (--tool-ratio, --structured-output-ratio,
// seeded), and how each API writes it. Pure logic: files are read, nothing is sent.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload {

/// One function tool: its name, description and the JSON Schema of its arguments.
struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();
};

/// What one request asks for beyond text. Shared (immutable) by every request that asks it.
struct StructuredSpec {
  std::vector<ToolSpec> tools;  // empty: no tools
  /// "auto", "required", "none", or the name of one of `tools` (that tool is forced).
  std::string tool_choice = "required";
  std::optional<nlohmann::json> schema;  // the answer's JSON Schema (structured output)
  std::string schema_name = "response";
  bool json_object = false;  // `response_format: {"type": "json_object"}`: any JSON object

  bool has_tools() const { return !tools.empty(); }
  bool has_format() const { return schema.has_value() || json_object; }
  /// A tool call is expected: tools given and the choice forces one ("required" or a name).
  bool call_required() const { return has_tools() && tool_choice != "auto" && tool_choice != "none"; }
  const ToolSpec* tool(const std::string& name) const;
};

/// The built-in tools (a weather lookup, a flight search, a calendar event, a unit conversion):
/// parameters with required fields, enums, integer ranges, arrays and a nested object.
std::vector<ToolSpec> builtin_tools();
/// The built-in answer schema (a product record: strings, an integer range, an enum, an array,
/// a nested object, additionalProperties false).
nlohmann::json builtin_schema();

/// Tools from JSON: an array of OpenAI chat tools ({"type":"function","function":{...}}),
/// Responses tools ({"type":"function","name",...}) or Anthropic tools ({"name","input_schema"}).
/// Throws ConfigError naming `where`, the tool and the fix.
std::vector<ToolSpec> parse_tools(const nlohmann::json& j, const std::string& where);
/// Checks a tool choice against the tools ("auto", "required", "none" or a tool's name; an
/// OpenAI object {"type":"function","function":{"name"}} is read as the name). Throws ConfigError.
std::string parse_tool_choice(const nlohmann::json& j, const std::vector<ToolSpec>& tools, const std::string& where);
/// A response format from JSON: an OpenAI response_format ({"type":"json_schema","json_schema":
/// {"name","schema"}} or {"type":"json_object"}) or a bare JSON Schema. Throws ConfigError.
void parse_response_format(const nlohmann::json& j, StructuredSpec& spec, const std::string& where);

/// --tools SOURCE / --json-schema SOURCE: "builtin" or a JSON file. Throws ConfigError naming the
/// flag, the file and the fix.
std::vector<ToolSpec> load_tools(const std::string& source);
nlohmann::json load_schema(const std::string& source);

/// The run's settings for tool calls and structured output (flags).
struct StructuredConfig {
  std::string tools;           // "" none, "builtin" or a file (--tools)
  std::string tool_choice = "required";  // --tool-choice
  double tool_ratio = 1.0;     // --tool-ratio: the share of requests that carry the tools
  std::string json_schema;     // "" none, "builtin" or a file (--json-schema)
  double structured_ratio = 1.0;  // --structured-output-ratio
  bool any() const { return !tools.empty() || !json_schema.empty(); }
};

/// Which requests carry tools or a schema: request i carries the tools when a draw seeded by
/// (seed, i) falls under tool_ratio, and the schema by an independent draw under
/// structured_ratio; a request may carry both (the model then either calls a tool or answers in
/// the schema). Deterministic for (config, seed, i).
class StructuredMix {
 public:
  /// Loads the tools and the schema; throws ConfigError on bad files or values.
  StructuredMix(const StructuredConfig& cfg, std::uint64_t seed);
  /// nullptr: request `index` asks for plain text.
  std::shared_ptr<const StructuredSpec> pick(std::uint64_t index) const;
  /// For the artifact's conditions.
  nlohmann::json describe() const;

 private:
  StructuredConfig cfg_;
  std::uint64_t seed_;
  std::shared_ptr<const StructuredSpec> both_, tools_only_, format_only_;
};

/// Adds the spec's fields to a request body in the API's own form: chat `tools`/`tool_choice`/
/// `response_format`; Responses `tools`/`tool_choice`/`text.format`; Anthropic `tools`/
/// `tool_choice`/`output_config.format`; completions `response_format` (vLLM); SGLang
/// `sampling_params.json_schema`. Throws ConfigError when the API cannot carry it (tools on
/// completions or /generate).
void add_structured_fields(nlohmann::json& body, ApiKind api, const StructuredSpec& spec);

}  // namespace llmload
