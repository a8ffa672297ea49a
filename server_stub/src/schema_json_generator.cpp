#include "llmload/server/schema_json_generator.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/rng.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 12;
constexpr int kHardDepth = 64;  // a schema that requires itself (or merges itself) stops here
constexpr int kMaxRefHops = 32;
constexpr std::int64_t kMaxItems = 1024;  // bounds the work a huge minItems can ask for
// Integers stay within JavaScript's safe range, so every client reads them exactly.
constexpr double kSafeInteger = 9007199254740991.0;

// Salts of the draws made at one place of the value: each decision has its own stream.
enum Salt : std::uint64_t {
  kPickType = 1, kPickEnum, kPickBranch, kOptional, kCount, kWords, kNumber, kBoolean, kFormat, kUnique
};

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

/// The place of a child value: its parent's place and its key or index.
std::uint64_t child(std::uint64_t path, std::uint64_t key) { return Rng::for_stream(path, key + 1).next_u64(); }

bool is_schema_object(const json& s) { return s.is_object(); }

const json& empty_schema() {
  static const json empty = json::object();
  return empty;
}

/// `base` with `over`'s keywords on top; properties merged and required united (allOf, and a
/// picked anyOf/oneOf branch over the schema that held it).
json merge_schemas(json base, const json& over) {
  if (!over.is_object()) return base;
  if (!base.is_object()) base = json::object();
  for (const auto& [key, value] : over.items()) {
    if (key == "properties" && value.is_object() && base.contains(key) && base[key].is_object()) {
      for (const auto& [name, sub] : value.items()) base[key][name] = sub;
    } else if (key == "required" && value.is_array() && base.contains(key) && base[key].is_array()) {
      for (const auto& name : value) {
        if (std::find(base[key].begin(), base[key].end(), name) == base[key].end()) base[key].push_back(name);
      }
    } else {
      base[key] = value;
    }
  }
  return base;
}

class Generator {
 public:
  Generator(const json& root, std::uint64_t seed) : root_(root), seed_(seed) {}

  ojson value(const json& schema_in, std::uint64_t path, int depth) const {
    const json& schema = resolve_schema_ref(root_, schema_in);
    if (depth > kHardDepth) return ojson(nullptr);
    if (schema.is_boolean()) return schema.get<bool>() ? ojson(word(path, 0)) : ojson(nullptr);
    if (!is_schema_object(schema)) return ojson(word(path, 0));
    if (const auto c = schema.find("const"); c != schema.end()) return ojson(*c);
    if (const auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
      return ojson((*e)[draw(path, kPickEnum) % e->size()]);
    }
    if (json combined = combine(schema, path); !combined.is_null()) return value(combined, path, depth + 1);
    const std::string type = pick_type(schema, path);
    if (type == "object") return object_value(schema, path, depth);
    if (type == "array") return array_value(schema, path, depth);
    if (type == "integer") return integer_value(schema, path);
    if (type == "number") return number_value(schema, path);
    if (type == "boolean") return ojson(draw(path, kBoolean) % 2 == 0);
    if (type == "null") return ojson(nullptr);
    return string_value(schema, path);
  }

 private:
  std::uint64_t draw(std::uint64_t path, std::uint64_t salt) const {
    return Rng::for_stream(seed_ ^ (salt * 0x9E3779B97F4A7C15ULL), path).next_u64();
  }

  /// allOf merged, or an anyOf / oneOf branch picked and merged over the rest; null: neither.
  json combine(const json& schema, std::uint64_t path) const {
    if (const auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
      json merged = schema;
      merged.erase("allOf");
      for (const json& branch : *all) merged = merge_schemas(std::move(merged), resolve_schema_ref(root_, branch));
      return merged;
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      const auto branches = schema.find(key);
      if (branches == schema.end() || !branches->is_array() || branches->empty()) continue;
      json rest = schema;
      rest.erase(key);
      const json& branch = (*branches)[draw(path, kPickBranch) % branches->size()];
      return merge_schemas(std::move(rest), resolve_schema_ref(root_, branch));
    }
    return nullptr;
  }

  /// The schema's type: its `type` (one of an array's, picked), else what its keywords imply.
  std::string pick_type(const json& schema, std::uint64_t path) const {
    if (const auto t = schema.find("type"); t != schema.end()) {
      if (t->is_string()) return t->get<std::string>();
      if (t->is_array() && !t->empty()) {
        const json& picked = (*t)[draw(path, kPickType) % t->size()];
        if (picked.is_string()) return picked.get<std::string>();
      }
    }
    for (const char* key : {"properties", "required", "additionalProperties", "minProperties"}) {
      if (schema.contains(key)) return "object";
    }
    for (const char* key : {"items", "prefixItems", "minItems", "maxItems"}) {
      if (schema.contains(key)) return "array";
    }
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) {
      if (schema.contains(key)) return "number";
    }
    return "string";
  }

  static std::int64_t int_keyword(const json& schema, const char* key, std::int64_t fallback) {
    const auto it = schema.find(key);
    if (it == schema.end() || !it->is_number()) return fallback;
    const double v = it->get<double>();
    return static_cast<std::int64_t>(std::clamp(v, 0.0, static_cast<double>(kMaxItems)));
  }

  ojson object_value(const json& schema, std::uint64_t path, int depth) const {
    static const json kNoProperties = json::object();
    const auto props_it = schema.find("properties");
    const json& props = props_it != schema.end() && props_it->is_object() ? *props_it : kNoProperties;
    std::vector<std::string> required;
    if (const auto r = schema.find("required"); r != schema.end() && r->is_array()) {
      for (const json& name : *r) {
        if (name.is_string()) required.push_back(name.get<std::string>());
      }
    }
    auto is_required = [&](const std::string& name) {
      return std::find(required.begin(), required.end(), name) != required.end();
    };
    const std::int64_t min_props = int_keyword(schema, "minProperties", 0);
    const std::int64_t max_props = int_keyword(schema, "maxProperties", kMaxItems);
    // Optional properties: a subset (each one in with probability 1/2), then enough to meet
    // minProperties, never more than maxProperties allows beside the required ones.
    std::vector<std::string> optional_in;
    std::vector<std::string> optional_out;
    for (const auto& [name, sub] : props.items()) {
      if (is_required(name)) continue;
      const bool in = depth < kMaxDepth && draw(child(path, fnv1a(name)), kOptional) % 2 == 0;
      (in ? optional_in : optional_out).push_back(name);
    }
    auto count = [&] { return static_cast<std::int64_t>(required.size() + optional_in.size()); };
    for (std::size_t i = 0; i < optional_out.size() && count() < min_props; ++i) optional_in.push_back(optional_out[i]);
    while (!optional_in.empty() && count() > max_props) optional_in.pop_back();
    ojson out = ojson::object();
    for (const auto& [name, sub] : props.items()) {
      if (is_required(name) || std::find(optional_in.begin(), optional_in.end(), name) != optional_in.end()) {
        out[name] = value(sub, child(path, fnv1a(name)), depth + 1);
      }
    }
    for (const std::string& name : required) {  // required without a schema: any value
      if (!out.contains(name)) out[name] = value(empty_schema(), child(path, fnv1a(name)), depth + 1);
    }
    const auto extra = schema.find("additionalProperties");
    const bool extra_allowed = extra == schema.end() || !(extra->is_boolean() && !extra->get<bool>());
    for (std::int64_t i = 0; extra_allowed && static_cast<std::int64_t>(out.size()) < min_props; ++i) {
      out[fmt::format("extra_{}", i)] = value(extra != schema.end() ? *extra : empty_schema(), child(path, 1000 + i),
                                              depth + 1);
    }
    return out;
  }

  ojson array_value(const json& schema, std::uint64_t path, int depth) const {
    const std::int64_t min_items = int_keyword(schema, "minItems", 0);
    const std::int64_t max_items = std::max(min_items, int_keyword(schema, "maxItems", min_items + 3));
    const std::int64_t wanted = depth < kMaxDepth ? 1 + static_cast<std::int64_t>(draw(path, kCount) % 3) : 0;
    const std::int64_t n_wanted = std::clamp(wanted, min_items, max_items);
    // Tuples: prefixItems (2020-12) or an array `items` (draft 7) for the first places, then
    // `items` (2020-12) or `additionalItems`.
    const json* tuple = nullptr;
    const json* rest = nullptr;
    const auto prefix = schema.find("prefixItems");
    const auto items = schema.find("items");
    if (prefix != schema.end() && prefix->is_array()) {
      tuple = &*prefix;
      if (items != schema.end()) rest = &*items;
    } else if (items != schema.end() && items->is_array()) {
      tuple = &*items;
      if (const auto more = schema.find("additionalItems"); more != schema.end()) rest = &*more;
    } else if (items != schema.end()) {
      rest = &*items;
    }
    // No items allowed past the tuple (`items: false`): the tuple's length is the most there can be.
    const std::int64_t n = tuple != nullptr && rest != nullptr && rest->is_boolean() && !rest->get<bool>()
                               ? std::min(n_wanted, static_cast<std::int64_t>(tuple->size()))
                               : n_wanted;
    const auto unique_it = schema.find("uniqueItems");
    const bool unique = unique_it != schema.end() && unique_it->is_boolean() && unique_it->get<bool>();
    ojson out = ojson::array();
    for (std::int64_t i = 0; i < n; ++i) {
      const bool in_tuple = tuple != nullptr && i < static_cast<std::int64_t>(tuple->size());
      const json& item_schema = in_tuple ? (*tuple)[static_cast<std::size_t>(i)] : rest != nullptr ? *rest : empty_schema();
      ojson item = value(item_schema, child(path, static_cast<std::uint64_t>(i)), depth + 1);
      // uniqueItems: other draws for a repeated value (bounded); a value that stays repeated is
      // left out when the array can do without it.
      for (std::uint64_t retry = 1; unique && retry <= 8 && std::find(out.begin(), out.end(), item) != out.end(); ++retry) {
        item = value(item_schema, child(path, draw(path, kUnique + retry * 16 + static_cast<std::uint64_t>(i))), depth + 1);
      }
      if (unique && std::find(out.begin(), out.end(), item) != out.end() && static_cast<std::int64_t>(out.size()) >= min_items) {
        continue;
      }
      out.push_back(std::move(item));
    }
    return out;
  }

  /// Generator word k (" the", " of", ...) without its space.
  static std::string_view word_at(std::uint64_t k) {
    return generated_token(static_cast<std::int64_t>(k % kGeneratorWords)).substr(1);
  }

  /// Word `i` of the string at `path`.
  std::string word(std::uint64_t path, std::uint64_t i) const {
    return std::string(word_at(draw(child(path, 0x776f7264ULL + i), kWords)));
  }

  std::string string_value(const json& schema, std::uint64_t path) const {
    if (const auto f = schema.find("format"); f != schema.end() && f->is_string()) {
      if (auto formatted = format_value(f->get<std::string>(), path); !formatted.empty()) return formatted;
    }
    const std::int64_t min_len = int_keyword(schema, "minLength", 0);
    const std::int64_t max_len = std::max(min_len, int_keyword(schema, "maxLength", kMaxItems));
    const std::uint64_t words = 1 + draw(path, kCount) % 3;
    std::string s;
    for (std::uint64_t i = 0; i < words || static_cast<std::int64_t>(s.size()) < min_len; ++i) {
      if (!s.empty()) s += ' ';
      s += word(path, i);
      if (static_cast<std::int64_t>(s.size()) >= max_len) break;
    }
    if (static_cast<std::int64_t>(s.size()) > max_len) s.resize(static_cast<std::size_t>(max_len));
    return s;
  }

  /// A value of a common `format`; empty for a format the mock does not know.
  std::string format_value(const std::string& format, std::uint64_t path) const {
    const std::uint64_t d = draw(path, kFormat);
    const int day = 1 + static_cast<int>(d % 28);
    const int hour = static_cast<int>((d >> 8) % 24);
    const int minute = static_cast<int>((d >> 16) % 60);
    if (format == "date-time") return fmt::format("2025-06-{:02}T{:02}:{:02}:00Z", day, hour, minute);
    if (format == "date") return fmt::format("2025-06-{:02}", day);
    if (format == "time") return fmt::format("{:02}:{:02}:00", hour, minute);
    if (format == "email") return fmt::format("{}@example.com", word(path, 0));
    if (format == "uri" || format == "url") return fmt::format("https://example.com/{}", word(path, 0));
    if (format == "hostname") return fmt::format("{}.example.com", word(path, 0));
    if (format == "ipv4") return fmt::format("192.0.2.{}", d % 256);
    if (format == "ipv6") return fmt::format("2001:db8::{:x}", d % 65536);
    if (format == "uuid") {
      const std::uint64_t e = draw(path, kFormat + 1);
      return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", d >> 32, (d >> 16) & 0xffff, d & 0xfff,
                         0x8000 | ((e >> 48) & 0x3fff), e & 0xffffffffffffULL);
    }
    return {};
  }

  /// The schema's bounds [lo, hi] for numbers; exclusive ones reported apart.
  struct Bounds {
    double lo = 0;
    double hi = 100;
    bool lo_exclusive = false;
    bool hi_exclusive = false;
  };
  static Bounds bounds(const json& schema) {
    std::optional<double> lo;
    std::optional<double> hi;
    Bounds b;
    auto number = [&](const char* key) -> std::optional<double> {
      const auto it = schema.find(key);
      return it != schema.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
    };
    lo = number("minimum");
    hi = number("maximum");
    if (auto x = number("exclusiveMinimum"); x && (!lo || *x >= *lo)) {
      lo = x;
      b.lo_exclusive = true;
    }
    if (auto x = number("exclusiveMaximum"); x && (!hi || *x <= *hi)) {
      hi = x;
      b.hi_exclusive = true;
    }
    // Draft 4: exclusiveMinimum / exclusiveMaximum are booleans about minimum / maximum.
    auto flag = [&](const char* key) {
      const auto it = schema.find(key);
      return it != schema.end() && it->is_boolean() && it->get<bool>();
    };
    if (flag("exclusiveMinimum") && lo) b.lo_exclusive = true;
    if (flag("exclusiveMaximum") && hi) b.hi_exclusive = true;
    if (lo && !hi) hi = *lo + 100;
    if (hi && !lo) lo = *hi - 100;
    if (lo) b.lo = std::clamp(*lo, -kSafeInteger, kSafeInteger);
    if (hi) b.hi = std::clamp(*hi, -kSafeInteger, kSafeInteger);
    return b;
  }

  ojson integer_value(const json& schema, std::uint64_t path) const {
    const Bounds b = bounds(schema);
    double lo = std::ceil(b.lo);
    double hi = std::floor(b.hi);
    if (b.lo_exclusive && lo <= b.lo) lo += 1;
    if (b.hi_exclusive && hi >= b.hi) hi -= 1;
    if (lo > hi) return ojson(static_cast<std::int64_t>(lo));  // nothing fits: the schema cannot be met
    const auto m = schema.find("multipleOf");
    if (m != schema.end() && m->is_number() && m->get<double>() >= 1 && std::floor(m->get<double>()) == m->get<double>()) {
      const double step = m->get<double>();
      const double first = std::ceil(lo / step);
      const double last = std::floor(hi / step);
      if (first > last) return ojson(static_cast<std::int64_t>(lo));
      const auto k = first + static_cast<double>(draw(path, kNumber) % static_cast<std::uint64_t>(last - first + 1));
      return ojson(static_cast<std::int64_t>(k * step));
    }
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return ojson(static_cast<std::int64_t>(lo) + static_cast<std::int64_t>(draw(path, kNumber) % span));
  }

  ojson number_value(const json& schema, std::uint64_t path) const {
    const Bounds b = bounds(schema);
    const auto m = schema.find("multipleOf");
    if (m != schema.end() && m->is_number() && m->get<double>() > 0) {
      const double step = m->get<double>();
      double first = std::ceil(b.lo / step);
      double last = std::floor(b.hi / step);
      if (b.lo_exclusive && first * step <= b.lo) first += 1;
      if (b.hi_exclusive && last * step >= b.hi) last -= 1;
      if (first <= last && last - first < 1e15) {
        const double k = first + static_cast<double>(draw(path, kNumber) % static_cast<std::uint64_t>(last - first + 1));
        return ojson(k * step);
      }
    }
    const double u = static_cast<double>(draw(path, kNumber) >> 11) * 0x1.0p-53;
    double v = std::round((b.lo + (b.hi - b.lo) * u) * 100.0) / 100.0;  // two decimals, as people write them
    const bool below = b.lo_exclusive ? v <= b.lo : v < b.lo;
    const bool above = b.hi_exclusive ? v >= b.hi : v > b.hi;
    if (below || above) v = b.lo + (b.hi - b.lo) / 2;
    return ojson(v);
  }

  const json& root_;
  std::uint64_t seed_;
};

void write_spaced(std::string& out, const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ", ";
        first = false;
        append_json_string(out, key);
        out += ": ";
        write_spaced(out, item);
      }
      out += '}';
      return;
    }
    case ojson::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ", ";
        write_spaced(out, v[i]);
      }
      out += ']';
      return;
    }
    case ojson::value_t::string: append_json_string(out, v.get_ref<const std::string&>()); return;
    default: out += dump(v);
  }
}

}  // namespace

const json& resolve_schema_ref(const json& root, const json& schema) {
  const json* s = &schema;
  for (int hop = 0; hop < kMaxRefHops && s->is_object(); ++hop) {
    const auto ref = s->find("$ref");
    if (ref == s->end() || !ref->is_string()) return *s;
    const auto& target = ref->get_ref<const std::string&>();
    if (target == "#") {
      s = &root;
      continue;
    }
    if (target.rfind("#/", 0) != 0) return empty_schema();
    try {
      s = &root.at(json::json_pointer(target.substr(1)));
    } catch (const json::exception&) {
      return empty_schema();
    }
  }
  return *s;
}

ojson generate_schema_value(const json& schema, std::uint64_t seed) {
  return Generator(schema, seed).value(schema, 0, 0);
}

std::string generate_schema_json(const json& schema, std::uint64_t seed) {
  return write_spaced_json(generate_schema_value(schema, seed));
}

std::string write_spaced_json(const ojson& value) {
  std::string out;
  write_spaced(out, value);
  return out;
}

}  // namespace llmload::server
