#pragma once
// Helpers shared by the workload sources (not part of the public API): whole-file reading, line
// iteration with line numbers, strict number parsing. No regex, no locale.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace llmload::workload_detail {

/// The whole file; throws ConfigError "cannot read <what> file "<path>": <reason>".
std::string read_text_file(const std::string& path, std::string_view what);

/// `s` without leading and trailing spaces, tabs and carriage returns.
std::string_view trim(std::string_view s);

/// A decimal integer (optional leading '-'), the whole of `s` after trimming; nullopt otherwise.
std::optional<std::int64_t> parse_int(std::string_view s);

/// A finite decimal number, the whole of `s` after trimming; nullopt otherwise (also for inf/nan).
std::optional<double> parse_double(std::string_view s);

/// Calls fn(line_number, line) for each line of `text` (1-based numbers; '\n' separated, a trailing
/// '\r' removed, a missing final newline tolerated). fn returns false to stop early.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::int64_t number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    if (!fn(number, line)) return;
    pos = end + 1;
  }
}

/// Seconds as a JSON-friendly double.
double to_seconds(std::int64_t nanos);

/// One JSON line of a dataset or trace, parsed (discarded when it is not JSON). A key given twice
/// in one object (JSON leaves it to the reader; nlohmann keeps the last) throws ConfigError
/// "<where>: key "<key>" is given twice in one object: keep one".
nlohmann::json parse_json_line(std::string_view text, const std::string& where);

}  // namespace llmload::workload_detail
