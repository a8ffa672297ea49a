#pragma once
// The pieces of the graded datasets (issue 18: GSM8K, MMLU, custom JSONL rows with a reference),
// exposed for tests and tools: grader names as written in a row, the GSM8K answer's number, the
// MMLU subject and prompt. The factories are in sources.hpp.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace llmload {

/// The graders a row may name (analysis/grading.hpp judges with them), as written.
inline constexpr std::string_view kGraderForms =
    "exact, normalized, regex:PATTERN, choice, number, number:TOL or json";

/// "" when `grader` is one of kGraderForms as analysis::GraderSpec::parse accepts it (a
/// regex:PATTERN whose pattern compiles as an ECMAScript regular expression; a number:TOL whose TOL
/// is a finite number >= 0), else its message: what is wrong, naming the accepted forms.
std::string grader_problem(std::string_view grader);

/// GSM8K: the number after the last "####" of an answer, trimmed, commas removed ("#### 1,234" ->
/// "1234"); nullopt when there is no "####" or what follows is not a number.
std::optional<std::string> gsm8k_reference(std::string_view answer);

/// GSM8K's prompt (lm-eval's zero-shot form): "Question: {question}\nAnswer:".
std::string gsm8k_prompt(std::string_view question);

/// The subject of an MMLU file: its name without ".csv" and a "_test" (or "_val", "_dev") suffix
/// ("high_school_physics_test.csv" -> "high_school_physics").
std::string mmlu_subject(std::string_view file_name);

/// MMLU's zero-shot prompt (lm-eval's, worded for one question): "The following is a multiple
/// choice question about {subject, '_' as spaces}.\n\n{question, trimmed}\nA. {A}\nB. {B}\nC.
/// {C}\nD. {D}\nAnswer:".
std::string mmlu_prompt(std::string_view subject, std::string_view question,
                        const std::array<std::string, 4>& options);

}  // namespace llmload
