// The graded datasets' shared pieces (graded.hpp): grader names, GSM8K answers, MMLU prompts.

#include "llmload/loadgen/workload/graded.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "llmload/analysis/grading.hpp"
#include "text_util.hpp"

namespace llmload {

std::string grader_problem(std::string_view grader) {
  // The graders' own parser (analysis/grading.hpp): a row is accepted exactly when it can be graded.
  try {
    analysis::GraderSpec::parse(grader);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

std::optional<std::string> gsm8k_reference(std::string_view answer) {
  const auto mark = answer.rfind("####");
  if (mark == std::string_view::npos) return std::nullopt;
  std::string number;
  for (const char c : workload_detail::trim(answer.substr(mark + 4))) {
    if (c != ',') number += c;
  }
  if (!workload_detail::parse_double(number)) return std::nullopt;
  return number;
}

std::string gsm8k_prompt(std::string_view question) { return fmt::format("Question: {}\nAnswer:", question); }

std::string mmlu_subject(std::string_view file_name) {
  std::string_view stem = file_name;
  if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".csv") stem.remove_suffix(4);
  for (const std::string_view split : {"_test", "_val", "_dev"}) {
    if (stem.size() > split.size() && stem.substr(stem.size() - split.size()) == split) {
      stem.remove_suffix(split.size());
      break;
    }
  }
  return std::string(stem);
}

std::string mmlu_prompt(std::string_view subject, std::string_view question,
                        const std::array<std::string, 4>& options) {
  std::string topic(subject);
  for (char& c : topic) {
    if (c == '_') c = ' ';
  }
  return fmt::format("The following is a multiple choice question about {}.\n\n{}\nA. {}\nB. {}\nC. {}\nD. {}\nAnswer:",
                     topic, workload_detail::trim(question), options[0], options[1], options[2], options[3]);
}

}  // namespace llmload
