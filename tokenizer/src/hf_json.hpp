// Helpers for reading tokenizer.json components: typed field access and the one way this
// library refuses what it does not support (a TokenizerError naming the file, the component and
// the fix).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::tokenizer::hf {

using Json = nlohmann::json;

// What callers should do when a tokenizer cannot be loaded.
inline constexpr std::string_view kGeneralFix =
    "llmload cannot reproduce this tokenizer; omit --tokenizer so that prompts are calibrated "
    "with the server's /tokenize endpoint, or point --tokenizer at the model's tokenizer.model "
    "(SentencePiece)";

// Throws TokenizerError: "<origin>: <what> is not supported (supported: <supported>); <fix>".
[[noreturn]] void refuse(const std::string& origin, const std::string& what, std::string_view supported,
                         std::string_view fix = kGeneralFix);

// Throws TokenizerError for a regex pattern outside the engine's subset (`error` is the
// RegexError, which names the construct); `where` names the component holding the pattern.
[[noreturn]] void refuse_regex(const std::string& origin, const std::string& where, const std::exception& error);

// Throws TokenizerError: "<origin>: <what>" for a malformed file.
[[noreturn]] void malformed(const std::string& origin, const std::string& what);

// The "type" of a component object ("" when absent).
std::string type_of(const Json& component);
// obj[key] as a string, `fallback` when absent or null; a non-string is malformed.
std::string string_field(const Json& obj, const char* key, const std::string& origin, const std::string& fallback = "");
bool bool_field(const Json& obj, const char* key, const std::string& origin, bool fallback);

// A {"String": s} or {"Regex": r} pattern object.
struct Pattern {
  bool is_regex = false;
  std::string text;
};
Pattern pattern_field(const Json& obj, const std::string& origin, const std::string& where);

}  // namespace llmload::tokenizer::hf
