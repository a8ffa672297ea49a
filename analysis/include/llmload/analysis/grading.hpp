#pragma once
// Graders (issue 18): judge a generated text against a dataset row's reference answer. Pure
// functions; the rules, with examples of accepted and rejected answers, are in docs/metrics.md
// ("Accuracy").

#include <string>
#include <string_view>

#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// A grader as written in a dataset row or on the command line (`--grader`):
///   "exact"              the whole output, trimmed of surrounding whitespace, equals the reference
///   "normalized"         equal after case folding (ASCII), collapsing whitespace, and trimming
///                        surrounding punctuation and a trailing period
///   "regex:PATTERN"      the first match of PATTERN (ECMAScript) in the output, its first capture
///                        group if it has one, compared normalized to the reference
///   "choice"             a multiple-choice letter (A-J) extracted from the output ("Answer: B",
///                        "(B)", "B.", "The answer is B") compared to the reference letter
///   "number" / "number:TOL"  GSM8K style: the number after "####", else after "answer is", else
///                        the last number in the output; commas, "$" and a trailing "." dropped;
///                        equal to the reference's number (the reference may itself be a GSM8K
///                        answer: its number after "####" is used) within TOL (absolute; default 0
///                        with a relative 1e-9 allowance)
///   "json"               the output (or its first ```json fenced block) parses as JSON and, when
///                        the reference is a JSON Schema (a JSON object), validates against it
///                        (the subset of JSON Schema documented in docs/metrics.md)
struct GraderSpec {
  std::string kind;     // exact | normalized | regex | choice | number | json
  std::string pattern;  // regex
  double tolerance = 0.0;  // number

  /// Parses a grader as written above; throws std::invalid_argument naming what is wrong and the
  /// accepted forms (an unknown name, a regex that does not compile, a bad tolerance).
  static GraderSpec parse(std::string_view text);
  /// The grader as written (parse(name()) == *this).
  std::string name() const;
};

struct GradeResult {
  Grade grade = Grade::kNone;
  std::string extracted;  // what was extracted from the output ("" when unparsed)
  std::string detail;     // for json: why the schema rejected it; else ""
};

/// Grades `output` against `reference` (never kNone).
GradeResult grade_output(const GraderSpec& grader, std::string_view output, std::string_view reference);

}  // namespace llmload::analysis
