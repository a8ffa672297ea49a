#include "llmload/server/invalid_output.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "llmload/server/schema_json_generator.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

std::string unparseable(std::string text) {
  const char last = text.empty() ? '\0' : text.back();
  if (last == '}' || last == ']' || last == '"') {
    text.pop_back();
  } else {
    text += '}';
  }
  return text;
}

/// Whether a JSON Schema `type` name accepts `value`.
bool type_accepts(const std::string& type, const ojson& value) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  return true;  // an unknown type name: treat as accepting
}

/// A value none of the schema's `type` names accept; nullopt when it has no `type`.
std::optional<ojson> wrong_typed(const json& schema) {
  const auto type = schema.is_object() ? schema.find("type") : schema.end();
  if (!schema.is_object() || type == schema.end()) return std::nullopt;
  std::vector<std::string> types;
  if (type->is_string()) types.push_back(type->get<std::string>());
  if (type->is_array()) {
    for (const json& t : *type) {
      if (t.is_string()) types.push_back(t.get<std::string>());
    }
  }
  if (types.empty()) return std::nullopt;
  const std::array<ojson, 5> candidates = {ojson("not the expected type"), ojson(12345), ojson(true), ojson::array(),
                                           ojson::object()};
  for (const ojson& c : candidates) {
    bool accepted = false;
    for (const auto& t : types) accepted = accepted || type_accepts(t, c);
    if (!accepted) return c;
  }
  return std::nullopt;
}

/// The value broken against the schema, or nullopt when no rule applies.
std::optional<ojson> against_schema(const json& root, ojson value) {
  const json& schema = resolve_schema_ref(root, root);
  if (value.is_object() && schema.is_object()) {
    if (const auto req = schema.find("required"); req != schema.end() && req->is_array()) {
      for (const json& name : *req) {
        if (name.is_string() && value.contains(name.get<std::string>())) {
          value.erase(name.get<std::string>());
          return value;
        }
      }
    }
    if (const auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
      for (const auto& [name, sub] : props->items()) {
        if (!value.contains(name)) continue;
        if (auto wrong = wrong_typed(resolve_schema_ref(root, sub))) {
          value[name] = std::move(*wrong);
          return value;
        }
      }
    }
  }
  return wrong_typed(schema);
}

}  // namespace

std::shared_ptr<const StructuredOutput> make_invalid_output(const StructuredOutput& output, InvalidOutputMode mode) {
  auto out = std::make_shared<StructuredOutput>(output);
  if (mode == InvalidOutputMode::kSchema) {
    const ojson value = ojson::parse(output.text, nullptr, /*allow_exceptions=*/false);
    if (!value.is_discarded()) {
      if (auto broken = against_schema(output.schema, value)) {
        out->text = write_spaced_json(*broken);
        out->invalid = "schema";
        return out;
      }
    }
  }
  out->text = unparseable(output.text);
  out->invalid = "json";
  return out;
}

}  // namespace llmload::server
