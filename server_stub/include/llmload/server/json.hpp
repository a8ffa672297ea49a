#pragma once
// nlohmann::json for the server's sources and tests. GCC 12 at -O2 reports false
// -Wnull-dereference warnings inside nlohmann's inlined accessors (its union of pointers), which
// -Werror turns into build failures; they are silenced for this header only.

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>
#pragma GCC diagnostic pop

#include <string>
#include <string_view>

namespace llmload::server {

/// Field order as written: the server's replies keep OpenAI's key order.
using ojson = nlohmann::ordered_json;

/// A reply body: compact, invalid UTF-8 replaced rather than thrown on.
inline std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

/// Appends `text` as a JSON string literal, quotes included: '"' and '\\' backslash-escaped,
/// control characters (< 0x20) as \n, \t, ... or \u00XX. Bytes >= 0x80 are copied as they are
/// (`text` must be valid UTF-8, as every tokenizer's decode is). For token text written into
/// hand-built SSE payloads, where a model's tokens may hold any of these.
void append_json_string(std::string& out, std::string_view text);

}  // namespace llmload::server
