#pragma once
// A small RFC 4180 CSV reader for dataset files (MMLU as published): comma-separated fields,
// records ended by "\n" or "\r\n", fields optionally quoted with '"' (a quote inside a quoted
// field is written twice; quoted fields may hold commas and line breaks).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmload {

struct CsvRecord {
  std::int64_t line = 0;  // 1-based line on which the record starts
  std::vector<std::string> fields;
};

/// The records of `content`, in order. Empty lines between records are skipped; a UTF-8 byte order
/// mark at the start is dropped; a missing final line break is tolerated. Line breaks inside quoted
/// fields are kept as they are. Like Python's csv module, a quote inside an unquoted field is an
/// ordinary character. Throws ConfigError "<path>:<line>: ..." for a quoted field that is never
/// closed (the line where it opened) and for text after a closing quote (the fix: double the quote).
std::vector<CsvRecord> parse_csv(std::string_view content, const std::string& path);

}  // namespace llmload
