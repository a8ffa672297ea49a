#pragma once
// `llmload compare A B [--json FILE]`: B against A (analysis/run_compare.hpp). A and B are run
// directories (result.json, latency.hlog) or result.json files.

#include <string>

namespace llmload::app {

/// Prints the comparison; writes it as JSON to `json_out` when not empty. Returns the exit code:
/// 0 compared (whatever the differences), 1 when the JSON could not be written, 2 when an
/// artifact cannot be read (the reason, naming the file, on stderr).
int compare_command(const std::string& a, const std::string& b, const std::string& json_out);

}  // namespace llmload::app
