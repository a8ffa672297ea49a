// The Anthropic Messages API's tool and output-format fields (tool_request_fields.hpp), with
// Anthropic's validation wording ("tools.0.name: Field required").
#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/request_fields.hpp"
#include "llmload/server/tool_request_fields.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

[[noreturn]] void invalid_field(std::string message, const char* param) { throw_bad_request(std::move(message), param); }

std::vector<ToolSpec> messages_tools(const json& body) {
  std::vector<ToolSpec> tools;
  const json* list = field(body, "tools");
  if (list == nullptr) return tools;
  if (!list->is_array()) invalid_field("tools: Input should be a valid list", "tools");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& t = (*list)[i];
    if (!t.is_object()) invalid_field(fmt::format("tools.{}: Input should be a valid dictionary", i), "tools");
    if (const json* type = field(t, "type"); type != nullptr && *type != "custom") {
      invalid_field(fmt::format("tools.{}: tool type '{}' is not supported by the mock (llmload-server; custom tools only)", i,
                          type->is_string() ? type->get<std::string>() : type->dump()),
              "tools");
    }
    const json* name = field(t, "name");
    if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
      invalid_field(fmt::format("tools.{}.name: Field required (a non-empty string)", i), "tools");
    }
    const json* schema = field(t, "input_schema");
    if (schema == nullptr) invalid_field(fmt::format("tools.{}.input_schema: Field required", i), "tools");
    if (!schema->is_object()) invalid_field(fmt::format("tools.{}.input_schema: Input should be a valid dictionary", i), "tools");
    if (const json* d = field(t, "description"); d != nullptr && !d->is_string()) {
      invalid_field(fmt::format("tools.{}.description: Input should be a valid string", i), "tools");
    }
    tools.push_back({name->get<std::string>(), *schema});
  }
  return tools;
}

ToolChoice messages_tool_choice(const json& body, const std::vector<ToolSpec>& tools) {
  const json* v = field(body, "tool_choice");
  if (v == nullptr) return {};
  if (!v->is_object()) invalid_field("tool_choice: Input should be a valid dictionary", "tool_choice");
  const json* type = field(*v, "type");
  if (type == nullptr || !type->is_string()) invalid_field("tool_choice.type: Field required", "tool_choice");
  if (const json* d = field(*v, "disable_parallel_tool_use"); d != nullptr && !d->is_boolean()) {
    invalid_field("tool_choice.disable_parallel_tool_use: Input should be a valid boolean", "tool_choice");
  }
  const auto& t = type->get_ref<const std::string&>();
  ToolChoice choice;
  if (t == "none") {
    choice.mode = ToolChoiceMode::kNone;
  } else if (t == "auto") {
    choice.mode = ToolChoiceMode::kAuto;
  } else if (t == "any") {
    choice.mode = ToolChoiceMode::kRequired;
  } else if (t == "tool") {
    const json* name = field(*v, "name");
    if (name == nullptr || !name->is_string()) invalid_field("tool_choice.tool.name: Field required", "tool_choice");
    choice = {ToolChoiceMode::kNamed, name->get<std::string>()};
  } else {
    invalid_field(fmt::format("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none', got '{}'", t), "tool_choice");
  }
  if (tools.empty() && (choice.mode == ToolChoiceMode::kRequired || choice.mode == ToolChoiceMode::kNamed)) {
    invalid_field("tool_choice: a tool choice of 'any' or 'tool' needs `tools`", "tool_choice");
  }
  if (choice.mode == ToolChoiceMode::kNamed) {
    bool found = false;
    for (const auto& tool : tools) found = found || tool.name == choice.name;
    if (!found) invalid_field(fmt::format("tool_choice.name: tool '{}' is not one of `tools`", choice.name), "tool_choice");
  }
  return choice;
}

/// {"type":"json_schema","schema":{...}} at `where` (output_config.format or output_format).
OutputFormat json_schema_format(const json& format, const std::string& where, const char* param) {
  if (!format.is_object()) invalid_field(fmt::format("{}: Input should be a valid dictionary", where), param);
  const json* type = field(format, "type");
  if (type == nullptr || *type != "json_schema") invalid_field(fmt::format("{}.type: Input should be 'json_schema'", where), param);
  const json* schema = field(format, "schema");
  if (schema == nullptr) invalid_field(fmt::format("{}.schema: Field required", where), param);
  if (!schema->is_object()) invalid_field(fmt::format("{}.schema: Input should be a valid dictionary", where), param);
  return {OutputFormatKind::kJsonSchema, *schema};
}

/// output_config.format (the GA field) or output_format (the structured-outputs beta's).
OutputFormat messages_format(const json& body) {
  OutputFormat format;
  bool given = false;
  if (const json* config = field(body, "output_config")) {
    if (!config->is_object()) invalid_field("output_config: Input should be a valid dictionary", "output_config");
    if (const json* effort = field(*config, "effort"); effort != nullptr && !effort->is_string()) {
      invalid_field("output_config.effort: Input should be a valid string", "output_config");
    }
    if (const json* f = field(*config, "format")) {
      format = json_schema_format(*f, "output_config.format", "output_config");
      given = true;
    }
  }
  if (const json* f = field(body, "output_format")) {
    if (given) invalid_field("output_format: give output_config.format or output_format, not both", "output_format");
    format = json_schema_format(*f, "output_format", "output_format");
  }
  return format;
}

}  // namespace

std::shared_ptr<const StructuredOutput> messages_structured_output(const json& body, std::uint64_t output_seed) {
  const std::vector<ToolSpec> tools = messages_tools(body);
  const ToolChoice choice = messages_tool_choice(body, tools);
  return make_structured_output(tools, choice, messages_format(body), output_seed);
}

}  // namespace llmload::server
