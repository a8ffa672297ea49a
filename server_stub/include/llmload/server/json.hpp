#pragma once
// nlohmann::json for the server's sources and tests. GCC 12 at -O2 reports false
// -Wnull-dereference warnings inside nlohmann's inlined accessors (its union of pointers), which
// -Werror turns into build failures; they are silenced for this header only.

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>
#pragma GCC diagnostic pop

#include <string>

namespace llmload::server {

/// Field order as written: the server's replies keep OpenAI's key order.
using ojson = nlohmann::ordered_json;

/// A reply body: compact, invalid UTF-8 replaced rather than thrown on.
inline std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

}  // namespace llmload::server
