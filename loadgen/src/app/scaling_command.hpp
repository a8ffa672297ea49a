#pragma once
// `llmload scaling DIR...`: speedup S(K) and efficiency E(K) at the same SLO from artifacts at
// K = 1, 2, 4, ... replicas or devices, with cost per 1M output tokens and energy per output
// token (analysis/scaling_report.hpp; docs/scaling.md).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace llmload::app {

/// The parsed options of `scaling`. CLI11 keeps pointers into it: it must stay where it was created.
struct ScalingOptions {
  std::vector<std::string> dirs;  // run, trials or sweep artifacts (directories, or their result.json / sweep.json)
  std::string k;                  // "1,2,4": K per directory, in order (default: conditions.devices)
  std::string kind = "strong";    // strong | weak
  std::string metric = "auto";    // auto | goodput | request_throughput | output_throughput
  std::string price_per_hour;     // per device, e.g. "2.5" (default: the artifacts' conditions.price_per_hour)
  std::string json;               // also write the table as JSON here
  bool allow_different_conditions = false;
};

/// Adds the positional directories, the options and the help footer to the `scaling` subcommand.
void add_scaling_options(CLI::App& sub, ScalingOptions& o);

/// Prints the scaling table. Returns the exit code: 0 computed, 1 the JSON could not be written,
/// 2 an artifact cannot be read, the conditions differ (without --allow-different-conditions), or
/// bad K / options (the reason on stderr).
int scaling_command(const ScalingOptions& o);

}  // namespace llmload::app
