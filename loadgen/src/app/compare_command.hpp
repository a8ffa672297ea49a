#pragma once
// `llmload compare A B [--json FILE] [--min-effect PCT]`: B against A (analysis/run_compare.hpp).
// A and B are both runs (a run or trials directory, or its result.json) or both sweeps (a
// directory holding sweep.json).

#include <string>

namespace llmload::app {

struct CompareCommandOptions {
  std::string a;
  std::string b;
  std::string json_out;       // also write the comparison as JSON here, when not empty
  std::string min_effect = "5%";  // the smallest change that counts: a percentage, "%" optional
};

/// "5", "5%", "2.5%" -> 0.05, 0.05, 0.025. std::nullopt-like failure: throws std::invalid_argument
/// for anything but a finite percentage in [0, 100).
double parse_min_effect(const std::string& text);

/// Prints the comparison; writes it as JSON to `json_out` when not empty. Returns the exit code:
/// 0 compared (whatever the differences), 1 when the JSON could not be written, 2 when an
/// artifact cannot be read, a sweep is compared with a run, or --min-effect is not a percentage
/// (the reason, naming the file, on stderr).
int compare_command(const CompareCommandOptions& options);

}  // namespace llmload::app
