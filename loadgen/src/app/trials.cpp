// `llmload run --trials N`: see trials.hpp.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "trials.hpp"
#include "trial_sections.hpp"

#include "correctness.hpp"
#include "file_write.hpp"
#include "probe_summary.hpp"
#include "stop_signal.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "llmload/analysis/trials.hpp"

namespace llmload::app {

using nlohmann::json;

std::uint64_t trial_seed(std::uint64_t base, std::int64_t index) {
  if (index == 0) return base;
  // splitmix64 of (base, index): neighbouring trials get unrelated streams.
  std::uint64_t z = base + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

const std::vector<std::string>& trial_metric_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"request_throughput", "output_throughput", "total_token_throughput",
                                  "request_goodput"};
    for (const char* m : {"ttft", "ttfo", "tpot", "itl", "e2el"}) {
      for (const char* s : {"mean", "median", "p90", "p95", "p99"}) k.push_back(fmt::format("{}_{}_ms", s, m));
    }
    return k;
  }();
  return keys;
}

namespace {

json number_or_null(const json& j, const std::string& key) {
  if (j.is_object() && j.contains(key) && j[key].is_number() && std::isfinite(j[key].get<double>())) return j[key];
  return nullptr;
}

std::string stopped_reason(const json& result) {
  if (!result.contains("stopped_early") || !result["stopped_early"].is_object()) return {};
  return result["stopped_early"].value("reason", std::string("stopped early"));
}

// The SLO verdict over trials, as the capacity search decides a point (docs/statistics.md):
// PASS iff a strict majority passes (an early-stopped trial counts as FAIL); else FAIL when the
// fails are at least the inconclusives, else INCONCLUSIVE.
std::string majority_verdict(const std::vector<std::string>& verdicts) {
  std::size_t pass = 0, fail = 0, inc = 0;
  for (const auto& v : verdicts) {
    if (v == "PASS") ++pass;
    else if (v == "FAIL") ++fail;
    else ++inc;
  }
  if (2 * pass > verdicts.size()) return "PASS";
  return fail >= inc ? "FAIL" : "INCONCLUSIVE";
}

// The largest share of the window's requests over one of the SLO's bounds (null without an SLO).
json slo_exceedance_fraction(const json& slo) {
  if (!slo.is_object() || !slo.contains("metrics") || !slo["metrics"].is_array()) return nullptr;
  json most = nullptr;
  for (const auto& m : slo["metrics"]) {
    const double n = m.value("requests", 0.0);
    if (!(n > 0) || !m.contains("exceedances") || !m["exceedances"].is_number()) continue;
    const double share = m["exceedances"].get<double>() / n;
    if (most.is_null() || share > most.get<double>()) most = share;
  }
  return most;
}

}  // namespace

json trial_entry(const json& result, std::int64_t trial, const std::string& dir, std::uint64_t seed) {
  json e = {{"trial", trial}, {"dir", dir}, {"seed", seed}};
  for (const auto& k : trial_metric_keys()) e[k] = number_or_null(result, k);
  // TTFO is its own number only where a request reasoned before its answer (else it is TTFT's).
  const json& requests = result.value("requests", json());
  if (!requests.is_object() || requests.value("reasoning_first", 0) == 0) {
    for (const char* s : {"mean", "median", "p90", "p95", "p99"}) e[fmt::format("{}_ttfo_ms", s)] = nullptr;
  }
  e["completed"] = result.value("completed", 0);
  e["failed"] = result.value("failed", 0);
  const json& v = result.contains("validity") ? result["validity"] : json();
  e["valid"] = v.is_object() ? v.value("valid", true) : true;
  json reasons = json::array();
  if (v.is_object() && v.contains("reasons") && v["reasons"].is_array()) {
    reasons = v["reasons"];
  } else if (v.is_object() && v.contains("reason") && v["reason"].is_string()) {
    reasons.push_back({{"code", "invalid"}, {"message", v["reason"]}});
  }
  e["validity_reasons"] = reasons;
  const json& slo = result.contains("slo") ? result["slo"] : json();
  e["slo_verdict"] = slo.is_object() ? slo.value("verdict", json(nullptr)) : json(nullptr);
  e["attainment"] = slo.is_object() ? number_or_null(slo, "attainment") : json(nullptr);
  e["slo_exceedance_fraction"] = slo_exceedance_fraction(slo);
  const std::string stopped = stopped_reason(result);
  e["stopped_early"] = stopped.empty() ? json(nullptr) : json(stopped);
  e["interrupted"] = result.value("interrupted", false);
  // What a capacity probe judges besides the verdict (analysis::judge_trial).
  e["window_s"] = result.contains("window") && result["window"].is_object() ? number_or_null(result["window"], "length_s")
                                                                           : json(nullptr);
  const json& ov = result.contains("overload") ? result["overload"] : json();
  e["overloaded"] = ov.is_object() ? ov.value("overloaded", false) : false;
  e["overload_reason"] = ov.is_object() && ov.value("overloaded", false) ? ov["reason"] : json(nullptr);
  e.update(correctness_counts(result));
  e["probe"] = probe_trial_entry(result);  // --probe-rate: the trial's probe numbers, else null
  e["sections"] = trial_sections(result);
  return e;
}

json aggregate_trials(const std::vector<json>& entries, const json& first_result, double pause_s) {
  json r;
  r["schema_version"] = kSchemaVersion;
  r["artifact"] = "trials";
  json conditions = first_result.contains("conditions") ? first_result["conditions"] : json::object();
  json seeds = json::array();
  for (const auto& e : entries) seeds.push_back(e["seed"]);
  conditions["trials"] = {{"n", entries.size()}, {"pause_s", pause_s}, {"seeds", seeds}};
  r["conditions"] = conditions;

  json summary = json::object();
  json noisy_metrics = json::array();
  for (const auto& k : trial_metric_keys()) {
    std::vector<double> values;
    for (const auto& e : entries) {
      if (e.contains(k) && e[k].is_number()) values.push_back(e[k].get<double>());
    }
    if (values.empty() || values.size() < entries.size()) {
      r[k] = nullptr;  // a metric some trial lacks is not summarized (e.g. no SLO: no goodput)
      continue;
    }
    const auto s = analysis::summarize_trials(values);
    summary[k] = analysis::to_json(s);
    r[k] = s.median;
    if (s.noisy) noisy_metrics.push_back(k);
  }
  r["trial_summary"] = summary;
  // Cost at the headline (median) output throughput, with the trials' price and devices.
  r["cost"] = nullptr;
  if (first_result.contains("cost") && first_result["cost"].is_object() && r["output_throughput"].is_number()) {
    json cost = first_result["cost"];
    const double tput = r["output_throughput"].get<double>();
    const double per_m = analysis::cost_per_million_tokens(cost.value("price_per_hour", 0.0), cost.value("devices", 1.0),
                                                           tput);
    cost["output_throughput"] = tput;
    cost["per_million_output_tokens"] = std::isfinite(per_m) ? json(per_m) : json(nullptr);
    cost["from"] = "the median output throughput across trials";
    r["cost"] = cost;
  }
  pool_correctness(r, entries);
  r["probe"] = probe_trials_json(entries);
  pool_trial_sections(r, entries);
  r["noisy"] = !noisy_metrics.empty();
  r["noisy_metrics"] = noisy_metrics;
  r["noisy_threshold_cv"] = 0.10;
  std::int64_t completed = 0, failed = 0;
  bool valid = true, interrupted = false;
  json reasons = json::array();
  std::vector<std::string> verdicts;
  bool any_slo = false;
  for (const auto& e : entries) {
    completed += e.value("completed", std::int64_t{0});
    failed += e.value("failed", std::int64_t{0});
    interrupted = interrupted || e.value("interrupted", false);
    if (!e.value("valid", true)) valid = false;
    for (const auto& reason : e["validity_reasons"]) {
      json x = reason;
      x["trial"] = e["trial"];
      reasons.push_back(x);
    }
    if (e.contains("slo_verdict") && e["slo_verdict"].is_string()) {
      any_slo = true;
      verdicts.push_back(e["stopped_early"].is_string() ? "FAIL" : e["slo_verdict"].get<std::string>());
    } else {
      verdicts.push_back("INCONCLUSIVE");
    }
  }
  r["completed"] = completed;
  r["failed"] = failed;
  r["interrupted"] = interrupted;
  r["validity"] = {{"valid", valid},
                   {"verdict", valid ? "VALID" : "INVALID"},
                   {"reasons", reasons},
                   {"reason", reasons.empty() ? json(nullptr) : json(fmt::format("trial {}: {}", reasons[0]["trial"].dump(),
                                                                                  reasons[0].value("message", std::string())))},
                   {"checked", true},
                   {"rule", "valid iff every trial is valid"}};
  if (any_slo) {
    const json& s1 = first_result.contains("slo") ? first_result["slo"] : json();
    r["slo"] = {{"spec", s1.is_object() ? s1.value("spec", json(nullptr)) : json(nullptr)},
                {"verdict", majority_verdict(verdicts)},
                {"trial_verdicts", verdicts},
                {"attainment", nullptr},
                {"rule", "PASS iff a strict majority of trials pass (a trial stopped early for over-saturation "
                         "counts as FAIL); else FAIL when fails >= inconclusive, else INCONCLUSIVE"}};
    std::vector<double> att;
    for (const auto& e : entries) {
      if (e["attainment"].is_number()) att.push_back(e["attainment"].get<double>());
    }
    if (!att.empty() && att.size() == entries.size()) r["slo"]["attainment"] = analysis::summarize_trials(att).median;
  } else {
    r["slo"] = nullptr;
  }
  r["trials"] = entries;
  r["headline"] = "median across trials (min-max and 95% CI in trial_summary); never best-of-N";
  r["scorecard"] = scorecard(r);  // last: from the aggregate's own SLO, validity and counts
  return r;
}

namespace {

std::string cell(const json& summary, const std::string& key, int digits) {
  if (!summary.contains(key)) return "-";
  const json& s = summary[key];
  auto num = [&](const json& x) { return x.is_number() ? fmt::format("{:.{}f}", x.get<double>(), digits) : std::string("-"); };
  std::string ci = s["ci"]["low"].is_number() ? fmt::format("[{}, {}]", num(s["ci"]["low"]), num(s["ci"]["high"])) : "-";
  return fmt::format("{:>11} {:>23} {:>25} {:>7}{}", num(s["median"]),
                     fmt::format("{} - {}", num(s["min"]), num(s["max"])), ci,
                     s["cv"].is_number() ? fmt::format("{:.1f}%", 100 * s["cv"].get<double>()) : std::string("-"),
                     s.value("noisy", false) ? "  NOISY" : "");
}

void print_trials_report(const json& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  const json& summary = r["trial_summary"];
  line(fmt::format("============ llmload: {} trials (median across trials; never best-of-N) ============",
                   r["trials"].size()));
  line(fmt::format("{:<26}{:>11} {:>23} {:>25} {:>7}", "metric", "median", "min - max", "95% CI", "CV"));
  const std::vector<std::pair<std::string, int>> shown = {
      {"request_throughput", 2}, {"output_throughput", 1}, {"request_goodput", 2}, {"median_ttft_ms", 2},
      {"p99_ttft_ms", 2},        {"median_ttfo_ms", 2},    {"p99_ttfo_ms", 2},     {"median_tpot_ms", 3},
      {"p99_tpot_ms", 3},        {"p99_itl_ms", 3},
      {"median_e2el_ms", 2},     {"p99_e2el_ms", 2}};
  for (const auto& [k, d] : shown) {
    if (summary.contains(k)) line(fmt::format("{:<26}{}", k, cell(summary, k, d)));
  }
  if (r.value("noisy", false)) {
    line(fmt::format("NOISY: the trials disagree (coefficient of variation over {:.0f}%) in {}: one number would "
                     "mislead; stabilize the setup or run more trials",
                     100 * r.value("noisy_threshold_cv", 0.10), r["noisy_metrics"].dump()));
  }
  const json& v = r["validity"];
  line(fmt::format("{:<40}{:>12}", "Validity (all trials):", v.value("verdict", std::string("?"))));
  for (const auto& reason : v["reasons"]) {
    line(fmt::format("  trial {}: {}", reason["trial"].dump(), reason.value("message", std::string())));
  }
  if (r["slo"].is_object()) {
    line(fmt::format("{:<40}{:>12}", "SLO verdict (majority of trials):", r["slo"].value("verdict", std::string("?"))));
    line(fmt::format("  per trial: {}", r["slo"]["trial_verdicts"].dump()));
  }
  line(std::string(86, '='));
  fmt::print("{}", out);
  std::fflush(stdout);
}

}  // namespace

TrialsOutcome run_trials(const ScenarioConfig& cfg, const std::vector<std::string>& argv, const json& env_settings,
                         const RunHooks& hooks, const std::vector<json>& previous, const json& previous_first) {
  TrialsOutcome out;
  out.entries = previous;
  json first = previous_first;
  const auto first_index = static_cast<std::int64_t>(previous.size());
  const std::int64_t total = first_index + cfg.trials;
  for (std::int64_t i = first_index; i < total; ++i) {
    // A signal between trials (issue 16: during the pause it killed the command, and the trials
    // summary was never written): stop here and write what the trials measured.
    if (stop_signal() != 0 || (i > first_index && !sleep_unless_stopped(cfg.trial_pause))) {
      if (!cfg.quiet) {
        fmt::print(stderr, "llmload: signal received between trials: {} of {} trials ran; writing their summary\n",
                   i - first_index, total - first_index);
      }
      out.exit_code = kExitInterrupted;
      break;
    }
    ScenarioConfig t = cfg;
    t.trials = 1;
    t.seed = trial_seed(cfg.seed, i);
    const std::string name = fmt::format("trial-{}", i + 1);
    if (!cfg.output_dir.empty()) t.output_dir = (std::filesystem::path(cfg.output_dir) / name).string();
    RunHooks h = hooks;
    h.print_report = hooks.print_report && cfg.verbose && !cfg.quiet;
    h.label = fmt::format("{}{}trial {}/{}", hooks.label, hooks.label.empty() ? "" : ", ", i + 1, total);
    RunOutcome o = run_once(t, argv, env_settings, h);
    if (!o.result.is_object()) {  // stopped before its load: nothing measured
      out.exit_code = o.exit_code;
      break;
    }
    if (first.is_null() || first.empty()) first = o.result;
    out.entries.push_back(trial_entry(o.result, i + 1, name, t.seed));
    const json& e = out.entries.back();
    if (!cfg.quiet && hooks.print_report) {
      auto num = [&](const char* k, int d) {
        return e[k].is_number() ? fmt::format("{:.{}f}", e[k].get<double>(), d) : std::string("-");
      };
      fmt::print(stderr, "llmload: trial {}/{}: {} req/s, p99 TTFT {} ms, p99 TPOT {} ms, {}{}{}\n", i + 1, total,
                 num("request_throughput", 2), num("p99_ttft_ms", 2), num("p99_tpot_ms", 3),
                 e["valid"].get<bool>() ? "VALID" : "INVALID",
                 e["slo_verdict"].is_string() ? ", SLO " + e["slo_verdict"].get<std::string>() : std::string(),
                 e["stopped_early"].is_string() ? ", stopped early (over-saturated)" : "");
    }
    if (o.exit_code != kExitOk) {
      out.exit_code = o.exit_code;  // interrupted or writing failed: aggregate what was measured, stop
      break;
    }
  }
  out.first = first;
  if (out.entries.empty()) return out;
  out.result = aggregate_trials(out.entries, first, std::chrono::duration<double>(cfg.trial_pause).count());
  if (hooks.print_report) print_trials_report(out.result);
  if (!cfg.output_dir.empty() && !out.entries.empty()) {
    if (auto e = write_file_atomically(std::filesystem::path(cfg.output_dir) / "result.json",
                                       out.result.dump(2, ' ', false, json::error_handler_t::replace) + "\n")) {
      fmt::print(stderr, "llmload: error: writing {}/result.json failed: {}\n", cfg.output_dir, *e);
      if (out.exit_code == kExitOk) out.exit_code = kExitFailure;
      return out;
    }
    if (!cfg.quiet) {
      fmt::print(stderr, "llmload: {} trial{} written to {}/trial-*, {} summary to {}/result.json\n",
                 out.entries.size(), out.entries.size() == 1 ? "" : "s", cfg.output_dir,
                 out.entries.size() == 1 ? "its" : "their", cfg.output_dir);
    }
    try {
      analysis::HtmlReportOptions report_options;
      report_options.keep_records = compact_record_keeper();  // trial 1's requests.jsonl parsed once
      analysis::write_report(cfg.output_dir, report_options);
      if (!cfg.quiet) fmt::print(stderr, "llmload: report written to {}/report.html\n", cfg.output_dir);
    } catch (const std::exception& ex) {
      fmt::print(stderr, "llmload: warning: report not written: {}\n", ex.what());
    }
  }
  return out;
}

}  // namespace llmload::app
