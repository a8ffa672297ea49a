#include "llmload/common/duration.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace llmload {
namespace {

struct Unit {
  std::string_view suffix;
  double ns;
};
// Longest suffixes first so "ms" is not read as "m" + "s".
constexpr Unit kUnits[] = {{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const Unit* find_unit(std::string_view text) {
  for (const auto& u : kUnits) {
    if (u.suffix.size() == 2 && ends_with(text, u.suffix)) return &u;
  }
  for (const auto& u : kUnits) {
    if (u.suffix.size() == 1 && ends_with(text, u.suffix)) return &u;
  }
  return nullptr;
}

}  // namespace

bool has_duration_unit(std::string_view text) { return find_unit(text) != nullptr; }

std::chrono::nanoseconds parse_duration(std::string_view text, std::string_view bare_unit) {
  auto fail = [&] {
    return DurationParseError(fmt::format(
        "invalid duration '{}': expected a non-negative number with a unit (ns, us, ms, s, m, h), e.g. 50ms or 2s",
        text));
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) throw fail();
  const Unit* unit = find_unit(s);
  double scale = 0;
  if (unit != nullptr) {
    s.remove_suffix(unit->suffix.size());
    scale = unit->ns;
  } else {
    const Unit* bare = bare_unit.empty() ? nullptr : find_unit(bare_unit);
    if (bare == nullptr) {
      double number = 0;
      auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), number);
      if (err == std::errc() && end == s.data() + s.size() && number == 0) return std::chrono::nanoseconds(0);
      if (err == std::errc() && end == s.data() + s.size()) {
        throw DurationParseError(fmt::format("invalid duration '{}': a duration needs its unit (ns, us, ms, s, m, h): "
                                             "add it, e.g. {}s",
                                             text, s));
      }
      throw fail();
    }
    scale = bare->ns;
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(value) || value < 0) throw fail();
  const double ns = value * scale;
  if (ns > 9.2e18) throw fail();
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
}

std::string format_duration(std::chrono::nanoseconds d) {
  const double ns = static_cast<double>(d.count());
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{}ns", d.count());
  if (a < 1e6) return fmt::format("{:.1f}us", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.1f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

}  // namespace llmload
