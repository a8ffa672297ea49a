// The "gsm8k" dataset: GSM8K's JSONL as published ({"question", "answer"} per line, the answer
// ending in "#### <number>"), graded by the number grader.

#include <fmt/format.h>

#include "list_workload.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/workload/graded.hpp"
#include "llmload/loadgen/workload/sources.hpp"
#include "text_util.hpp"

namespace llmload {

namespace {

constexpr std::string_view kGsm8kForm =
    "each line must be one JSON object like {\"question\": \"...\", \"answer\": \"... #### 42\"} (GSM8K as "
    "published: the answer ends in \"#### <number>\")";

struct Gsm8kRow {
  std::string question;
  std::string reference;
};

// The last `n` bytes of `s` as a JSON string (for an error message; a cut UTF-8 sequence replaced).
std::string gsm8k_tail(std::string_view s, std::size_t n) {
  const std::string_view tail = s.size() > n ? s.substr(s.size() - n) : s;
  return fmt::format("{}{}", s.size() > n ? "..." : "",
                     nlohmann::json(std::string(tail)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Gsm8kRow parse_gsm8k_line(std::string_view text, const std::string& where) {
  const nlohmann::json j = workload_detail::parse_json_line(text, where);
  if (j.is_discarded() || !j.is_object()) {
    throw ConfigError(fmt::format("{}: not a JSON object; {}", where, kGsm8kForm));
  }
  Gsm8kRow row;
  const auto question = j.find("question");
  if (question == j.end() || !question->is_string() || question->get_ref<const std::string&>().empty()) {
    throw ConfigError(fmt::format("{}: \"question\" is missing or not a non-empty string; {}", where, kGsm8kForm));
  }
  row.question = question->get<std::string>();
  const auto answer = j.find("answer");
  if (answer == j.end() || !answer->is_string()) {
    throw ConfigError(fmt::format("{}: \"answer\" is missing or not a string; {}", where, kGsm8kForm));
  }
  const std::string& text_answer = answer->get_ref<const std::string&>();
  auto reference = gsm8k_reference(text_answer);
  if (!reference) {
    throw ConfigError(fmt::format("{}: \"answer\" does not end in \"#### <number>\" (it ends {}); {}", where,
                                  gsm8k_tail(text_answer, 40), kGsm8kForm));
  }
  row.reference = std::move(*reference);
  return row;
}

nlohmann::json describe_gsm8k(const std::string& path, std::int64_t rows, const std::vector<WorkItem>& items,
                               std::optional<std::uint64_t> max_items, std::int64_t output_tokens,
                               const TokenModel& tokens) {
  std::int64_t in_total = 0;
  for (const auto& w : items) in_total += w.input_tokens;
  nlohmann::json d;
  d["dataset"] = "gsm8k";
  d["path"] = path;
  d["rows"] = rows;
  d["requests"] = items.size();
  d["max_items"] = max_items ? nlohmann::json(*max_items) : nlohmann::json(nullptr);
  d["order"] = "file order";
  d["prompt_template"] = "Question: {question}\nAnswer:";
  d["reference"] = "the number after \"####\" in \"answer\", commas removed";
  d["grader"] = "number";
  d["input_tokens_total"] = in_total;
  d["output_tokens_total"] = output_tokens * static_cast<std::int64_t>(items.size());
  d["lengths_estimated"] = true;
  d["token_estimate"] = fmt::format("prompt: ceil(UTF-8 bytes / 4) plus the token model's overhead ({}); output: "
                                    "the default output length {}", tokens.overhead, output_tokens);
  return d;
}

}  // namespace

std::unique_ptr<Workload> make_gsm8k_workload(const WorkloadConfig& cfg, std::int64_t output_tokens,
                                              std::optional<std::uint64_t> max_items, const TokenModel& tokens) {
  const std::string& path = cfg.dataset_path;
  if (path.empty()) {
    throw ConfigError("dataset gsm8k needs a file: set --dataset-path (dataset_path) to a GSM8K JSONL file");
  }
  if (output_tokens < 1) {
    throw ConfigError(fmt::format("dataset gsm8k asks for the default output length, {}: set --output-tokens to at "
                                  "least 1 (room for the reasoning and the \"#### <number>\" line)", output_tokens));
  }
  const std::string content = workload_detail::read_text_file(path, "GSM8K dataset");
  std::vector<WorkItem> items;
  std::int64_t rows = 0;
  workload_detail::for_each_line(content, [&](std::int64_t no, std::string_view line) {
    if (workload_detail::trim(line).empty()) return true;
    Gsm8kRow row = parse_gsm8k_line(line, fmt::format("{}:{}", path, no));
    ++rows;
    // Rows past max_items are still validated: a bad file fails at start-up, whatever the limit.
    if (max_items && items.size() >= *max_items) return true;
    WorkItem w;
    w.prompt = gsm8k_prompt(row.question);
    w.input_tokens = tokens.overhead + estimate_text_tokens(w.prompt);
    w.output_tokens = output_tokens;
    w.reference = std::move(row.reference);
    w.grader = "number";
    items.push_back(std::move(w));
    return true;
  });
  if (items.empty()) {
    throw ConfigError(fmt::format("GSM8K dataset \"{}\" has no questions{}; {}", path,
                                  max_items && *max_items == 0 ? " (the request limit is 0)" : "", kGsm8kForm));
  }
  nlohmann::json d = describe_gsm8k(path, rows, items, max_items, output_tokens, tokens);
  return std::make_unique<workload_detail::ListWorkload>(std::move(items), std::move(d));
}

}  // namespace llmload
