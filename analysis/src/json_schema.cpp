#include "llmload/analysis/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

namespace llmload::analysis::json_schema {
namespace schema_impl {
namespace {

using nlohmann::json;

// A value for a message: its JSON text, cut to 60 bytes (at a code point's start).
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() <= 60) return s;
  std::size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string where(const std::string& path) { return path.empty() ? "(root)" : path; }

// JSON Pointer escaping of one reference token (RFC 6901).
std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::int64_t code_points(const std::string& s) {
  std::int64_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

bool has_type(const json& v, const std::string& name) {
  if (name == "null") return v.is_null();
  if (name == "boolean") return v.is_boolean();
  if (name == "object") return v.is_object();
  if (name == "array") return v.is_array();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  throw std::invalid_argument("unknown type '" + name +
                              "' (null, boolean, object, array, string, number, integer)");
}

// A keyword's numeric argument; throws for a non-number.
double number_arg(const json& schema, const char* key) {
  const json& a = schema.at(key);
  if (!a.is_number()) throw std::invalid_argument(std::string(key) + " must be a number, got " + shown(a));
  return a.get<double>();
}

std::int64_t count_arg(const json& schema, const char* key) {
  const json& a = schema.at(key);
  if (!a.is_number() || a.get<double>() < 0)
    throw std::invalid_argument(std::string(key) + " must be a non-negative number, got " + shown(a));
  const double d = a.get<double>();
  return d >= 9e18 ? INT64_MAX : static_cast<std::int64_t>(d);
}

class Validator {
 public:
  // True when valid; else `why_` says why.
  bool check(const json& v, const json& schema, const std::string& path) {
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return true;
      return fail(path, "no value is allowed here (schema false)");
    }
    if (!schema.is_object()) throw std::invalid_argument("a schema must be an object or a boolean, got " + shown(schema));
    return check_type(v, schema, path) && check_values(v, schema, path) && check_number(v, schema, path) &&
           check_string(v, schema, path) && check_array(v, schema, path) && check_object(v, schema, path);
  }
  const std::string& why() const { return why_; }

 private:
  bool fail(const std::string& path, const std::string& reason) {
    why_ = where(path) + ": " + reason;
    return false;
  }

  bool check_type(const json& v, const json& schema, const std::string& path) {
    const auto it = schema.find("type");
    if (it == schema.end()) return true;
    if (it->is_string()) {
      if (has_type(v, it->get<std::string>())) return true;
      return fail(path, "expected " + it->get<std::string>() + ", got " + v.type_name());
    }
    if (!it->is_array()) throw std::invalid_argument("type must be a name or an array of names, got " + shown(*it));
    bool any = false;
    for (const json& t : *it) {
      if (!t.is_string()) throw std::invalid_argument("type names must be strings, got " + shown(t));
      any = any || has_type(v, t.get<std::string>());
    }
    return any || fail(path, "expected one of " + shown(*it) + ", got " + v.type_name());
  }

  bool check_values(const json& v, const json& schema, const std::string& path) {
    if (const auto it = schema.find("const"); it != schema.end() && v != *it)
      return fail(path, shown(v) + " is not the constant " + shown(*it));
    if (const auto it = schema.find("enum"); it != schema.end()) {
      if (!it->is_array()) throw std::invalid_argument("enum must be an array, got " + shown(*it));
      for (const json& e : *it)
        if (v == e) return true;
      return fail(path, shown(v) + " is not one of " + shown(*it));
    }
    return true;
  }

  bool check_number(const json& v, const json& schema, const std::string& path) {
    if (!v.is_number()) return true;
    const double x = v.get<double>();
    // Draft 4 wrote exclusiveMinimum/exclusiveMaximum as booleans modifying minimum/maximum.
    const auto ex_min = schema.find("exclusiveMinimum");
    const auto ex_max = schema.find("exclusiveMaximum");
    const bool min_exclusive = ex_min != schema.end() && ex_min->is_boolean() && ex_min->get<bool>();
    const bool max_exclusive = ex_max != schema.end() && ex_max->is_boolean() && ex_max->get<bool>();
    if (schema.contains("minimum")) {
      const double m = number_arg(schema, "minimum");
      if (min_exclusive ? !(x > m) : !(x >= m))
        return fail(path, shown(v) + " is below the " + (min_exclusive ? "exclusive " : "") + "minimum " + shown(schema.at("minimum")));
    }
    if (schema.contains("maximum")) {
      const double m = number_arg(schema, "maximum");
      if (max_exclusive ? !(x < m) : !(x <= m))
        return fail(path, shown(v) + " is above the " + (max_exclusive ? "exclusive " : "") + "maximum " + shown(schema.at("maximum")));
    }
    if (ex_min != schema.end() && !ex_min->is_boolean() && !(x > number_arg(schema, "exclusiveMinimum")))
      return fail(path, shown(v) + " is not above the exclusive minimum " + shown(*ex_min));
    if (ex_max != schema.end() && !ex_max->is_boolean() && !(x < number_arg(schema, "exclusiveMaximum")))
      return fail(path, shown(v) + " is not below the exclusive maximum " + shown(*ex_max));
    return true;
  }

  bool check_string(const json& v, const json& schema, const std::string& path) {
    if (!v.is_string()) return true;
    const std::string& s = v.get_ref<const std::string&>();
    const std::int64_t n = code_points(s);
    if (schema.contains("minLength") && n < count_arg(schema, "minLength"))
      return fail(path, "a string of " + std::to_string(n) + " characters, shorter than minLength " + shown(schema.at("minLength")));
    if (schema.contains("maxLength") && n > count_arg(schema, "maxLength"))
      return fail(path, "a string of " + std::to_string(n) + " characters, longer than maxLength " + shown(schema.at("maxLength")));
    if (const auto it = schema.find("pattern"); it != schema.end()) {
      if (!it->is_string()) throw std::invalid_argument("pattern must be a string, got " + shown(*it));
      bool found = false;
      try {
        std::cmatch m;
        found = bounded_regex_search(s, cached_regex(it->get<std::string>()), m);
      } catch (const std::regex_error& e) {
        return fail(path, std::string("the pattern could not be matched (") + e.what() + ")");
      }
      if (!found) return fail(path, shown(v) + " does not match the pattern " + shown(*it));
    }
    return true;
  }

  bool check_array(const json& v, const json& schema, const std::string& path) {
    if (!v.is_array()) return true;
    const auto n = static_cast<std::int64_t>(v.size());
    if (schema.contains("minItems") && n < count_arg(schema, "minItems"))
      return fail(path, std::to_string(n) + " items, fewer than minItems " + shown(schema.at("minItems")));
    if (schema.contains("maxItems") && n > count_arg(schema, "maxItems"))
      return fail(path, std::to_string(n) + " items, more than maxItems " + shown(schema.at("maxItems")));
    const auto it = schema.find("items");
    if (it == schema.end()) return true;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (it->is_array() && i >= it->size()) break;  // positional items: the rest is unconstrained
      const json& sub = it->is_array() ? (*it)[i] : *it;
      if (!check(v[i], sub, path + "/" + std::to_string(i))) return false;
    }
    return true;
  }

  bool check_object(const json& v, const json& schema, const std::string& path) {
    if (!v.is_object()) return true;
    if (const auto it = schema.find("required"); it != schema.end()) {
      if (!it->is_array()) throw std::invalid_argument("required must be an array, got " + shown(*it));
      for (const json& key : *it) {
        if (!key.is_string()) throw std::invalid_argument("required names must be strings, got " + shown(key));
        if (!v.contains(key.get<std::string>())) return fail(path, "the required property " + shown(key) + " is missing");
      }
    }
    const auto props = schema.find("properties");
    if (props != schema.end() && !props->is_object())
      throw std::invalid_argument("properties must be an object, got " + shown(*props));
    const auto extra = schema.find("additionalProperties");
    for (const auto& [key, value] : v.items()) {
      const std::string sub_path = path + "/" + pointer_token(key);
      if (props != schema.end() && props->contains(key)) {
        if (!check(value, (*props)[key], sub_path)) return false;
      } else if (extra != schema.end()) {
        if (extra->is_boolean() && !extra->get<bool>())
          return fail(path, "the property " + shown(json(key)) + " is not allowed (additionalProperties false)");
        if (!check(value, *extra, sub_path)) return false;
      }
    }
    return true;
  }

  std::string why_;
};

}  // namespace
}  // namespace schema_impl

std::string validate(const nlohmann::json& value, const nlohmann::json& schema) {
  schema_impl::Validator v;
  return v.check(value, schema, "") ? std::string() : v.why();
}

const std::regex& cached_regex(const std::string& pattern) {
  // Per thread, at most 64 patterns (then it starts over): the graders' and schemas' patterns are few.
  thread_local std::map<std::string, std::unique_ptr<std::regex>> cache;
  if (const auto it = cache.find(pattern); it != cache.end()) return *it->second;
  std::unique_ptr<std::regex> re;
  try {
    re = std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("the regex '" + pattern + "' does not compile: " + e.what());
  }
  if (cache.size() >= 64) cache.clear();
  return *cache.emplace(pattern, std::move(re)).first->second;
}

bool bounded_regex_search(std::string_view text, const std::regex& re, std::cmatch& match) {
  constexpr std::size_t kWindow = 4096;
  constexpr std::size_t kStep = kWindow / 2;
  const char* const b = text.data();
  if (text.size() <= kWindow) return std::regex_search(b, b + text.size(), match, re);
  for (std::size_t off = 0; off < text.size(); off += kStep) {
    const std::size_t end = std::min(off + kWindow, text.size());
    auto flags = std::regex_constants::match_default;
    if (off > 0) flags |= std::regex_constants::match_prev_avail;  // '^' and '\b' see the byte before
    if (end < text.size()) flags |= std::regex_constants::match_not_eol;
    std::cmatch m;
    // A match starting in the second half is found again, whole, in the next window.
    if (std::regex_search(b + off, b + end, m, re, flags) &&
        (static_cast<std::size_t>(m[0].first - b) < off + kStep || end == text.size())) {
      match = std::move(m);
      return true;
    }
    if (end == text.size()) break;
  }
  return false;
}

}  // namespace llmload::analysis::json_schema
