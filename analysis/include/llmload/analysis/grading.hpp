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
///                        surrounding punctuation (.,;:!?"'`()[]{}*_) and a trailing period
///   "regex:PATTERN"      the first match of PATTERN (ECMAScript) in the output, its first capture
///                        group if it has one (and it took part), compared normalized to the
///                        reference; outputs over 4 KiB are searched in 4 KiB windows (a match must
///                        fit in 2 KiB: libstdc++'s matcher would overflow the stack)
///   "choice"             a multiple-choice letter (A-J) extracted from the output: after the last
///                        answer marker ("Answer: B", "the answer is (B)", "The correct option is
///                        B", "\boxed{B}", "B is correct"); else the output is one letter ("B",
///                        "(b)", "**B.**"); else the one letter its forms "(B)", "**B**",
///                        "option B", "B." opening a line, a capital closing the text agree on
///                        (several different letters: unparsed); compared to the reference letter
///   "number" / "number:TOL"  GSM8K style: the number after the first "####", else after the last
///                        "answer" marker ("answer is", "Answer:") or "\boxed{", else the last
///                        number in the output; thousands commas, "$" and a trailing "." dropped,
///                        "-" and U+2212 signs kept; equal to the reference's number (extracted
///                        the same way, so a GSM8K answer's "#### N" is used) within TOL (absolute;
///                        default 0) plus a relative 1e-9 allowance
///   "json"               the output (or its first ```json fenced block, else its first bare ```
///                        block) parses as JSON and, when the reference is a JSON Schema (a JSON
///                        object or boolean), validates against it (the subset of JSON Schema in
///                        docs/metrics.md; an empty reference: parsing alone)
/// Unparsed: nothing could be extracted (an empty output, no letter, no number, no JSON).
/// Incorrect: extracted and wrong, or the reference unusable (no letter or number in it, not a
/// schema), with the reason in GradeResult::detail.
struct GraderSpec {
  std::string kind;     // exact | normalized | regex | choice | number | json
  std::string pattern;  // regex
  double tolerance = 0.0;  // number

  /// Parses a grader as written above; throws std::invalid_argument naming what is wrong and the
  /// accepted forms (an unknown name, a regex that does not compile, a bad tolerance).
  static GraderSpec parse(std::string_view text);
  /// The grader as written (parse(name()) == *this).
  std::string name() const;

  bool operator==(const GraderSpec&) const = default;
};

struct GradeResult {
  Grade grade = Grade::kNone;
  std::string extracted;  // what was extracted from the output ("" when unparsed)
  std::string detail;     // why not correct, where the extracted answer does not say it: what was
                          // missing (unparsed), the path and rule a schema rejected the JSON by,
                          // an unusable reference; else ""
};

/// Grades `output` against `reference` (never kNone).
GradeResult grade_output(const GraderSpec& grader, std::string_view output, std::string_view reference);

}  // namespace llmload::analysis
