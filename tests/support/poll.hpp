// Waiting in tests for something another process does, without a fixed sleep: a loaded machine
// may take longer than any sleep, and a quiet one need not wait that long (docs/testing.md,
// "Tests on a stalled machine").
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>

#include "subprocess.hpp"

namespace llmload::testing {

/// Tries `done` every `step` until it holds or `limit` has passed; whether it held.
template <typename Done>
bool poll_until(Done done, std::chrono::milliseconds step,
                std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
  return true;
}

/// The complete lines (ending in '\n') of a file another process is writing; 0 without the file.
inline std::size_t complete_lines(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  std::size_t n = 0;
  for (char c : read_file(path)) n += c == '\n' ? 1 : 0;
  return n;
}

}  // namespace llmload::testing
