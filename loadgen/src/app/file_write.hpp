#pragma once
// Writing results: whole files at once, atomically (a temporary file, then rename), with the
// operating system's own reason when it fails ("No space left on device", "Read-only file
// system", "Permission denied"), never a guess.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace llmload::app {

/// Writes `content` to `path` through `path`.tmp and a rename: a reader sees the old file or the
/// whole new one, never a part. Returns the reason on failure (the temporary file is removed).
std::optional<std::string> write_file_atomically(const std::filesystem::path& path, std::string_view content);

/// Writes `content` to `path` in place (a probe of a directory: no temporary, no rename).
/// Returns the reason on failure.
std::optional<std::string> write_file(const std::filesystem::path& path, std::string_view content);

/// The OS reason for errno `err`, with the fix for the common ones: e.g. "No space left on device
/// (free some space, or choose another --output)".
std::string write_failure_reason(int err);

}  // namespace llmload::app
