#include "hf_json.hpp"

namespace llmload::tokenizer::hf {

void refuse(const std::string& origin, const std::string& what, std::string_view supported, std::string_view fix) {
  throw TokenizerError(origin + ": " + what + " is not supported by llmload's tokenizer (supported: " +
                       std::string(supported) + "); " + std::string(fix));
}

void refuse_regex(const std::string& origin, const std::string& where, const std::exception& error) {
  throw TokenizerError(origin + ": " + where + ": " + error.what() + "; " + std::string(kGeneralFix));
}

void malformed(const std::string& origin, const std::string& what) {
  throw TokenizerError(origin + ": " + what + "; the file is not a valid tokenizer.json, download it again");
}

std::string type_of(const Json& component) {
  if (!component.is_object()) return "";
  const auto it = component.find("type");
  return it != component.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string string_field(const Json& obj, const char* key, const std::string& origin, const std::string& fallback) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) malformed(origin, std::string("field \"") + key + "\" is not a string");
  return it->get<std::string>();
}

bool bool_field(const Json& obj, const char* key, const std::string& origin, bool fallback) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) malformed(origin, std::string("field \"") + key + "\" is not true or false");
  return it->get<bool>();
}

Pattern pattern_field(const Json& obj, const std::string& origin, const std::string& where) {
  const auto it = obj.find("pattern");
  if (it == obj.end() || !it->is_object()) malformed(origin, where + " has no \"pattern\" object");
  if (const auto s = it->find("String"); s != it->end() && s->is_string()) return {false, s->get<std::string>()};
  if (const auto r = it->find("Regex"); r != it->end() && r->is_string()) return {true, r->get<std::string>()};
  malformed(origin, where + ".pattern is neither {\"String\": ...} nor {\"Regex\": ...}");
}

}  // namespace llmload::tokenizer::hf
