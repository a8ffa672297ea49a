#include "llmload/analysis/probe_metrics.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmload::analysis {
namespace {

using nlohmann::json;

// The latencies of one successful probe, into the distributions; ITL token-weighted as the run's
// (a gap before an event of n tokens is n values of gap / n).
struct ProbeDistributions {
  Distribution ttft, tpot, itl, e2e;
  void add(const RequestRecord& r, std::span<const ChunkArrival> chunks) {
    ttft.add(r.ttft());
    tpot.add(r.tpot());
    e2e.add(r.e2e());
    for (std::size_t k = 1; k < chunks.size(); ++k) {
      const Nanos gap = chunks[k].t - chunks[k - 1].t;
      const std::int64_t n = std::max<std::int64_t>(1, chunks[k].tokens);
      for (std::int64_t i = 0; i < n; ++i) itl.add(gap / n);
    }
  }
  void into(ProbeSummary& s) const {
    s.ttft = ttft.summary();
    s.tpot = tpot.summary();
    s.itl = itl.summary();
    s.e2e = e2e.summary();
  }
};

// Counts the probe's outcome; true when it succeeded.
bool count_outcome(ProbeSummary& s, const RequestRecord& r) {
  ++s.measured;
  if (r.ok()) {
    ++s.completed;
    return true;
  }
  if (r.error == ErrorClass::kStoppedEarly) {
    ++s.stopped_early;
  } else {
    ++s.failed;
    ++s.errors_by_class[std::string(to_string(r.error))];
  }
  return false;
}

std::string ms_text(const json& d, const char* key) {
  return d.is_object() && d.value(key, json()).is_number() ? fmt::format("{:.2f}", d[key].get<double>()) : "-";
}

// "TTFT ms p50 45.20 p90 60.00 p99 80.10" (or "TTFT -" without a sample).
std::string dist_text(const char* name, const json& d) {
  if (!d.is_object()) return fmt::format("{} -", name);
  return fmt::format("{} ms p50 {} p90 {} p99 {}", name, ms_text(d, "p50_ms"), ms_text(d, "p90_ms"),
                     ms_text(d, "p99_ms"));
}

}  // namespace

void ProbeAccumulator::add(const RequestRecord& r, std::span<const ChunkArrival> chunks) {
  records_.push_back(r);
  chunks_.emplace_back(chunks.begin(), chunks.end());
}

ProbeSummary ProbeAccumulator::summarize(Nanos start, Nanos end) const {
  ProbeSummary s;
  ProbeDistributions d;
  s.sent = static_cast<std::int64_t>(records_.size());
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const RequestRecord& r = records_[i];
    if (r.t_intended < start || r.t_intended > end) continue;
    if (count_outcome(s, r)) d.add(r, chunks_[i]);
  }
  d.into(s);
  return s;
}

ProbeSummary summarize_probe_records(RecordRange records) {
  ProbeSummary s;
  ProbeDistributions d;
  s.sent = static_cast<std::int64_t>(records.size());
  for (const auto& r : records) {
    if (count_outcome(s, r)) d.add(r, {});
  }
  d.into(s);
  return s;
}

json probe_json(const ProbeSummary& s) {
  json errors = json::object();
  for (const auto& [cls, n] : s.errors_by_class) errors[cls] = n;
  return {{"sent", s.sent},
          {"measured", s.measured},
          {"completed", s.completed},
          {"failed", s.failed},
          {"stopped_early", s.stopped_early},
          {"errors_by_class", errors},
          {"ttft", to_json(s.ttft)},
          {"tpot", to_json(s.tpot)},
          {"itl", to_json(s.itl)},
          {"e2e", to_json(s.e2e)}};
}

std::string probe_console(const json& probe) {
  if (!probe.is_object()) return "";
  const json& set = probe.value("settings", json::object());
  std::string o = fmt::format(
      "Probe stream ({:g}/s {}, {} in / {} out tokens; beside the load, in none of the numbers above)\n",
      set.value("rate_per_s", 0.0), set.value("process", std::string("poisson")), set.value("input_tokens", 0),
      set.value("output_tokens", 0));
  o += fmt::format("  {} probes measured, {} failed | {} | {} | {}\n", probe.value("measured", 0),
                   probe.value("failed", 0), dist_text("TTFT", probe.value("ttft", json())),
                   dist_text("TPOT", probe.value("tpot", json())), dist_text("E2E", probe.value("e2e", json())));
  const json& base = probe.value("baseline", json());
  if (base.is_object()) {
    const json& ratio = probe.value("ttft_p50_vs_baseline", json());
    o += fmt::format("  unloaded reference ({} probes before the load): {}{}\n", base.value("completed", 0),
                     dist_text("TTFT", base.value("ttft", json())),
                     ratio.is_number() ? fmt::format("; under load p50 TTFT x{:.2f}", ratio.get<double>()) : "");
  }
  return o;
}

}  // namespace llmload::analysis
