#pragma once
// Parsing and printing of human-written durations ("50ms", "2s", "1.5m", "250us").

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

namespace llmload {

/// Thrown for a value that cannot be parsed; the message names the value and the accepted forms.
class DurationParseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Parses a non-negative duration: a decimal number followed by a unit, one of
/// ns, us, ms, s, m, h. A bare number is taken in `bare_unit` when it is non-empty (an SLO bound's
/// milliseconds), else rejected with the fix ("add its unit, e.g. 10s"): every duration flag says
/// its unit; 0 needs none. Throws DurationParseError.
std::chrono::nanoseconds parse_duration(std::string_view text, std::string_view bare_unit = "");

/// True when `text` ends in a duration unit (used to tell "10" requests from "10s").
bool has_duration_unit(std::string_view text);

/// Formats with a unit chosen for readability, e.g. "12.3ms", "2.00s".
std::string format_duration(std::chrono::nanoseconds d);

/// Duration as fractional milliseconds / seconds (for output only; logic keeps chrono types).
inline double to_ms(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; }
inline double to_seconds(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e9; }

}  // namespace llmload
