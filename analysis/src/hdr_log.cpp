#include "llmload/analysis/hdr_log.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <istream>
#include <ostream>
#include <stdexcept>

namespace llmload::analysis {
namespace {

constexpr double kSecondsPerYear = 365.0 * 24 * 3600;

void require_finite(double v, const char* what) {
  if (!std::isfinite(v)) throw std::invalid_argument(std::string("HlogWriter: ") + what + " must be finite");
}

// Java's Date.toString() layout ("EEE MMM dd HH:mm:ss zzz yyyy"), in UTC.
std::string java_date_utc(double sec_since_epoch) {
  // Beyond this (about 30 million years) the cast to time_t could overflow (undefined) and
  // gmtime_r's year would not fit an int anyway.
  if (!(std::fabs(sec_since_epoch) < 1e15)) return "unknown date";
  const auto t = static_cast<std::time_t>(std::floor(sec_since_epoch));
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "unknown date";
  static constexpr std::array<const char*, 7> kDays{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<const char*, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%s %s %02d %02d:%02d:%02d UTC %d", kDays[static_cast<std::size_t>(tm.tm_wday)],
                kMonths[static_cast<std::size_t>(tm.tm_mon)], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                tm.tm_year + 1900);
  return buf.data();
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Whole-field, locale-independent, finite double; throws HdrCodecError naming the field.
double parse_number(std::string_view field, const char* name) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc{} || ptr != field.data() + field.size() || !std::isfinite(v)) {
    throw HdrCodecError(std::string(name) + " '" + std::string(field) + "' is not a finite number");
  }
  return v;
}

// "#[StartTime: 1700000000.000 (seconds ...)]": the token after the prefix, up to ' ' or ']'.
double parse_comment_time(std::string_view line, std::string_view prefix, const char* name) {
  std::string_view rest = line.substr(prefix.size());
  rest = rest.substr(0, rest.find_first_of(" ]"));
  return parse_number(rest, name);
}

}  // namespace

std::string format_fixed3(double v) {
  std::array<char, 512> buf{};  // the longest shortest-fixed double (denormals) is ~330 chars
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed);
  std::string s(buf.data(), res.ptr);
  std::string sign;
  if (!s.empty() && s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  std::size_t dot = s.find('.');
  if (dot == std::string::npos) {
    dot = s.size();
    s += '.';
  }
  const std::size_t frac = s.size() - dot - 1;
  if (frac <= 3) return sign + s + std::string(3 - frac, '0');
  const bool round_up = s[dot + 4] >= '5';  // HALF_UP on the first dropped digit, as Java
  s.resize(dot + 4);
  if (round_up) {
    std::size_t i = s.size();
    while (i > 0) {
      --i;
      if (s[i] == '.') continue;
      if (s[i] != '9') {
        ++s[i];
        break;
      }
      s[i] = '0';
      if (i == 0) s.insert(s.begin(), '1');
    }
  }
  return sign + s;
}

HlogWriter::HlogWriter(std::ostream& out) : out_(out) {}

void HlogWriter::write_header(std::string_view tool, double start_time_sec_since_epoch) {
  if (tool.find_first_of("\r\n") != std::string_view::npos) {
    throw std::invalid_argument("HlogWriter: tool name must not contain a line break");
  }
  require_finite(start_time_sec_since_epoch, "start time");
  out_ << "#[Logged with " << tool << "]\n"
       << "#[Histogram log format version 1.3]\n"
       << "#[StartTime: " << format_fixed3(start_time_sec_since_epoch) << " (seconds since epoch), "
       << java_date_utc(start_time_sec_since_epoch) << "]\n";
}

void HlogWriter::write_base_time(double sec) {
  require_finite(sec, "base time");
  out_ << "#[BaseTime: " << format_fixed3(sec) << " (seconds since epoch)]\n";
}

void HlogWriter::write_legend() {
  out_ << "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";
}

void HlogWriter::write_interval(const HdrHistogram& histogram, double start_sec, double length_sec,
                                std::optional<std::string_view> tag, double max_value_unit_ratio) {
  if (tag && (tag->empty() || tag->find_first_of(", \r\n") != std::string_view::npos)) {
    throw std::invalid_argument("HlogWriter: tag '" + std::string(*tag) +
                                "' must be non-empty without commas, spaces or line breaks");
  }
  require_finite(start_sec, "interval start");
  require_finite(length_sec, "interval length");
  if (!std::isfinite(max_value_unit_ratio) || max_value_unit_ratio <= 0) {
    throw std::invalid_argument("HlogWriter: max_value_unit_ratio must be finite and > 0");
  }
  std::string line;
  if (tag) line += "Tag=" + std::string(*tag) + ",";
  line += format_fixed3(start_sec) + "," + format_fixed3(length_sec) + "," +
          format_fixed3(static_cast<double>(histogram.max()) / max_value_unit_ratio) + "," + encode_base64(histogram) +
          "\n";
  out_ << line;
}

HlogFile read_hlog(std::istream& in) {
  static constexpr std::string_view kStartTime = "#[StartTime: ";
  static constexpr std::string_view kBaseTime = "#[BaseTime: ";
  HlogFile file;
  std::optional<double> base;  // base time in effect for interval timestamps
  std::string raw;
  std::size_t line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    try {
      if (line[0] == '#') {
        if (starts_with(line, kStartTime)) {
          file.start_time_sec = parse_comment_time(line, kStartTime, "StartTime");
        } else if (starts_with(line, kBaseTime)) {
          file.base_time_sec = parse_comment_time(line, kBaseTime, "BaseTime");
          base = file.base_time_sec;
        }
        continue;
      }
      if (starts_with(line, "\"StartTimestamp\"")) continue;

      HlogInterval interval;
      if (starts_with(line, "Tag=")) {
        const std::size_t comma = line.find(',');
        if (comma == std::string_view::npos) throw HdrCodecError("tag without interval fields");
        interval.tag = std::string(line.substr(4, comma - 4));
        line.remove_prefix(comma + 1);
      }
      std::array<std::string_view, 4> fields;
      std::size_t n = 0;
      for (std::size_t pos = 0;; ++n) {
        const std::size_t comma = line.find(',', pos);
        if (n < fields.size()) fields[n] = line.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
      }
      if (++n != fields.size()) {
        throw HdrCodecError("expected 4 comma-separated fields ([Tag=<tag>,]start,length,max,histogram), got " +
                            std::to_string(n));
      }
      interval.start_sec = parse_number(fields[0], "start timestamp");
      interval.length_sec = parse_number(fields[1], "interval length");
      interval.max = parse_number(fields[2], "interval max");
      try {
        interval.histogram = decode_base64(fields[3]);
      } catch (const HdrCodecError& e) {
        throw HdrCodecError(std::string("histogram: ") + e.what());
      }
      if (!base) {  // Java's rule: relative timestamps when more than a year before StartTime
        const double start = file.start_time_sec.value_or(interval.start_sec);
        base = interval.start_sec < start - kSecondsPerYear ? start : 0.0;
      }
      interval.histogram.start_time_ms = (*base + interval.start_sec) * 1000.0;
      interval.histogram.end_time_ms = (*base + interval.start_sec + interval.length_sec) * 1000.0;
      file.intervals.push_back(std::move(interval));
    } catch (const HdrCodecError& e) {
      throw HdrCodecError("hlog line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  if (in.bad()) throw HdrCodecError("hlog: read error after line " + std::to_string(line_no));
  return file;
}

}  // namespace llmload::analysis
