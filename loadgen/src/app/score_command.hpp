#pragma once
// `llmload score DIR [--grader SPEC] [--output FILE]`: re-grades a run saved with --save-outputs
// (requests.jsonl keeps each answer and its reference), e.g. with another grader, and writes the
// accuracy section to DIR/score.json (docs/metrics.md, "Accuracy").

#include <string>

#include <CLI/CLI.hpp>

namespace llmload::app {

struct ScoreOptions {
  std::string dir;     ///< the run's output directory (positional)
  std::string grader;  ///< empty: each request's own grader
  std::string output;  ///< empty: DIR/score.json
};

void add_score_options(CLI::App& sub, ScoreOptions& o);

/// Returns the exit code: 0 scored; 2 the run cannot be read, has no saved outputs, or a bad
/// --grader; 1 the output could not be written.
int score_command(const ScoreOptions& o);

}  // namespace llmload::app
