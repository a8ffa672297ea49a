#pragma once
// An environment variable set for a test's scope and put back (or removed) when the scope ends,
// however it ends. setenv is not thread-safe: only where no other thread reads the environment.

#include <cstdlib>
#include <optional>
#include <string>

namespace llmload::testing {

class ScopedEnv {
 public:
  explicit ScopedEnv(std::string name) : name_(std::move(name)) {
    if (const char* v = std::getenv(name_.c_str()); v != nullptr) saved_ = v;
  }
  ScopedEnv(std::string name, const std::string& value) : ScopedEnv(std::move(name)) { set(value); }
  ~ScopedEnv() {
    if (saved_) {
      ::setenv(name_.c_str(), saved_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const std::string& value) const { ::setenv(name_.c_str(), value.c_str(), 1); }

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

}  // namespace llmload::testing
