#include "llmload/analysis/model_breakdown.hpp"
#include "numeric.hpp"
#include "llmload/common/duration.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmload::analysis {

namespace {

// The part of a successful request's output tokens that arrived in the window, its tokens spread
// evenly over [t_first, t_last] (all of them at t_first when the two coincide).
double output_tokens_in(const RequestRecord& r, const Window& w) {
  if (!r.ok() || !r.t_first || !r.t_last || r.output_tokens <= 0) return 0;
  const Nanos a = *r.t_first;
  const Nanos b = std::max(*r.t_last, a);
  if (b == a) return a >= w.start && a <= w.end ? static_cast<double>(r.output_tokens) : 0;
  const Nanos lo = std::max(a, w.start);
  const Nanos hi = std::min(b, w.end);
  if (hi <= lo) return 0;
  return static_cast<double>(r.output_tokens) * static_cast<double>((hi - lo).count()) /
         static_cast<double>((b - a).count());
}

}  // namespace

std::map<std::string, ModelResult> model_breakdown(RecordRange records, const Window& window,
                                                   const std::optional<SloSpec>& slo, LatencyView view) {
  ModelSet models;
  for (const auto& r : records) models.note(r);
  std::map<std::string, ModelResult> out;
  if (!models.several()) return out;
  const double secs = to_seconds(window.length());
  for (const auto& model : models.names()) {
    ModelResult m;
    Distribution ttft, tpot, e2e, ttfo;
    std::int64_t completing = 0;
    double tokens = 0;
    for (const auto& r : records) {
      if (r.model != model) continue;
      if (r.ok() && r.t_done && window.holds_completion(*r.t_done)) ++completing;
      tokens += output_tokens_in(r, window);
      if (r.warmup || !r.in_window) continue;
      ++m.requests;
      if (r.ok()) {
        ++m.completed;
        ttft.add(r.ttft());
        tpot.add(r.tpot());
        e2e.add(r.e2e());
        ttfo.add(r.ttfo());
      } else if (r.error != ErrorClass::kStoppedEarly) {
        ++m.failed;
      }
    }
    if (secs > 0) {
      m.request_throughput = static_cast<double>(completing) / secs;
      m.output_throughput = tokens / secs;
    }
    m.ttft = ttft.summary();
    m.tpot = tpot.summary();
    m.e2e = e2e.summary();
    m.ttfo = ttfo.summary();
    if (slo && !slo->empty()) {
      m.slo = evaluate_slo(*slo, view, window, records, [&model](const RequestRecord& r) { return r.model == model; });
    }
    out.emplace(model, std::move(m));
  }
  return out;
}

nlohmann::json by_model_json(const std::map<std::string, ModelResult>& by_model) {
  using nlohmann::json;
  if (by_model.empty()) return nullptr;
  json out = json::object();
  for (const auto& [model, m] : by_model) {
    json slo = nullptr;
    if (m.slo) {
      json verdicts = json::object();
      for (const auto& v : m.slo->metrics) verdicts[v.metric] = to_string(v.verdict);
      slo = {{"attainment", m.slo->attainment},
             {"request_goodput", m.slo->request_goodput},
             {"token_goodput", m.slo->token_goodput},
             {"good_requests", m.slo->good},
             {"verdict", to_string(m.slo->verdict)},
             {"metrics", std::move(verdicts)}};
    }
    out[model] = {{"requests", m.requests},
                  {"completed", m.completed},
                  {"failed", m.failed},
                  {"request_throughput", m.request_throughput},
                  {"output_throughput", m.output_throughput},
                  {"latency",
                   {{"ttft", to_json(m.ttft)}, {"tpot", to_json(m.tpot)}, {"e2e", to_json(m.e2e)}, {"ttfo", to_json(m.ttfo)}}},
                  {"slo", std::move(slo)}};
  }
  return out;
}

std::string by_model_console(const std::map<std::string, ModelResult>& by_model, bool ttfo) {
  if (by_model.empty()) return {};
  auto p99 = [](const DistributionSummary& d) {
    return d.count > 0 ? fmt::format("{:.2f}", static_cast<double>(d.p99_us) / 1e3) : std::string("-");
  };
  const bool any_slo = std::any_of(by_model.begin(), by_model.end(), [](const auto& kv) { return kv.second.slo.has_value(); });
  std::string o = fmt::format("{:-^78}\n", " Per model (p99 in ms) ");
  std::string head = fmt::format("{:<16}{:>10}{:>7}{:>8}{:>8}", "model", "done/fail", "req/s", "tok/s", "TTFT");
  if (ttfo) head += fmt::format("{:>8}", "TTFO");
  head += fmt::format("{:>7}{:>8}", "TPOT", "E2E");
  if (any_slo) head += fmt::format("{:>8} {}", "SLO %", "verdict");
  o += head + "\n";
  for (const auto& [model, m] : by_model) {
    const std::string name = model.size() > 15 ? model.substr(0, 14) + "~" : model;
    std::string row = fmt::format("{:<16}{:>10}{:>7.2f}{:>8.1f}{:>8}", name, fmt::format("{}/{}", m.completed, m.failed),
                                  m.request_throughput, m.output_throughput, p99(m.ttft));
    if (ttfo) row += fmt::format("{:>8}", p99(m.ttfo));
    row += fmt::format("{:>7}{:>8}", p99(m.tpot), p99(m.e2e));
    if (any_slo) {
      row += m.slo ? fmt::format("{:>8.1f} {}", 100.0 * m.slo->attainment, to_string(m.slo->verdict)) : fmt::format("{:>8} -", "-");
    }
    o += row + "\n";
  }
  return o;
}

}  // namespace llmload::analysis
