#pragma once
// A small JSON Schema validator for the tests of the mock's schema-driven generator
// (schema_json_generator.hpp), written apart from it so the tests do not trust the generator's
// own reading of a schema. Covers the keywords the generator promises: type, const, enum, anyOf,
// oneOf, allOf, local $ref, properties, required, additionalProperties, min/maxProperties,
// items, prefixItems, additionalItems, min/maxItems, uniqueItems, min/maxLength, minimum,
// maximum, exclusiveMinimum/Maximum (numbers and draft-4 booleans), multipleOf.
// Lengths count bytes (the generator writes ASCII).

#include <algorithm>
#include <cmath>
#include <string>

#include "llmload/server/json.hpp"

namespace llmload::server::schema_test {

using nlohmann::json;

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  /// Empty when `value` validates against `schema`; else what failed, with the path.
  std::string check(const json& schema, const json& value, const std::string& path = "$") const {
    const json& s = resolve(schema);
    if (s.is_boolean()) return s.get<bool>() ? "" : path + ": false schema";
    if (!s.is_object()) return "";
    if (auto c = s.find("const"); c != s.end() && *c != value) return path + ": not the const";
    if (auto e = s.find("enum"); e != s.end() && std::find(e->begin(), e->end(), value) == e->end()) {
      return path + ": not in enum";
    }
    if (auto t = s.find("type"); t != s.end() && !type_ok(*t, value)) return path + ": wrong type for " + t->dump();
    if (auto all = s.find("allOf"); all != s.end()) {
      for (const json& b : *all) {
        if (auto err = check(b, value, path); !err.empty()) return err;
      }
    }
    if (auto any = s.find("anyOf"); any != s.end() && matches(*any, value, path) == 0) return path + ": no anyOf branch";
    if (auto one = s.find("oneOf"); one != s.end() && matches(*one, value, path) != 1) return path + ": not exactly one oneOf";
    if (value.is_object()) return check_object(s, value, path);
    if (value.is_array()) return check_array(s, value, path);
    if (value.is_string()) return check_string(s, value, path);
    if (value.is_number()) return check_number(s, value.get<double>(), path);
    return "";
  }

 private:
  const json& resolve(const json& schema) const {
    const json* s = &schema;
    for (int i = 0; i < 32 && s->is_object() && s->contains("$ref"); ++i) {
      const std::string ref = (*s)["$ref"];
      s = ref == "#" ? &root_ : &root_.at(json::json_pointer(ref.substr(1)));
    }
    return *s;
  }

  int matches(const json& branches, const json& value, const std::string& path) const {
    int n = 0;
    for (const json& b : branches) n += check(b, value, path).empty() ? 1 : 0;
    return n;
  }

  static bool one_type_ok(const std::string& t, const json& v) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
  }
  static bool type_ok(const json& t, const json& v) {
    if (t.is_string()) return one_type_ok(t.get<std::string>(), v);
    return std::any_of(t.begin(), t.end(), [&](const json& x) { return one_type_ok(x.get<std::string>(), v); });
  }

  std::string check_object(const json& s, const json& v, const std::string& path) const {
    const json props = s.value("properties", json::object());
    for (const json& name : s.value("required", json::array())) {
      if (!v.contains(name.get<std::string>())) return path + ": missing required " + name.get<std::string>();
    }
    for (const auto& [k, item] : v.items()) {
      if (props.contains(k)) {
        if (auto err = check(props[k], item, path + "." + k); !err.empty()) return err;
      } else if (auto extra = s.find("additionalProperties"); extra != s.end()) {
        if (auto err = check(*extra, item, path + "." + k); !err.empty()) return err;
      }
    }
    if (v.size() < s.value("minProperties", 0u)) return path + ": too few properties";
    if (v.size() > s.value("maxProperties", 1000000u)) return path + ": too many properties";
    return "";
  }

  std::string check_array(const json& s, const json& v, const std::string& path) const {
    if (v.size() < s.value("minItems", 0u)) return path + ": too few items";
    if (v.size() > s.value("maxItems", 1000000u)) return path + ": too many items";
    const json* tuple = s.contains("prefixItems") ? &s["prefixItems"] : (s.contains("items") && s["items"].is_array() ? &s["items"] : nullptr);
    const json* rest = s.contains("prefixItems") ? (s.contains("items") ? &s["items"] : nullptr)
                       : tuple != nullptr        ? (s.contains("additionalItems") ? &s["additionalItems"] : nullptr)
                       : s.contains("items")     ? &s["items"]
                                                 : nullptr;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json* item_schema = tuple != nullptr && i < tuple->size() ? &(*tuple)[i] : rest;
      if (item_schema == nullptr) continue;
      if (auto err = check(*item_schema, v[i], path + "[" + std::to_string(i) + "]"); !err.empty()) return err;
    }
    if (s.value("uniqueItems", false)) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        for (std::size_t j = i + 1; j < v.size(); ++j) {
          if (v[i] == v[j]) return path + ": items not unique";
        }
      }
    }
    return "";
  }

  static std::string check_string(const json& s, const json& v, const std::string& path) {
    const auto n = v.get_ref<const std::string&>().size();
    if (n < s.value("minLength", 0u)) return path + ": too short";
    if (n > s.value("maxLength", 1000000u)) return path + ": too long";
    return "";
  }

  static std::string check_number(const json& s, double x, const std::string& path) {
    auto num = [&](const char* k) { return s.contains(k) && s[k].is_number(); };
    auto flag = [&](const char* k) { return s.contains(k) && s[k].is_boolean() && s[k].get<bool>(); };
    if (num("minimum") && (flag("exclusiveMinimum") ? x <= s["minimum"].get<double>() : x < s["minimum"].get<double>())) {
      return path + ": below minimum";
    }
    if (num("maximum") && (flag("exclusiveMaximum") ? x >= s["maximum"].get<double>() : x > s["maximum"].get<double>())) {
      return path + ": above maximum";
    }
    if (num("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return path + ": not above exclusiveMinimum";
    if (num("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return path + ": not below exclusiveMaximum";
    if (num("multipleOf")) {
      const double q = x / s["multipleOf"].get<double>();
      if (std::fabs(q - std::round(q)) > 1e-9) return path + ": not a multiple";
    }
    return "";
  }

  const json& root_;
};

/// Empty when `value` validates against the root schema `schema`.
inline std::string validate(const json& schema, const json& value) { return Validator(schema).check(schema, value); }

}  // namespace llmload::server::schema_test
