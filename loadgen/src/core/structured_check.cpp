#include "llmload/loadgen/structured_check.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "llmload/analysis/json_schema.hpp"

namespace llmload {
namespace {

using nlohmann::json;

// An excerpt of a value for a message: at most 80 bytes, on a UTF-8 boundary.
std::string short_text(const std::string& s) {
  if (s.size() <= 80) return s;
  std::size_t cut = 80;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

// Parses `text` as JSON and checks it against `schema` (nullptr: any JSON object).
StructuredJudgement check_json(const std::string& text, const json* schema, const std::string& what) {
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) {
    return {"invalid_json", fmt::format("{} is not JSON: '{}'", what, short_text(text))};
  }
  if (schema == nullptr) {
    if (!value.is_object()) return {"schema_violation", fmt::format("{} is not a JSON object", what)};
    return {"valid", {}};
  }
  try {
    std::string why = analysis::json_schema::validate(value, *schema);
    if (!why.empty()) return {"schema_violation", fmt::format("{}: {}", what, why)};
  } catch (const std::exception& e) {
    // A schema the checker cannot use (a bad pattern): the request's own fault, said as such.
    return {"schema_violation", fmt::format("{}: the schema cannot be checked: {}", what, e.what())};
  }
  return {"valid", {}};
}

}  // namespace

StructuredJudgement judge_structured(const StructuredSpec& spec, const std::vector<ToolCall>& calls,
                                     const std::string& answer_text) {
  if (!calls.empty()) {
    for (const auto& call : calls) {
      const ToolSpec* tool = spec.tool(call.name);
      if (tool == nullptr) {
        return {"unknown_tool", fmt::format("tool call '{}' names no tool of the request", short_text(call.name))};
      }
      StructuredJudgement j = check_json(call.arguments, &tool->parameters, fmt::format("{} arguments", call.name));
      if (j.invalid()) return j;
    }
    return {"valid", {}};
  }
  if (spec.has_format()) return check_json(answer_text, spec.schema ? &*spec.schema : nullptr, "the answer");
  if (spec.call_required()) {
    return {"no_tool_call", fmt::format("tool_choice '{}' asked for a tool call and none came", spec.tool_choice)};
  }
  return {"text_answer", {}};
}

std::string structured_kind(const StructuredSpec& spec) {
  if (spec.has_tools() && spec.has_format()) return "tools+json_schema";
  return spec.has_tools() ? "tools" : "json_schema";
}

}  // namespace llmload
