#include "llmload/analysis/structured_output.hpp"

#include <fmt/format.h>

namespace llmload::analysis {

using nlohmann::json;

std::optional<double> StructuredOutputSummary::invalid_rate() const {
  const std::int64_t n = valid + invalid;
  if (n == 0) return std::nullopt;
  return static_cast<double>(invalid) / static_cast<double>(n);
}

bool asks_for_structured_output(const RequestRecord& r) {
  return !r.warmup && r.in_window && !r.structured.empty();
}

std::optional<StructuredOutputSummary> summarize_structured_output(RecordRange records) {
  constexpr std::size_t kExamples = 5;
  StructuredOutputSummary s;
  for (const auto& r : records) {
    if (!asks_for_structured_output(r)) continue;
    ++s.requests;
    if (!r.ok() || r.structured_verdict.empty()) continue;
    ++s.judged;
    ++s.by_verdict[r.structured_verdict];
    ++s.by_kind[r.structured];
    if (!r.tool_call_names.empty()) {
      ++s.tool_call_requests;
      s.tool_calls += static_cast<std::int64_t>(r.tool_call_names.size());
    }
    if (r.structured_verdict == "valid") {
      ++s.valid;
    } else if (r.structured_verdict == "text_answer") {
      ++s.text_answers;
    } else {
      ++s.invalid;
      ++s.invalid_by_kind[r.structured];
      if (s.examples.size() < kExamples) {
        s.examples.push_back(fmt::format("request {}: {}: {}", r.index, r.structured_verdict, r.structured_error));
      }
    }
  }
  if (s.requests == 0) return std::nullopt;
  return s;
}

json structured_output_json(const std::optional<StructuredOutputSummary>& s) {
  if (!s) return nullptr;
  const auto rate = s->invalid_rate();
  json kinds = json::object();
  for (const auto& [kind, judged] : s->by_kind) {
    const auto it = s->invalid_by_kind.find(kind);
    const std::int64_t invalid = it == s->invalid_by_kind.end() ? 0 : it->second;
    kinds[kind] = {{"judged", judged}, {"invalid", invalid},
                   {"invalid_rate", static_cast<double>(invalid) / static_cast<double>(judged)}};
  }
  return {{"requests", s->requests},
          {"judged", s->judged},
          {"valid", s->valid},
          {"invalid", s->invalid},
          {"invalid_rate", rate ? json(*rate) : json(nullptr)},
          {"text_answers", s->text_answers},
          {"tool_call_requests", s->tool_call_requests},
          {"tool_calls", s->tool_calls},
          {"by_verdict", s->by_verdict},
          {"by_kind", std::move(kinds)},
          {"examples", s->examples}};
}

std::string structured_output_console(const std::optional<StructuredOutputSummary>& s) {
  if (!s) return {};
  const auto rate = s->invalid_rate();
  std::string line = fmt::format("Structured output: {} of {} judged invalid ({})", s->invalid, s->valid + s->invalid,
                                 rate ? fmt::format("{:.2f}%", 100.0 * *rate) : std::string("n/a"));
  std::string reasons;
  for (const auto& [verdict, n] : s->by_verdict) {
    if (verdict == "valid" || verdict == "text_answer") continue;
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", n, verdict);
  }
  if (!reasons.empty()) line += ": " + reasons;
  if (s->tool_call_requests > 0) line += fmt::format("; {} tool calls in {} responses", s->tool_calls, s->tool_call_requests);
  if (s->text_answers > 0) line += fmt::format("; {} answered in text (tool_choice auto)", s->text_answers);
  if (s->judged < s->requests) line += fmt::format("; {} failed requests not judged", s->requests - s->judged);
  line += "\n";
  if (!s->examples.empty()) line += "  first: " + s->examples.front() + "\n";
  return line;
}

}  // namespace llmload::analysis
