#pragma once
// .hlog interval logs, format 1.3, as written by HdrHistogram Java's HistogramLogWriter and read
// by its HistogramLogReader / HistogramLogProcessor and by hdr-histogram-js:
//
//   #[Logged with <tool>]
//   #[Histogram log format version 1.3]
//   #[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]
//   #[BaseTime: 0.000 (seconds since epoch)]          (optional)
//   "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//   Tag=ttft,0.127,1.007,2.769,HISTF...
//
// Numbers are printed like Java's Locale.US "%.3f" (HALF_UP on the shortest decimal form).

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_histogram.hpp"

namespace llmload::analysis {

class HlogWriter {
 public:
  /// Writes to `out`, which must outlive the writer. Stream errors are the caller's to check.
  explicit HlogWriter(std::ostream& out);

  /// "#[Logged with <tool>]", the format-version line and "#[StartTime: ...]" (with the date in
  /// UTC, in Java's Date.toString() layout). Throws std::invalid_argument for a tool name with a
  /// line break or a non-finite start time.
  void write_header(std::string_view tool, double start_time_sec_since_epoch);
  /// "#[BaseTime: ...]": interval timestamps are then relative to this time.
  void write_base_time(double sec);
  /// The CSV legend line.
  void write_legend();
  /// One interval line: [Tag=<tag>,]<start>,<length>,<max / max_value_unit_ratio>,<base64 V2>.
  /// Throws std::invalid_argument on a tag that is empty or contains a comma, space, CR or LF,
  /// on non-finite times, or on a ratio that is not finite and > 0.
  void write_interval(const HdrHistogram& histogram, double start_sec, double length_sec,
                      std::optional<std::string_view> tag = {}, double max_value_unit_ratio = 1000.0);

 private:
  std::ostream& out_;
};

struct HlogInterval {
  std::optional<std::string> tag;
  double start_sec = 0;  // as written in the line (relative to the base time, if any)
  double length_sec = 0;
  double max = 0;  // the Interval_Max column as written (readers do not need it)
  /// Decoded histogram; its start_time_ms/end_time_ms are absolute (ms since the epoch), the
  /// base time being the BaseTime line, else deduced as Java does: the StartTime when the first
  /// interval's timestamp is more than a year before it (relative timestamps), else 0.
  HdrHistogram histogram;
};

struct HlogFile {
  std::optional<double> start_time_sec;  // from "#[StartTime: ...]"
  std::optional<double> base_time_sec;   // from "#[BaseTime: ...]"
  std::vector<HlogInterval> intervals;   // in file order
};

/// Reads a whole .hlog. Comment lines ("#...") other than StartTime/BaseTime, the legend and
/// blank lines are skipped; CR before LF is accepted. Unlike Java's reader, which silently stops
/// at a bad line, any malformed line throws HdrCodecError whose message starts with
/// "hlog line <n>: " (1-based) and says what is wrong.
HlogFile read_hlog(std::istream& in);

/// Java-compatible Locale.US "%.3f" (HALF_UP applied to the shortest round-trip decimal form,
/// e.g. 1.0005 -> "1.001", where printf gives "1.000"). Precondition: finite.
std::string format_fixed3(double v);

}  // namespace llmload::analysis
