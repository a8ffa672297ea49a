#pragma once
#include <stdexcept>

namespace llmload {

/// Bad configuration (flags, scenario file, endpoint probe): thrown once at start-up with a
/// message that names the field and the fix. The CLI prints it and exits non-zero.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace llmload
