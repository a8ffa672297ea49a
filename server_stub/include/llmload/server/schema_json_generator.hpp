#pragma once
// A JSON value generated deterministically from a JSON Schema: the mock's tool-call arguments and
// structured output (docs/server-apis.md, "Tool calls and structured output"). The same (schema,
// seed) always gives the same value, and the value validates against the schema for the keywords
// below (unknown keywords are ignored, so a schema that leans on them may not be met):
//   type (a name or an array of names: one is picked), const, enum, anyOf / oneOf (one branch is
//   picked and merged over the rest of the schema), allOf (the branches merged), local $ref
//   ("#/$defs/X", "#/definitions/X", any JSON pointer into the root schema);
//   object: properties, required (always present), the other properties a deterministic subset,
//     minProperties / maxProperties (optional properties added or left out to meet them);
//   array: items, prefixItems (and draft-7 tuple `items`), minItems / maxItems, uniqueItems;
//   string: minLength / maxLength, format (date-time, date, time, email, uri, url, uuid,
//     hostname, ipv4, ipv6); `pattern` is NOT honoured; other strings are a few English words;
//   integer / number: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers and draft-4
//     booleans), multipleOf (integers; numbers best effort);
//   boolean, null. A schema without `type` is taken from its keywords (properties: object, items:
//   array, ...), else a string. Nesting is cut at depth 12 (only required properties, minItems
//   items below it), so a recursive schema ends.
// Pure functions.

#include <cstdint>
#include <string>

#include "llmload/server/json.hpp"

namespace llmload::server {

/// A value that validates against `schema` (see above), drawn from `seed`.
ojson generate_schema_value(const nlohmann::json& schema, std::uint64_t seed);

/// The same value as JSON text (write_spaced_json).
std::string generate_schema_json(const nlohmann::json& schema, std::uint64_t seed);

/// `schema` with its local `$ref`s followed (against `root`) until it has none at the top; a
/// reference that does not resolve gives an empty schema (any value).
const nlohmann::json& resolve_schema_ref(const nlohmann::json& root, const nlohmann::json& schema);

/// JSON text with ", " and ": " as separators (as Python's json.dumps writes it, and as models
/// tend to write JSON), so that the mock's one-token-per-word rule splits it into several tokens.
/// Strings are escaped as append_json_string does.
std::string write_spaced_json(const ojson& value);

}  // namespace llmload::server
