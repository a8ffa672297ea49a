#include "llmload/server/request_fields.hpp"

#include <limits>

#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"

namespace llmload::server {

using nlohmann::json;

std::string_view type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "value";
  }
}

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void wrong_type(const char* name, std::string_view expected, const json& got) {
  throw_bad_request(fmt::format("`{}` must be {}, got {}", name, expected, type_name(got)), name);
}

std::optional<bool> get_bool(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::int64_t> get_int(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    return u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  wrong_type(name, "an integer", *v);
}

std::optional<double> get_number(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  return v->get<double>();
}

std::optional<std::string> get_string(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string", *v);
  return v->get<std::string>();
}

std::optional<std::int64_t> get_max_tokens(const json& body, const char* name) {
  auto v = get_int(body, name);
  if (v && *v < 1) throw_bad_request(fmt::format("{} must be at least 1, got {}.", name, *v), name);
  return v;
}

}  // namespace llmload::server
