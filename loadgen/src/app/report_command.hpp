#pragma once
// `llmload report DIR [--output DIR] [--interval S]`: writes report.html (self-contained, offline),
// summary.md and summary.csv for a run's output directory or a sweep's (docs/report.md). The
// rendering is analysis::write_report, which `run` and sweeps can also call at their end.

#include <string>

#include <CLI/CLI.hpp>

namespace llmload::app {

/// The parsed options of `report`. CLI11 keeps pointers into it: it must stay where it was created.
struct ReportOptions {
  std::string dir;         ///< the artifact directory (positional)
  std::string output;      ///< where the report goes; empty: `dir`
  double interval_s = 0;   ///< time-series interval in seconds; 0: chosen from the run's length
};

/// Adds DIR, --output and --interval, and the help footer, to the `report` subcommand.
void add_report_options(CLI::App& sub, ReportOptions& o);

/// Writes the report of `dir`; prints where it went and any notes (partial artifacts). Returns the
/// exit code: 0 written; 2 the artifact cannot be read (missing or corrupt files: the message names
/// the file and what is wrong); 1 an output file could not be written.
int report_command(const std::string& dir, const ReportOptions& o);

}  // namespace llmload::app
