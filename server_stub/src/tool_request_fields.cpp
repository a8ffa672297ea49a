#include "llmload/server/tool_request_fields.hpp"

#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/request_fields.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

[[noreturn]] void bad(std::string message, const char* param) { throw_bad_request(std::move(message), param); }

/// A JSON Schema given by a client: an object (true/false schemas are not tool schemas).
const json* schema_field(const json& obj, const char* name, const std::string& where, const char* param) {
  const json* schema = field(obj, name);
  if (schema != nullptr && !schema->is_object()) {
    bad(fmt::format("`{}.{}` must be an object (a JSON Schema), got {}", where, name, type_name(*schema)), param);
  }
  return schema;
}

void check_optional_string(const json& obj, const char* name, const std::string& where, const char* param) {
  const json* v = field(obj, name);
  if (v != nullptr && !v->is_string()) bad(fmt::format("`{}.{}` must be a string, got {}", where, name, type_name(*v)), param);
}

void check_optional_bool(const json& obj, const char* name, const std::string& where, const char* param) {
  const json* v = field(obj, name);
  if (v != nullptr && !v->is_boolean()) bad(fmt::format("`{}.{}` must be a boolean, got {}", where, name, type_name(*v)), param);
}

/// The non-empty `name` string of a tool or tool choice.
std::string required_name(const json& obj, const std::string& where, const char* param) {
  const json* name = field(obj, "name");
  if (name == nullptr || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    bad(fmt::format("`{}.name` is required (a non-empty string)", where), param);
  }
  return name->get<std::string>();
}

const json& tools_array(const json& body, const char* what) {
  static const json kNone = json::array();
  const json* tools = field(body, "tools");
  if (tools == nullptr) return kNone;
  if (!tools->is_array()) bad(fmt::format("`tools` must be an array of {}, got {}", what, type_name(*tools)), "tools");
  return *tools;
}

void check_named_tool(const ToolChoice& choice, const std::vector<ToolSpec>& tools, const char* param) {
  if (choice.mode != ToolChoiceMode::kNamed) return;
  for (const auto& t : tools) {
    if (t.name == choice.name) return;
  }
  bad(fmt::format("`{}` names the tool `{}`, which is not one of `tools`", param, choice.name), param);
}

/// OpenAI's string tool choices (chat and Responses).
ToolChoice string_tool_choice(const std::string& s, const char* param) {
  if (s == "none") return {ToolChoiceMode::kNone, {}};
  if (s == "auto") return {ToolChoiceMode::kAuto, {}};
  if (s == "required") return {ToolChoiceMode::kRequired, {}};
  bad(fmt::format("`{}` must be \"none\", \"auto\", \"required\" or a function to call, got \"{}\"", param, s), param);
}

/// A tool choice that asks for a call (required, a named tool) needs tools to call.
void check_choice_has_tools(const ToolChoice& choice, const std::vector<ToolSpec>& tools, const char* param) {
  if (tools.empty() && (choice.mode == ToolChoiceMode::kRequired || choice.mode == ToolChoiceMode::kNamed)) {
    bad(fmt::format("`{}` asks for a tool call, but the request has no `tools`", param), param);
  }
}

std::vector<ToolSpec> chat_tools(const json& body) {
  std::vector<ToolSpec> tools;
  const json& list = tools_array(body, "function tools");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("tools[{}]", i);
    const json& t = list[i];
    if (!t.is_object()) bad(fmt::format("`{}` must be an object, got {}", where, type_name(t)), "tools");
    const json* type = field(t, "type");
    if (type == nullptr || *type != "function") {
      bad(fmt::format("`{}.type` must be \"function\" (the mock has function tools only)", where), "tools");
    }
    const json* function = field(t, "function");
    if (function == nullptr || !function->is_object()) bad(fmt::format("`{}.function` is required (an object)", where), "tools");
    const std::string fwhere = where + ".function";
    ToolSpec spec;
    spec.name = required_name(*function, fwhere, "tools");
    if (const json* params = schema_field(*function, "parameters", fwhere, "tools")) spec.parameters = *params;
    check_optional_string(*function, "description", fwhere, "tools");
    check_optional_bool(*function, "strict", fwhere, "tools");
    tools.push_back(std::move(spec));
  }
  return tools;
}

ToolChoice chat_tool_choice(const json& body, const std::vector<ToolSpec>& tools) {
  const json* v = field(body, "tool_choice");
  if (v == nullptr) return {};
  ToolChoice choice;
  if (v->is_string()) {
    choice = string_tool_choice(v->get<std::string>(), "tool_choice");
  } else {
    const json* function = v->is_object() ? field(*v, "function") : nullptr;
    if (!v->is_object() || field(*v, "type") == nullptr || *field(*v, "type") != "function" || function == nullptr ||
        !function->is_object()) {
      bad("`tool_choice` must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
          "{\"name\": ...}}",
          "tool_choice");
    }
    choice = {ToolChoiceMode::kNamed, required_name(*function, "tool_choice.function", "tool_choice")};
  }
  check_choice_has_tools(choice, tools, "tool_choice");
  check_named_tool(choice, tools, "tool_choice");
  return choice;
}

/// An OpenAI format object's type and schema: `schema_holder` holds "schema" (chat's
/// json_schema object, or Responses' flat format).
OutputFormat openai_format(const json& format, const char* where, const char* param, bool flat) {
  if (!format.is_object()) bad(fmt::format("`{}` must be an object, got {}", where, type_name(format)), param);
  const json* type = field(format, "type");
  if (type == nullptr || !type->is_string()) bad(fmt::format("`{}.type` is required (a string)", where), param);
  const auto& t = type->get_ref<const std::string&>();
  if (t == "text") return {};
  if (t == "json_object") return {OutputFormatKind::kJsonObject, {}};
  if (t != "json_schema") {
    bad(fmt::format("`{}.type` must be \"text\", \"json_object\" or \"json_schema\", got \"{}\"", where, t), param);
  }
  std::string holder_name = std::string(where) + ".json_schema";
  const json* holder = flat ? &format : field(format, "json_schema");
  if (holder == nullptr || !holder->is_object()) bad(fmt::format("`{}` is required (an object)", holder_name), param);
  if (flat) holder_name = where;
  const json* schema = schema_field(*holder, "schema", holder_name, param);
  if (schema == nullptr) bad(fmt::format("`{}.schema` is required (a JSON Schema)", holder_name), param);
  check_optional_string(*holder, "name", holder_name, param);
  check_optional_string(*holder, "description", holder_name, param);
  check_optional_bool(*holder, "strict", holder_name, param);
  return {OutputFormatKind::kJsonSchema, *schema};
}

std::vector<ToolSpec> responses_tools(const json& body, ResponsesToolEcho& echo) {
  std::vector<ToolSpec> tools;
  const json& list = tools_array(body, "tools");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("tools[{}]", i);
    const json& t = list[i];
    if (!t.is_object()) bad(fmt::format("`{}` must be an object, got {}", where, type_name(t)), "tools");
    const json* type = field(t, "type");
    if (type == nullptr || !type->is_string()) bad(fmt::format("`{}.type` is required (a string)", where), "tools");
    if (*type != "function") {
      bad(fmt::format("`{}`: tool type `{}` is not supported by the mock (llmload-server; function tools only)", where,
                      type->get<std::string>()),
          "tools");
    }
    ToolSpec spec;
    spec.name = required_name(t, where, "tools");
    const json* params = schema_field(t, "parameters", where, "tools");
    if (params != nullptr) spec.parameters = *params;
    check_optional_string(t, "description", where, "tools");
    check_optional_bool(t, "strict", where, "tools");
    ojson echoed;  // OpenAI's key order, with its defaults
    echoed["type"] = "function";
    echoed["description"] = field(t, "description") != nullptr ? ojson(*field(t, "description")) : ojson(nullptr);
    echoed["name"] = spec.name;
    echoed["parameters"] = params != nullptr ? ojson(*params) : ojson(nullptr);
    echoed["strict"] = field(t, "strict") != nullptr ? field(t, "strict")->get<bool>() : true;
    echo.tools.push_back(std::move(echoed));
    tools.push_back(std::move(spec));
  }
  return tools;
}

ToolChoice responses_tool_choice(const json& body, const std::vector<ToolSpec>& tools, ResponsesToolEcho& echo) {
  const json* v = field(body, "tool_choice");
  if (v == nullptr) return {};
  ToolChoice choice;
  if (v->is_string()) {
    choice = string_tool_choice(v->get<std::string>(), "tool_choice");
  } else {
    if (!v->is_object() || field(*v, "type") == nullptr || *field(*v, "type") != "function") {
      bad("`tool_choice` must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...} (the "
          "mock has function tools only)",
          "tool_choice");
    }
    choice = {ToolChoiceMode::kNamed, required_name(*v, "tool_choice", "tool_choice")};
  }
  check_choice_has_tools(choice, tools, "tool_choice");
  check_named_tool(choice, tools, "tool_choice");
  echo.tool_choice = ojson(*v);
  return choice;
}

}  // namespace

std::shared_ptr<const StructuredOutput> chat_structured_output(const json& body, std::uint64_t output_seed, bool chat) {
  std::vector<ToolSpec> tools;
  ToolChoice choice;
  if (chat) {
    tools = chat_tools(body);
    choice = chat_tool_choice(body, tools);
    (void)get_bool(body, "parallel_tool_calls");
  }
  OutputFormat format;
  if (const json* rf = field(body, "response_format")) format = openai_format(*rf, "response_format", "response_format", false);
  return make_structured_output(tools, choice, format, output_seed);
}

std::shared_ptr<const StructuredOutput> responses_structured_output(const json& body, std::uint64_t output_seed,
                                                                    ResponsesToolEcho& echo) {
  const std::vector<ToolSpec> tools = responses_tools(body, echo);
  const ToolChoice choice = responses_tool_choice(body, tools, echo);
  echo.parallel_tool_calls = get_bool(body, "parallel_tool_calls").value_or(true);
  OutputFormat format;
  if (const json* text = field(body, "text")) {
    if (!text->is_object()) wrong_type("text", "an object", *text);
    if (const json* f = field(*text, "format")) {
      format = openai_format(*f, "text.format", "text", true);
      echo.format = ojson(*f);
    }
  }
  return make_structured_output(tools, choice, format, output_seed);
}

}  // namespace llmload::server
