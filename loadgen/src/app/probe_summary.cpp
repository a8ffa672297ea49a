#include "probe_summary.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "llmload/analysis/probe_metrics.hpp"
#include "llmload/analysis/stats.hpp"

namespace llmload::app {
namespace {

using nlohmann::json;

json number_at(const json& section, const char* dist, const char* key) {
  if (!section.is_object()) return nullptr;
  const json& d = section.value(dist, json());
  return d.is_object() && d.value(key, json()).is_number() ? d[key] : json(nullptr);
}

json median(std::vector<double> v) {
  const auto m = analysis::median(std::move(v));
  return m ? json(*m) : json(nullptr);
}

std::string ms(const json& v) { return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : "-"; }
std::string times(const json& a, const json& b) {
  return a.is_number() && b.is_number() && b.get<double>() > 0 ? fmt::format("x{:.2f}", a.get<double>() / b.get<double>())
                                                                : "-";
}

}  // namespace

json probe_trial_entry(const json& result) {
  const json& p = result.is_object() ? result.value("probe", json()) : json();
  if (!p.is_object()) return nullptr;
  return {{"measured", p.value("measured", 0)},
          {"failed", p.value("failed", 0)},
          {"ttft_p50_ms", number_at(p, "ttft", "p50_ms")},
          {"ttft_p99_ms", number_at(p, "ttft", "p99_ms")},
          {"baseline_ttft_p50_ms", number_at(p.value("baseline", json()), "ttft", "p50_ms")}};
}

void ProbeColumn::add(const json& e) {
  if (!e.is_object()) return;
  ++trials_;
  measured_ += e.value("measured", std::int64_t{0});
  failed_ += e.value("failed", std::int64_t{0});
  if (e.value("ttft_p50_ms", json()).is_number()) ttft_p50_ms_.push_back(e["ttft_p50_ms"].get<double>());
  if (e.value("ttft_p99_ms", json()).is_number()) ttft_p99_ms_.push_back(e["ttft_p99_ms"].get<double>());
  if (e.value("baseline_ttft_p50_ms", json()).is_number()) {
    baseline_ttft_p50_ms_.push_back(e["baseline_ttft_p50_ms"].get<double>());
  }
}

json ProbeColumn::to_json() const {
  if (trials_ == 0) return nullptr;
  const json p50 = median(ttft_p50_ms_);
  const json base = median(baseline_ttft_p50_ms_);
  return {{"trials", trials_},
          {"measured", measured_},
          {"failed", failed_},
          {"ttft_p50_ms", p50},
          {"ttft_p99_ms", median(ttft_p99_ms_)},
          {"baseline_ttft_p50_ms", base},
          {"ttft_p50_vs_baseline",
           p50.is_number() && base.is_number() && base.get<double>() > 0 ? json(p50.get<double>() / base.get<double>())
                                                                          : json(nullptr)}};
}

json probe_trials_json(const std::vector<json>& entries) {
  ProbeColumn c;
  for (const auto& e : entries) c.add(e.value("probe", json()));
  json j = c.to_json();
  if (j.is_object()) j["from"] = "medians across trials of each trial's probe section (counts summed); each trial's own is in its result.json";
  return j;
}

std::string probe_sweep_table(const std::vector<std::pair<std::string, const ProbeColumn*>>& rows) {
  const auto has = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return !r.second->empty(); });
  if (!has) return "";
  std::string o = "Probe stream: an unrelated user's TTFT at each load (ms, medians across trials)\n";
  o += fmt::format("{:>10} {:>7} {:>7} {:>11} {:>11} {:>13} {:>12} {:>12}\n", "offered", "probes", "failed", "TTFT p50",
                   "TTFT p99", "unloaded p50", "vs unloaded", "vs lowest");
  json lowest = nullptr;
  for (const auto& [label, col] : rows) {
    const json c = col->to_json();
    if (!c.is_object()) continue;
    if (lowest.is_null()) lowest = c["ttft_p50_ms"];
    o += fmt::format("{:>10} {:>7} {:>7} {:>11} {:>11} {:>13} {:>12} {:>12}\n", label, c["measured"].get<std::int64_t>(),
                     c["failed"].get<std::int64_t>(), ms(c["ttft_p50_ms"]), ms(c["ttft_p99_ms"]),
                     ms(c["baseline_ttft_p50_ms"]), times(c["ttft_p50_ms"], c["baseline_ttft_p50_ms"]),
                     times(c["ttft_p50_ms"], lowest));
  }
  return o;
}

std::string merge_probe_section(analysis::MergedArtifact& merged, const std::vector<analysis::ShardArtifact>& shards,
                                const std::vector<std::string>& dirs) {
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const json& conditions = shards[i].result.value("conditions", json());
    const json& sh = conditions.is_object() ? conditions.value("shard", json()) : json();
    if (!sh.is_object() || sh.value("index", -1) != 0) continue;
    const json& probe = shards[i].result.value("probe", json());
    merged.result["probe"] = probe;
    if (!probe.is_object()) return "";
    merged.result["probe"]["merged_from"] = "shard 0, which sent the probe stream at the whole rate";
    merged.console += analysis::probe_console(probe);
    return i < dirs.size() ? dirs[i] : "";
  }
  return "";
}

bool copy_probes_file(const std::string& from, const std::string& to) {
  std::error_code ec;
  const auto src = std::filesystem::path(from) / "probes.jsonl";
  if (!std::filesystem::exists(src, ec)) return true;
  std::filesystem::copy_file(src, std::filesystem::path(to) / "probes.jsonl",
                             std::filesystem::copy_options::overwrite_existing, ec);
  return !ec;
}

}  // namespace llmload::app
