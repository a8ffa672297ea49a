#pragma once
// A test's own directory under the system's temporary directory, removed when the test ends
// however it ends; while it lives, $TMPDIR may be pointed somewhere (set_tmpdir) and is put back.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace llmload::test_support {

class TestTempDir {
 public:
  explicit TestTempDir(const std::string& tag) {
    if (const char* t = std::getenv("TMPDIR"); t != nullptr) saved_ = t;
    const auto made = std::filesystem::temp_directory_path() / (tag + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(made);
    path_ = std::filesystem::canonical(made);  // as /proc/self/fd shows it (no symlink, no "..")
  }
  ~TestTempDir() {
    if (saved_) {
      ::setenv("TMPDIR", saved_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TestTempDir(const TestTempDir&) = delete;
  TestTempDir& operator=(const TestTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  /// $TMPDIR = `value` until this object ends (single-threaded tests only: setenv).
  void set_tmpdir(const std::string& value) const { ::setenv("TMPDIR", value.c_str(), 1); }

 private:
  std::optional<std::string> saved_;
  std::filesystem::path path_;
};

}  // namespace llmload::test_support
