#pragma once
// The llmload-server command line (CLI11). Parsing is a pure function of the arguments so it is
// unit-testable; main() prints the captured output and exits with the returned code.

#include <optional>
#include <string>
#include <vector>

#include "llmload/server/server_config.hpp"

namespace llmload::server {

struct CliOutcome {
  std::optional<ServerConfig> config;  ///< set when the server should run
  int exit_code = 0;                   ///< when config is empty: 0 for --help/--version, else an error
  std::string out;                     ///< text for stdout (help, version)
  std::string err;                     ///< text for stderr (errors name the flag and the fix)
};

/// `args` excludes the program name.
CliOutcome parse_command_line(const std::vector<std::string>& args);

}  // namespace llmload::server
