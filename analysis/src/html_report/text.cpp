// JSON access (find_path, num_at, ...), escaping for HTML, CSV and Markdown, and number formatting.
#include "html_report/internal.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis::report_html {

// ---------------------------------------------------------------------------------------------
// JSON access

const json* find_path(const json& j, std::initializer_list<std::string_view> path) {
  const json* cur = &j;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(std::string(key));
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::optional<double> num_at(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = find_path(j, path);
  if (p != nullptr && p->is_number()) return p->get<double>();
  return std::nullopt;
}

double nan_at(const json& j, std::initializer_list<std::string_view> path) { return num_at(j, path).value_or(kNaN); }

/// A boolean member; `def` when absent or not a boolean (a hand-edited artifact never throws).
bool flag(const json& j, const char* key, bool def) {
  if (!j.is_object()) return def;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}

std::string str_at(const json& j, std::initializer_list<std::string_view> path) {
  const json* p = find_path(j, path);
  if (p != nullptr && p->is_string()) return p->get<std::string>();
  return {};
}

/// A scalar JSON value as text ("" for null, objects and arrays).
std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return {};
}

// ---------------------------------------------------------------------------------------------
// Text

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

/// Markdown table cell: pipes escaped, line breaks removed.
std::string md_cell(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '|') {
      o += "\\|";
    } else if (c == '\n' || c == '\r') {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o;
}

/// Exact (round-trip) number for the CSV; empty when unknown.
std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); }

std::string shell_join(const json& argv) {
  if (!argv.is_array()) return scalar_text(argv);
  std::string o;
  for (const auto& a : argv) {
    std::string s = scalar_text(a);
    if (!o.empty()) o += ' ';
    if (s.empty() || s.find_first_of(" \t\"'$`\\*?;&|<>(){}") != std::string::npos) {
      std::string q = "'";
      for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      o += q + "'";
    } else {
      o += s;
    }
  }
  return o;
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "–";
  return fmt::format("{:.1f}%", fraction * 100);
}

/// A signed percentage ("+3.2%", "-12.0%").
std::string signed_percent(double fraction) {
  if (!std::isfinite(fraction)) return "–";
  return fmt::format("{:+.1f}%", fraction * 100);
}

}  // namespace llmload::analysis::report_html

namespace llmload::analysis {

using namespace report_html;

std::string format_number(double v) {
  if (std::isnan(v)) return "–";
  if (std::isinf(v)) return v > 0 ? "∞" : "−∞";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  std::string s;
  if (a >= 100 || (v == std::round(v) && a < 1e15)) {
    s = fmt::format("{:.0f}", v);
  } else if (a >= 10) {
    s = fmt::format("{:.1f}", v);
  } else if (a >= 1) {
    s = fmt::format("{:.2f}", v);
  } else if (a >= 0.001) {
    s = fmt::format("{:.3f}", v);
  } else {
    s = fmt::format("{:.2g}", v);
  }
  if (a >= 10000) {
    // Digits only here (a >= 100 is formatted without decimals). Built anew rather than with
    // std::string::insert, which GCC 12 flags with a false -Wrestrict once inlined here.
    const std::size_t start = s[0] == '-' ? 1 : 0;
    const std::size_t digits = s.size() - start;
    std::string grouped = s.substr(0, start);
    for (std::size_t k = 0; k < digits; ++k) {
      if (k > 0 && (digits - k) % 3 == 0) grouped += ',';
      grouped += s[start + k];
    }
    s = std::move(grouped);
  }
  return s;
}

}  // namespace llmload::analysis
