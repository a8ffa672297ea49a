#pragma once
// nlohmann::json for the server's sources and tests. GCC 12 at -O2 reports false
// -Wnull-dereference warnings inside nlohmann's inlined accessors (its union of pointers), which
// -Werror turns into build failures; they are silenced for this header only.

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>
#pragma GCC diagnostic pop
