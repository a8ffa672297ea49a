#include "text_util.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload::workload_detail {

std::string read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format("cannot read {} file \"{}\": {}", what, path, std::strerror(errno)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw ConfigError(fmt::format("cannot read {} file \"{}\": read error", what, path));
  return std::move(buf).str();
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(kSpace);
  return s.substr(first, last - first + 1);
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

double to_seconds(std::int64_t nanos) { return static_cast<double>(nanos) * 1e-9; }

nlohmann::json parse_json_line(std::string_view text, const std::string& where) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;  // the keys of each object being read, innermost last
  std::optional<std::string> twice;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() && !twice &&
               !keys.back().insert(parsed.get<std::string>()).second) {
      twice = parsed.get<std::string>();
    }
    return true;
  };
  json j = json::parse(text, check, /*allow_exceptions=*/false);
  if (twice && !j.is_discarded()) {
    throw ConfigError(fmt::format("{}: key \"{}\" is given twice in one object: keep one", where, *twice));
  }
  return j;
}

}  // namespace llmload::workload_detail
