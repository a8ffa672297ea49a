#pragma once
// Helpers for the workload tests: files in a temp dir, word splitting, ConfigError capture.

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/loadgen/config_error.hpp"

namespace llmload::wltest {

inline void write_text(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

/// The space-separated words of a synthesized prompt (single spaces, no leading/trailing space).
inline std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto sp = text.find(' ', pos);
    const auto end = sp == std::string_view::npos ? text.size() : sp;
    words.emplace_back(text.substr(pos, end - pos));
    if (sp == std::string_view::npos) break;
    pos = sp + 1;
  }
  return words;
}

/// The message of the ConfigError that fn throws; a test failure (and "") when it throws none.
template <typename Fn>
std::string config_error(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return {};
}

}  // namespace llmload::wltest
