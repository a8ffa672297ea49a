#pragma once
// The subset of JSON Schema the "json" grader and the structured-output check use (docs/metrics.md,
// "Accuracy"): type (a name or an array of names; "integer" is a number with no fractional part),
// properties, required, additionalProperties (bool or schema), items (a schema, or an array of
// schemas checked position by position), enum, const, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (a number, or draft 4's boolean beside minimum/maximum), minLength, maxLength
// (in code points), minItems, maxItems, pattern (ECMAScript, searched, not anchored). Every other
// keyword ($ref, allOf, anyOf, oneOf, not, patternProperties, format, ...) is ignored: it
// constrains nothing.

#include <regex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace llmload::analysis::json_schema {

/// "" when `value` satisfies `schema` (an object or a boolean), else the first reason it does
/// not, with the JSON Pointer of the offending value ("/items/2: 7 is above the maximum 5").
/// Throws std::invalid_argument for a schema it cannot use (not an object or boolean, an unknown
/// type name, a pattern that does not compile).
std::string validate(const nlohmann::json& value, const nlohmann::json& schema);

/// `pattern` compiled as an ECMAScript regex, kept in a small per-thread cache. Throws
/// std::invalid_argument naming the pattern when it does not compile.
const std::regex& cached_regex(const std::string& pattern);

/// std::regex_search without the stack overflow: libstdc++'s matcher recurses per character a
/// repetition consumes (some 400 bytes of stack each: "(x|z)*y" overflows 8 MiB at 20,000
/// characters), so a text longer than 4 KiB is searched in 4 KiB windows 2 KiB apart. The first
/// match is found as in one search when it fits in 2 KiB; a longer one may be cut at a window's
/// end or missed. May throw std::regex_error (complexity).
bool bounded_regex_search(std::string_view text, const std::regex& re, std::cmatch& match);

}  // namespace llmload::analysis::json_schema
