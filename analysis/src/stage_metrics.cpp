#include "llmload/analysis/stage_metrics.hpp"
#include "numeric.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "llmload/analysis/hdr_histogram.hpp"

namespace llmload::analysis {
namespace {


struct Dist {
  HdrHistogram h{1, kHighestUs, 3};
  void add(std::optional<Nanos> v) {
    if (v) h.record(std::clamp<std::int64_t>((v->count() + 500) / 1000, 0, kHighestUs));
  }
  std::optional<double> ms(double p) const {
    if (h.total_count() == 0) return std::nullopt;
    return static_cast<double>(h.value_at_percentile(p)) / 1e3;
  }
};

}  // namespace

std::vector<StageMetrics> stage_metrics(RecordRange records, std::span<const StagePlan> plan,
                                        const std::optional<SloSpec>& slo, LatencyView view) {
  std::vector<StageMetrics> out;
  const bool rt = view == LatencyView::kResponse;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    StageMetrics s;
    s.index = static_cast<std::int32_t>(k);
    s.plan = plan[k];
    Dist ttft, tpot, e2e;
    std::int64_t good = 0;
    std::int64_t completing = 0;
    double tokens = 0;
    for (const auto& r : records) {
      if (r.ok() && r.t_done && *r.t_done >= s.plan.begin && *r.t_done < s.plan.end) {
        ++completing;
        tokens += static_cast<double>(r.output_tokens);
      }
      if (r.warmup || r.stage != s.index) continue;
      ++s.requests;
      if (!r.ok()) {
        ++s.failed;
        continue;
      }
      ++s.completed;
      ttft.add(rt ? r.ttft_rt() : r.ttft());
      tpot.add(r.tpot());
      e2e.add(rt ? r.e2e_rt() : r.e2e());
      if (slo && !slo->empty() && meets_slo(r, *slo, view)) ++good;
    }
    const double secs = static_cast<double>((s.plan.end - s.plan.begin).count()) / 1e9;
    if (secs > 0) {
      s.request_throughput = static_cast<double>(completing) / secs;
      s.output_throughput = tokens / secs;
    }
    s.ttft_p50_ms = ttft.ms(50);
    s.ttft_p99_ms = ttft.ms(99);
    s.tpot_p50_ms = tpot.ms(50);
    s.tpot_p99_ms = tpot.ms(99);
    s.e2e_p50_ms = e2e.ms(50);
    s.e2e_p99_ms = e2e.ms(99);
    if (slo && !slo->empty() && s.requests > 0) {
      s.attainment = static_cast<double>(good) / static_cast<double>(s.requests);
    }
    out.push_back(std::move(s));
  }
  return out;
}

using json = nlohmann::json;

json stages_json(const std::vector<StageMetrics>& stages) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json out = json::array();
  for (const auto& s : stages) {
    out.push_back({{"stage", s.index},
                   {"load", s.plan.load},
                   {"start_s", static_cast<double>(s.plan.begin.count()) / 1e9},
                   {"end_s", static_cast<double>(s.plan.end.count()) / 1e9},
                   {"requests", s.requests},
                   {"completed", s.completed},
                   {"failed", s.failed},
                   {"request_throughput", s.request_throughput},
                   {"output_throughput", s.output_throughput},
                   {"ttft_ms", {{"p50", opt(s.ttft_p50_ms)}, {"p99", opt(s.ttft_p99_ms)}}},
                   {"tpot_ms", {{"p50", opt(s.tpot_p50_ms)}, {"p99", opt(s.tpot_p99_ms)}}},
                   {"e2e_ms", {{"p50", opt(s.e2e_p50_ms)}, {"p99", opt(s.e2e_p99_ms)}}},
                   {"slo_attainment", opt(s.attainment)}});
  }
  return out;
}

std::string stages_console(const std::vector<StageMetrics>& stages) {
  if (stages.empty()) return {};
  auto ms = [](const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : std::string("-"); };
  std::string out = fmt::format("{:=^100}\n", " Per stage ");
  out += fmt::format("{:<6}{:<18}{:>9}{:>8}{:>10}{:>12}{:>11}{:>11}{:>11}{:>8}\n", "stage", "load", "requests", "failed",
                     "req/s", "out tok/s", "TTFT p99", "TPOT p99", "E2E p99", "SLO %");
  for (const auto& s : stages) {
    out += fmt::format("{:<6}{:<18}{:>9}{:>8}{:>10.2f}{:>12.1f}{:>11}{:>11}{:>11}{:>8}\n", s.index, s.plan.load,
                       s.requests, s.failed, s.request_throughput, s.output_throughput, ms(s.ttft_p99_ms),
                       ms(s.tpot_p99_ms), ms(s.e2e_p99_ms),
                       s.attainment ? fmt::format("{:.1f}", 100.0 * *s.attainment) : std::string("-"));
  }
  out += "(latencies in ms; a stage's req/s and tok/s count the requests completing within it)\n";
  return out;
}

}  // namespace llmload::analysis
