#pragma once
// One line of requests.jsonl, written straight from a record (issue 20: the line used to be built
// as a JSON tree and then serialized, a fifth of the client's CPU on short requests).
//
// The line is exactly what nlohmann::json would print for the same object (keys in sorted order,
// numbers and strings as its serializer writes them, invalid UTF-8 replaced): `record_json` is
// this line parsed, so there is one definition of the line's fields (record_line.cpp).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// A whole-number field added to a line beside the record's own (a shard's `shard`,
/// `global_index`). Its key must not be one of the record's.
struct ExtraLineField {
  std::string_view key;
  std::int64_t value;
};

/// Appends the record's requests.jsonl line (no newline) to `out`.
void append_record_line(std::string& out, const RequestRecord& r, std::span<const ExtraLineField> extra = {});

/// The record's requests.jsonl line (no newline).
std::string record_line(const RequestRecord& r, std::span<const ExtraLineField> extra = {});

}  // namespace llmload::analysis
