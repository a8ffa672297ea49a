#include "llmload/analysis/reasoning_metrics.hpp"

#include <fmt/format.h>

namespace llmload::analysis {

std::optional<double> ReasoningSummary::share() const {
  if (output_tokens <= 0) return std::nullopt;
  return static_cast<double>(reasoning_tokens) / static_cast<double>(output_tokens);
}

bool reports_reasoning(const RequestRecord& r) {
  return !r.warmup && r.in_window && r.ok() && !r.reasoning_tokens_source.empty();
}

std::optional<ReasoningSummary> summarize_reasoning(RecordRange records) {
  ReasoningSummary s;
  Distribution duration;
  Distribution answer_tpot;
  for (const auto& r : records) {
    if (r.warmup || !r.in_window || !r.ok()) continue;
    s.output_tokens += r.output_tokens;
    answer_tpot.add(r.answer_tpot());
    if (r.reasoning_first()) ++s.reasoning_first;
    if (!reports_reasoning(r)) continue;
    ++s.requests;
    ++s.sources[r.reasoning_tokens_source];
    s.reasoning_tokens += r.reasoning_tokens;
    if (r.t_first && !r.t_first_output) ++s.reasoning_only;
    duration.add(r.reasoning_duration());
  }
  if (s.requests == 0) return std::nullopt;
  s.duration = duration.summary();
  s.answer_tpot = answer_tpot.summary();
  return s;
}

nlohmann::json to_json(const std::optional<ReasoningSummary>& r) {
  if (!r) return nullptr;
  const auto share = r->share();
  return {{"requests", r->requests},
          {"reasoning_first", r->reasoning_first},
          {"reasoning_only", r->reasoning_only},
          {"reasoning_tokens", r->reasoning_tokens},
          {"output_tokens", r->output_tokens},
          {"share_of_output_tokens", share ? nlohmann::json(*share) : nlohmann::json(nullptr)},
          {"sources", r->sources},
          {"duration", to_json(r->duration)},
          {"answer_tpot", to_json(r->answer_tpot)},
          {"population", "measured successful requests; duration: t_first_output - t_first of those whose "
                         "reasoning came first; answer_tpot: (t_last - t_first_output) / (output_tokens - "
                         "reasoning_tokens - 1) of every one with at least 2 answer tokens"}};
}

std::string reasoning_console(const std::optional<ReasoningSummary>& r) {
  if (!r) return {};
  std::string o = fmt::format("{:-^78}\n", " Reasoning ");
  const auto share = r->share();
  o += fmt::format("{:<40}{:>12}{}\n", "Reasoning tokens (share of output):", r->reasoning_tokens,
                   share ? fmt::format(" ({:.1f}%)", 100.0 * *share) : std::string());
  o += fmt::format("{:<40}{:>12} ({} reasoning first, {} reasoning only)\n", "Requests with reasoning:", r->requests,
                   r->reasoning_first, r->reasoning_only);
  std::string sources;
  for (const auto& [src, n] : r->sources) sources += fmt::format("{}{} {}", sources.empty() ? "" : ", ", src, n);
  o += fmt::format("{:<40}{:>12}\n", "Reasoning tokens counted from:", sources);
  auto dist = [&](const char* label, const DistributionSummary& d) {
    if (d.count == 0) {
      o += fmt::format("{:<40}{:>12}\n", label, "-");
      return;
    }
    auto ms = [](std::int64_t us) { return static_cast<double>(us) / 1e3; };
    o += fmt::format("{:<40}{:>12.2f} (p50 {:.2f}, p90 {:.2f}, p99 {:.2f}; n={})\n", label, d.mean_us / 1e3,
                     ms(d.p50_us), ms(d.p90_us), ms(d.p99_us), d.count);
  };
  dist("Reasoning duration mean (ms):", r->duration);
  dist("Answer TPOT mean (ms):", r->answer_tpot);
  return o;
}

}  // namespace llmload::analysis
