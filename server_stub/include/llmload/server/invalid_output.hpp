#pragma once
// The invalid-output fault (fault.hpp): a request's structured output made invalid on purpose, so
// a client's validation of tool-call arguments and JSON answers can be tested against known
// ground truth (docs/server-apis.md, "Errors and faults").
//   json:   the text stops being JSON: its last character is dropped when it is a closing
//           brace, bracket or quote (`{"a": 1` ), else a stray "}" is appended (`12}`).
//   schema: the text stays JSON that the schema rejects, the first of: a required property
//           removed; a property whose schema has one `type` given a value of another type; the
//           whole value replaced by one of a type the schema does not allow. A schema that
//           accepts anything cannot be violated: the json variant is used (and reported).
// The result carries `invalid` = the variant used ("json" or "schema"). Pure.

#include <memory>

#include "llmload/server/fault.hpp"
#include "llmload/server/structured_output.hpp"

namespace llmload::server {

/// `output` with its text made invalid by `mode` (see above).
std::shared_ptr<const StructuredOutput> make_invalid_output(const StructuredOutput& output, InvalidOutputMode mode);

}  // namespace llmload::server
