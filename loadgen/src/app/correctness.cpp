#include "correctness.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "llmload/analysis/accuracy.hpp"
#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/consistency.hpp"
#include "llmload/analysis/jsonl_records.hpp"
#include "llmload/analysis/slo.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::app {

using nlohmann::json;

namespace {

// PASS when the whole interval is at or above the bound, FAIL when it is all below.
std::string accuracy_verdict(const json& accuracy, double min_accuracy) {
  const json& ci = accuracy["accuracy_ci95"];
  if (ci.at(0).get<double>() >= min_accuracy) return "PASS";
  if (ci.at(1).get<double>() < min_accuracy) return "FAIL";
  return "INCONCLUSIVE";
}

std::string worse(const std::string& a, const std::string& b) {
  if (a == "FAIL" || b == "FAIL") return "FAIL";
  if (a == "INCONCLUSIVE" || b == "INCONCLUSIVE") return "INCONCLUSIVE";
  return "PASS";
}

void fold_accuracy_verdict(json& result, const analysis::SloSpec& slo, const json& verdict) {
  const std::string v = verdict["verdict"].get<std::string>();
  json& s = result["slo"];
  if (!s.is_object()) {
    // An SLO of accuracy only: the run's verdict is the accuracy's.
    s = {{"spec", slo.to_string()}, {"verdict", v}, {"service_view_verdict", v}};
  } else {
    s["latency_verdict"] = s.value("verdict", std::string("PASS"));
    s["verdict"] = worse(s["latency_verdict"].get<std::string>(), v);
    s["service_view_verdict"] = worse(s.value("service_view_verdict", v), v);
  }
  s["accuracy"] = verdict;
}

// item -> the answer kept for it (the first, should an item repeat).
std::map<std::uint64_t, const analysis::RequestRecord*> kept_outputs(const std::vector<analysis::RequestRecord>& records,
                                                                     bool measured_only) {
  std::map<std::uint64_t, const analysis::RequestRecord*> out;
  for (const auto& r : records) {
    if (!r.ok() || !r.output_text || (measured_only && r.warmup)) continue;
    out.emplace(r.item, &r);
  }
  return out;
}

// A request's two answers; their server tokens are compared when both came from the same source.
analysis::OutputPair output_pair(std::uint64_t item, const analysis::RequestRecord& ref,
                                 const analysis::RequestRecord& tested) {
  analysis::OutputPair p;
  p.item = item;
  p.reference = *ref.output_text;
  p.output = *tested.output_text;
  if (!ref.server_tokens_from.empty() && ref.server_tokens_from == tested.server_tokens_from) {
    p.tokens_from = ref.server_tokens_from;
    p.reference_tokens = ref.server_tokens;
    p.output_tokens = tested.server_tokens;
  }
  return p;
}

// The answers an earlier run kept (--save-outputs), read a record at a time: only the records
// with a saved answer are held (the rest of a long run is not).
std::vector<analysis::RequestRecord> read_saved_records(const std::string& dir) {
  const auto path = std::filesystem::path(dir) / "requests.jsonl";
  std::vector<analysis::RequestRecord> out;
  try {
    const analysis::JsonlRecordSource file(path.string());
    if (file.cut_line()) {
      fmt::print(stderr, "llmload: note: --reference {}: the last line ({}) of {} is cut off: left out\n", dir,
                 *file.cut_line(), path.string());
    }
    for (const analysis::RequestRecord& r : analysis::RecordRange(file)) {
      if (r.ok() && r.output_text) out.push_back(r);
    }
  } catch (const analysis::RecordFileError&) {
    throw ConfigError(fmt::format("--reference {}: cannot read {}: give the output directory of an earlier run made "
                                  "with --save-outputs",
                                  dir, path.string()));
  } catch (const analysis::MergeError& e) {
    throw ConfigError(fmt::format("--reference {}: {} is not an llmload requests.jsonl: {}", dir, path.string(), e.what()));
  }
  return out;
}

analysis::TokenSplitter splitter(const tokenizer::Tokenizer* tok) {
  analysis::TokenSplitter s;
  if (tok == nullptr) return s;
  s.method = "tokenizer";
  s.ids = [tok](const std::string& text) {
    const auto ids = tok->encode(text);
    return std::vector<std::int64_t>(ids.begin(), ids.end());
  };
  return s;
}

// The reference pass: the compared items again, one at a time, nothing else changed.
ScenarioConfig reference_config(const ScenarioConfig& cfg, std::uint64_t first_item, std::int64_t count) {
  ScenarioConfig ref = cfg;
  ref.kind = ScenarioKind::kConcurrency;
  ref.scenario_explicit = true;
  ref.concurrency = 1;
  ref.request_rate = 0;
  ref.num_requests = count;
  ref.duration.reset();
  ref.min_duration.reset();
  ref.min_requests.reset();
  ref.warmup = WarmupSpec{};
  ref.arrivals = ArrivalConfig{};
  ref.timed_arrivals = false;
  ref.max_inflight.reset();
  ref.sequential = false;
  ref.slo.reset();
  ref.fail_on_slo = false;
  ref.trials = 1;
  ref.consistency = false;
  ref.consistency_reference.clear();
  ref.save_outputs = true;
  ref.item_offset = first_item;
  ref.trace_http = 0;
  ref.output_dir = (std::filesystem::path(cfg.output_dir) / "consistency-reference").string();
  ref.overwrite = true;
  return ref;
}

}  // namespace

void add_accuracy(json& result, const ScenarioConfig& cfg, analysis::RecordRange records,
                  const analysis::RunMetrics& metrics) {
  const analysis::LatencyView view = metrics.slo ? metrics.slo->view : analysis::LatencyView::kService;
  const bool latency_slo = cfg.slo && !cfg.slo->empty();
  const auto meets = [&](const analysis::RequestRecord& r) {
    return r.ok() && (!latency_slo || analysis::meets_slo(r, *cfg.slo, view));
  };
  const double window_s = std::chrono::duration<double>(metrics.window.length()).count();
  json accuracy = analysis::accuracy_summary(records, meets, window_s);
  if (accuracy.is_null()) {
    result["accuracy"] = nullptr;
    if (cfg.slo && cfg.slo->min_accuracy) {
      const json verdict = {{"min_accuracy", *cfg.slo->min_accuracy},
                            {"verdict", "INCONCLUSIVE"},
                            {"reason", "no request was graded: give a graded dataset (--dataset-name gsm8k or mmlu, "
                                       "or custom rows with a \"reference\")"}};
      fold_accuracy_verdict(result, *cfg.slo, verdict);
    }
    return;
  }
  if (cfg.slo && cfg.slo->min_accuracy) {
    const json verdict = {{"min_accuracy", *cfg.slo->min_accuracy},
                          {"verdict", accuracy_verdict(accuracy, *cfg.slo->min_accuracy)},
                          {"method", "PASS when the accuracy's 95% Wilson interval lies at or above the bound, "
                                     "FAIL when it lies below, else INCONCLUSIVE (grade more requests)"}};
    accuracy["slo"] = verdict;
    fold_accuracy_verdict(result, *cfg.slo, verdict);
  }
  result["accuracy"] = std::move(accuracy);
}

json check_consistency(const ScenarioConfig& cfg, const std::vector<analysis::RequestRecord>& records,
                       const tokenizer::Tokenizer* tokenizer, const ReferencePass& run_pass) {
  const auto tested = kept_outputs(records, /*measured_only=*/true);
  json reference_info;
  std::vector<analysis::RequestRecord> ref_records;
  if (!cfg.consistency_reference.empty()) {
    ref_records = read_saved_records(cfg.consistency_reference);
    reference_info = {{"kind", "run"}, {"dir", cfg.consistency_reference}};
  } else if (!tested.empty()) {
    const std::uint64_t first = tested.begin()->first;
    const auto count = static_cast<std::int64_t>(tested.rbegin()->first - first + 1);
    const std::string dir = run_pass(reference_config(cfg, first, count));
    ref_records = read_saved_records(dir);
    reference_info = {{"kind", "pass"}, {"dir", "consistency-reference"}, {"load", "concurrency 1"},
                      {"first_item", first}, {"requests", count}};
  }
  const auto reference = kept_outputs(ref_records, /*measured_only=*/false);
  if (!cfg.consistency_reference.empty() && reference.empty()) {
    throw ConfigError(fmt::format("--reference {}: its requests.jsonl has no saved outputs: rerun it with "
                                  "--save-outputs (or drop --reference for a concurrency-1 reference pass)",
                                  cfg.consistency_reference));
  }
  std::vector<analysis::OutputPair> pairs;
  for (const auto& [item, rec] : tested) {
    if (auto it = reference.find(item); it != reference.end()) pairs.push_back(output_pair(item, *it->second, *rec));
  }
  json out = analysis::consistency_summary(pairs, splitter(tokenizer));
  out["server_tokens_asked"] = cfg.consistency_tokens;
  out["reference"] = std::move(reference_info);
  out["tested_requests"] = tested.size();
  return out;
}

json correctness_counts(const json& result) {
  json out = {{"accuracy_counts", nullptr}, {"consistency_counts", nullptr}};
  if (const json& a = result.value("accuracy", json()); a.is_object()) {
    const json& g = a.value("correct_goodput", json());
    out["accuracy_counts"] = {{"correct", a.value("correct", 0)}, {"graded", a.value("graded", 0)},
                              {"unparsed", a.value("unparsed", 0)},
                              {"correct_goodput", g.is_object() ? g.value("rate_per_s", json(nullptr)) : json(nullptr)}};
  }
  if (const json& c = result.value("consistency", json()); c.is_object()) {
    out["consistency_counts"] = {{"identical", c.value("identical", 0)}, {"compared", c.value("compared", 0)}};
  }
  return out;
}

void pool_correctness(json& aggregate, const std::vector<json>& entries) {
  std::int64_t correct = 0, graded = 0, unparsed = 0, identical = 0, compared = 0;
  bool any_accuracy = false, any_consistency = false;
  std::vector<double> goodputs;
  for (const auto& e : entries) {
    if (const json& a = e.value("accuracy_counts", json()); a.is_object()) {
      any_accuracy = true;
      if (a.value("correct_goodput", json()).is_number()) goodputs.push_back(a["correct_goodput"].get<double>());
      correct += a.value("correct", std::int64_t{0});
      graded += a.value("graded", std::int64_t{0});
      unparsed += a.value("unparsed", std::int64_t{0});
    }
    if (const json& c = e.value("consistency_counts", json()); c.is_object()) {
      any_consistency = true;
      identical += c.value("identical", std::int64_t{0});
      compared += c.value("compared", std::int64_t{0});
    }
  }
  const auto rate = [](std::int64_t k, std::int64_t n) { return n > 0 ? json(static_cast<double>(k) / n) : json(nullptr); };
  aggregate["accuracy"] = nullptr;
  if (any_accuracy) {
    const auto ci = analysis::wilson_interval(correct, graded);
    aggregate["accuracy"] = {{"graded", graded}, {"correct", correct}, {"incorrect", graded - correct - unparsed},
                             {"unparsed", unparsed}, {"accuracy", rate(correct, graded)},
                             {"accuracy_ci95", {ci.lo, ci.hi}}, {"unparsed_rate", rate(unparsed, graded)},
                             {"from", "the trials' graded requests pooled"}};
    if (!goodputs.empty() && goodputs.size() == entries.size()) {
      std::sort(goodputs.begin(), goodputs.end());
      const std::size_t m = goodputs.size() / 2;
      const double median = goodputs.size() % 2 == 1 ? goodputs[m] : (goodputs[m - 1] + goodputs[m]) / 2;
      aggregate["accuracy"]["correct_goodput"] = {{"rate_per_s", median}, {"from", "the median across trials"}};
    }
  }
  aggregate["consistency"] = nullptr;
  if (any_consistency) {
    const auto ci = analysis::wilson_interval(identical, compared);
    aggregate["consistency"] = {{"compared", compared}, {"identical", identical},
                                {"exact_match_rate", rate(identical, compared)},
                                {"exact_match_ci95", {ci.lo, ci.hi}},
                                {"from", "the trials' compared requests pooled"}};
  }
}

json scorecard(const json& r) {
  const auto field = [&](const json& j, const char* k) { return j.is_object() ? j.value(k, json(nullptr)) : json(nullptr); };
  const json& acc = r.value("accuracy", json());
  const json& con = r.value("consistency", json());
  const json& slo = r.value("slo", json());
  const json& cost = r.value("cost", json());
  json energy = nullptr;
  const json& delta = r.value("server_metrics", json()).is_object() ? r["server_metrics"].value("delta", json()) : json();
  if (delta.is_object() && delta.value("energy_joules", json()).is_number()) {
    const double joules = delta["energy_joules"].get<double>();
    const double tokens = r.value("total_output_tokens", 0.0);
    energy = tokens > 0 ? json(joules / tokens) : json(nullptr);
  }
  const double completed = r.value("completed", 0.0);
  const double failed = r.value("failed", 0.0);
  const json& errors = r.value("errors", json());
  json by_class = json::object();
  if (errors.is_object() && errors.value("by_class", json()).is_object()) {
    for (const auto& [k, v] : errors["by_class"].items()) by_class[k] = v.is_object() ? v.value("count", json(nullptr)) : v;
  }
  return {
      {"correctness",
       {{"accuracy", field(acc, "accuracy")}, {"accuracy_ci95", field(acc, "accuracy_ci95")},
        {"unparsed_rate", field(acc, "unparsed_rate")},
        {"exact_match_rate", field(con, "exact_match_rate")}, {"exact_match_ci95", field(con, "exact_match_ci95")}}},
      {"performance",
       {{"request_goodput", r.value("request_goodput", json(nullptr))},
        {"correct_goodput", acc.is_object() ? field(acc.value("correct_goodput", json()), "rate_per_s") : json(nullptr)},
        {"request_throughput", r.value("request_throughput", json(nullptr))},
        {"p99_ttft_ms", r.value("p99_ttft_ms", json(nullptr))},
        {"p99_tpot_ms", r.value("p99_tpot_ms", json(nullptr))},
        {"p99_e2el_ms", r.value("p99_e2el_ms", json(nullptr))},
        {"slo_verdict", field(slo, "verdict")}}},
      {"cost",
       {{"per_million_output_tokens", field(cost, "per_million_output_tokens")},
        {"energy_per_output_token_j", energy}}},
      {"reliability",
       {{"error_rate", completed + failed > 0 ? json(failed / (completed + failed)) : json(nullptr)},
        {"errors_by_class", by_class},
        {"valid", r.value("validity", json()).is_object() ? r["validity"].value("valid", json(nullptr)) : json(nullptr)}}}};
}

std::string correctness_report(const json& result) {
  std::string o;
  if (const json& a = result.value("accuracy", json()); a.is_object()) {
    const json& ci = a["accuracy_ci95"];
    o += fmt::format("Accuracy:                         {:.1f}% [{:.1f}, {:.1f}] ({} of {} graded correct, {} "
                     "unparsed)\n",
                     100 * a["accuracy"].get<double>(), 100 * ci[0].get<double>(), 100 * ci[1].get<double>(),
                     a["correct"].get<std::int64_t>(), a["graded"].get<std::int64_t>(),
                     a["unparsed"].get<std::int64_t>());
    if (const json& g = a.value("correct_goodput", json()); g.is_object()) {
      // The run's SLO (score copies it): an --slo of accuracy only has no latency bound for a
      // request to meet (score said "no --slo given" of such a run).
      const json& slo = result.value("slo", json());
      const bool latency = slo.is_object() && slo.value("metrics", json()).is_array() && !slo["metrics"].empty();
      const bool any_slo = slo.is_object() || a.value("slo", json()).is_object();
      o += fmt::format("Correct goodput (req/s):          {:.2f} ({})\n", g.value("rate_per_s", 0.0),
                       latency   ? "met the SLO's latency bounds and graded correct"
                       : any_slo ? "graded correct; the --slo has no latency bound"
                                 : "graded correct; no --slo given");
    }
    if (const json& s = a.value("slo", json()); s.is_object()) {
      o += fmt::format("{:<34}{}\n", fmt::format("Accuracy SLO (>= {:g}):", s["min_accuracy"].get<double>()),
                       s["verdict"].get<std::string>());
    }
  }
  if (const json& c = result.value("consistency", json()); c.is_object()) {
    const std::int64_t compared = c.value("compared", std::int64_t{0});
    if (c.value("error", json()).is_string()) {
      o += fmt::format("{:<34}not measured: {}\n", "Consistency:", c["error"].get<std::string>());
    } else if (compared == 0) {
      o += "Consistency:                      nothing to compare (no successful answer had a reference answer)\n";
    } else {
      const json& ci = c["exact_match_ci95"];
      o += fmt::format("{:<34}{:.1f}% identical [{:.1f}, {:.1f}] ({} of {}, by {})\n",
                       fmt::format("Consistency (vs {}):",
                                   c["reference"].value("kind", "") == "run" ? "saved run" : "concurrency 1"),
                       100 * c["exact_match_rate"].get<double>(), 100 * ci[0].get<double>(),
                       100 * ci[1].get<double>(), c["identical"].get<std::int64_t>(), compared,
                       c.value("method", "words"));
      if (const json& fd = c.value("first_divergence", json()); fd.is_object()) {
        o += fmt::format("  first divergent token: p50 {} (min {}, max {})\n", fd["p50"].dump(), fd["min"].dump(),
                         fd["max"].dump());
      }
    }
  }
  if (!o.empty() && result.value("scorecard", json()).is_object()) {
    const json& sc = result["scorecard"];
    const auto pct = [](const json& v) { return v.is_number() ? fmt::format("{:.1f}%", 100 * v.get<double>()) : "-"; };
    const auto num = [](const json& v, int d) { return v.is_number() ? fmt::format("{:.{}f}", v.get<double>(), d) : "-"; };
    const json& c = sc["correctness"];
    const json& p = sc["performance"];
    const json& k = sc["cost"];
    const json& r = sc["reliability"];
    o += fmt::format("Scorecard: correctness {} accurate, {} identical | performance {} req/s goodput ({} correct), p99 "
                     "TTFT {} ms, SLO {} | cost {} per 1M output tokens, {} J/token | reliability {} errors, {}\n",
                     pct(c["accuracy"]), pct(c["exact_match_rate"]),
                     num(p["request_goodput"].is_number() ? p["request_goodput"] : p["request_throughput"], 2),
                     num(p["correct_goodput"], 2), num(p["p99_ttft_ms"], 1),
                     p["slo_verdict"].is_string() ? p["slo_verdict"].get<std::string>() : "-",
                     num(k["per_million_output_tokens"], 3), num(k["energy_per_output_token_j"], 4), pct(r["error_rate"]),
                     r["valid"].is_boolean() ? (r["valid"].get<bool>() ? "VALID" : "INVALID") : "-");
  }
  return o;
}

}  // namespace llmload::app
