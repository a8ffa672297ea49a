// How a command-line parse error is said: "llmload: error: ..." like every other error, and an
// unknown option with the nearest one the command has ("did you mean ...?").
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace llmload::app {

/// The option among `known` (long names, without "--") nearest to `typed` ("--concurency"), when
/// it is near enough to be a typing slip: "--concurrency"; else "".
std::string nearest_option(const std::string& typed, const std::vector<std::string>& known);

/// CLI11's failure message for `app` (set on the top-level app before its subcommands are added,
/// which inherit it): the error prefixed as llmload's errors are, and for arguments that were not
/// expected, each unknown option named with the nearest known one.
std::string parse_error_message(const CLI::App* app, const CLI::Error& e);

}  // namespace llmload::app
