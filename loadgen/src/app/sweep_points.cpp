// `llmload sweep`'s points: see sweep_points.hpp.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "sweep_points.hpp"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "llmload/analysis/stats.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "run_command.hpp"
#include "trials.hpp"

namespace llmload::app {

using nlohmann::json;

std::string load_text(double v) { return fmt::format("{:g}", v); }

namespace {

// The median of the values (null when there are none).
json median_or_null(std::vector<double> v) {
  const auto m = analysis::median(std::move(v));
  return m ? json(*m) : json(nullptr);
}

// The first workload item of a sweep's point at `load` (synthesized prompts): a fixed offset per
// load, 2^32 items apart, so that different loads draw disjoint prompts and the same load draws
// the same ones in every sweep (compare pairs them). Below 2^63: requests.jsonl's item is signed.
std::uint64_t first_item_of_load(double load) {
  std::uint64_t z = 0;
  static_assert(sizeof z == sizeof load);
  std::memcpy(&z, &load, sizeof z);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;  // splitmix64's finalizer
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (z & 0x7FFFFFFFULL) << 32;
}

// A trial's p99 TTFO (only when TTFO differs from TTFT: requests.reasoning_first > 0) and its
// prefix-cache hit rate, into the point.
void add_trial_extras(Point& p, const std::filesystem::path& trial_dir) {
  std::ifstream f(trial_dir / "result.json");
  if (!f) return;
  const json r = json::parse(f, nullptr, false);
  if (!r.is_object()) return;
  p.probe.add(probe_trial_entry(r));
  const json& reqs = r.value("requests", json());
  const bool reasoned = reqs.is_object() && reqs.value("reasoning_first", 0) > 0;
  if (reasoned && r.value("p99_ttfo_ms", json()).is_number()) p.p99_ttfo_ms.push_back(r["p99_ttfo_ms"].get<double>());
  const json& pc = r.value("prefix_cache", json());
  if (pc.is_object()) {
    const json& rate = pc.value("hit_rate", json()).is_number() ? pc["hit_rate"] : pc.value("server_hit_rate", json());
    if (rate.is_number()) p.prefix_cache_hit_rate.push_back(rate.get<double>());
  }
  const json& so = r.value("structured_output", json());
  if (so.is_object() && so.value("invalid_rate", json()).is_number()) {
    p.structured_invalid_rate.push_back(so["invalid_rate"].get<double>());
  }
}

// A point's correctness rate with its interval and count ({"rate", "ci95", "n"}), or null.
json point_rate(const json& aggregate, const char* section, const char* rate, const char* ci, const char* n) {
  const json& s = aggregate.value(section, json());
  if (!s.is_object() || !s.value(rate, json()).is_number()) return nullptr;
  return {{"rate", s[rate]}, {"ci95", s.value(ci, json(nullptr))}, {"n", s.value(n, json(nullptr))}};
}

}  // namespace

 
std::vector<json> Sweep::run_point(double load, std::int64_t trials, int* exit_code,
                                   const std::function<void(ScenarioConfig&)>& adjust) {
  Point& p = points_[load];
  p.load = load;
  p.dir = fmt::format("{}-{}", concurrency_ ? "concurrency" : "rate", load_text(load));
  ScenarioConfig cfg = base_;
  if (concurrency_) {
    if (cfg.scenario_explicit && cfg.kind != ScenarioKind::kConcurrency) {
      throw ConfigError("a sweep over --concurrency needs the concurrency scenario: drop --scenario or set it to "
                        "concurrency");
    }
    cfg.kind = ScenarioKind::kConcurrency;
    cfg.concurrency = static_cast<std::int64_t>(load);
  } else {
    if (cfg.scenario_explicit && cfg.kind != ScenarioKind::kServer) {
      throw ConfigError("a sweep over --request-rate needs the server scenario: drop --scenario or set it to server");
    }
    cfg.kind = ScenarioKind::kServer;
    cfg.request_rate = load;
  }
  cfg.trials = trials;
  cfg.output_dir = (std::filesystem::path(base_.output_dir) / p.dir).string();
  // --consistency: one concurrency-1 reference for every point (the first point's pass).
  if (cfg.consistency && cfg.consistency_reference.empty()) cfg.consistency_reference = shared_reference_;
  // Synthesized prompts: each load draws its own (first_item_of_load), so a server's prefix cache
  // does not serve a later point from an earlier one's prompts (a sweep's hit rate read 0% / 99% /
  // 99%). A dataset's rows, and --consistency's shared reference, stay the same at every point
  // (the same questions at every load).
  if (cfg.workload.dataset == "random" && !cfg.consistency) cfg.item_offset = first_item_of_load(load);
  if (adjust) adjust(cfg);
  RunHooks hooks;
  hooks.print_report = false;
  hooks.watch_saturation = !concurrency_;
  hooks.label = fmt::format("{} {}", concurrency_ ? "concurrency" : "rate", load_text(load));
  const std::size_t before = p.entries.size();
  TrialsOutcome t = run_trials(cfg, argv_, env_, hooks, p.entries, p.first);
  if (!t.result.is_object()) {  // stopped before its load: no point to record
    *exit_code = t.exit_code;
    if (p.entries.empty()) points_.erase(load);
    return {};
  }
  for (std::size_t i = before; i < t.entries.size(); ++i) {
    if (t.entries[i].value("dir", json()).is_string()) {
      add_trial_extras(p, std::filesystem::path(cfg.output_dir) / t.entries[i]["dir"].get<std::string>());
    }
  }
  p.entries = t.entries;
  p.aggregate = t.result;
  p.first = t.first;
  if (cfg.consistency && shared_reference_.empty()) {
    const auto ref = std::filesystem::path(cfg.output_dir) / "trial-1" / "consistency-reference";
    if (std::filesystem::exists(ref / "requests.jsonl")) shared_reference_ = ref.string();
  }
  *exit_code = t.exit_code;
  if (!base_.quiet) print_point(p);
  return {p.entries.begin() + static_cast<std::ptrdiff_t>(before), p.entries.end()};
}

json Sweep::sweep_json(const json& capacity) const {
  json points = json::array();
  for (const auto& [load, p] : points_) {
    const json& slo = p.aggregate.contains("slo") ? p.aggregate["slo"] : json();
    // The first trial's reason when any trial of the point stopped early, else null.
    json stopped = nullptr;
    json overloaded = nullptr;  // the first over-loaded trial's reason, else null
    for (const auto& e : p.entries) {
      if (stopped.is_null() && e["stopped_early"].is_string()) {
        stopped = fmt::format("trial {}: {}", e["trial"].dump(), e["stopped_early"].get<std::string>());
      }
      if (overloaded.is_null() && e.value("overloaded", false) && e["overload_reason"].is_string()) {
        overloaded = fmt::format("trial {}: {}", e["trial"].dump(), e["overload_reason"].get<std::string>());
      }
    }
    points.push_back({{"dir", p.dir},
                      {"offered", load},
                      {"trials", p.entries.size()},
                      {"verdict", slo.is_object() ? slo["verdict"] : json(nullptr)},
                      {"valid", p.aggregate.contains("validity") ? p.aggregate["validity"]["valid"] : json(nullptr)},
                      {"stopped_early", stopped},
                      {"overloaded", overloaded},
                      {"request_throughput", p.aggregate.value("request_throughput", json(nullptr))},
                      {"request_goodput", p.aggregate.value("request_goodput", json(nullptr))},
                      {"p99_ttft_ms", p.aggregate.value("p99_ttft_ms", json(nullptr))},
                      {"p99_ttfo_ms", median_or_null(p.p99_ttfo_ms)},
                      {"prefix_cache_hit_rate", median_or_null(p.prefix_cache_hit_rate)},
                      {"structured_invalid_rate", median_or_null(p.structured_invalid_rate)},
                      {"accuracy", point_rate(p.aggregate, "accuracy", "accuracy", "accuracy_ci95", "graded")},
                      {"consistency",
                       point_rate(p.aggregate, "consistency", "exact_match_rate", "exact_match_ci95", "compared")},
                      {"probe", p.probe.to_json()}});
  }
  return {{"schema_version", kSchemaVersion},
          {"artifact", "sweep"},
          {"load_kind", concurrency_ ? "concurrency" : "rate"},
          {"slo", base_.slo ? json(base_.slo->to_string()) : json(nullptr)},
          {"trials_per_point", base_.trials},
          {"points", points},
          {"capacity", capacity}};
}

bool Sweep::write(const json& capacity) const {
  std::ofstream f(std::filesystem::path(base_.output_dir) / "sweep.json");
  f << sweep_json(capacity).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
  return static_cast<bool>(f);
}

void Sweep::print_table(const json& capacity) const {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("============ llmload sweep over {} ({} points; medians across trials) ============",
                   concurrency_ ? "concurrency" : "request rate", points_.size()));
  // With --find-capacity: how the search counted each load (over-load, invalid and
  // superseded trials judged; see docs/statistics.md), beside the trials' own majority verdict.
  std::map<double, std::string> counted;
  if (capacity.is_object() && capacity.contains("points")) {
    for (const auto& cp : capacity["points"]) counted[cp["load"].get<double>()] = cp["verdict"].get<std::string>();
  }
  const bool graded = std::any_of(points_.begin(), points_.end(),
                                  [](const auto& kv) { return kv.second.aggregate.value("accuracy", json()).is_object(); });
  const bool compared = std::any_of(points_.begin(), points_.end(), [](const auto& kv) {
    return kv.second.aggregate.value("consistency", json()).is_object();
  });
  // Issue 19's columns, when some point has them: p99 TTFO (requests that reasoned first) and
  // the prefix-cache hit rate.
  const bool ttfo = std::any_of(points_.begin(), points_.end(), [](const auto& kv) { return !kv.second.p99_ttfo_ms.empty(); });
  const bool cache = std::any_of(points_.begin(), points_.end(),
                                 [](const auto& kv) { return !kv.second.prefix_cache_hit_rate.empty(); });
  const bool structured = std::any_of(points_.begin(), points_.end(),
                                      [](const auto& kv) { return !kv.second.structured_invalid_rate.empty(); });
  line(fmt::format("{:>10} {:>7} {:>10} {:>11} {:>12} {:>12} {:>10} {:>13} {:>8}{}{}{}{}{}{}", "offered", "trials", "req/s",
                   "out tok/s", "p99 TTFT ms", "p99 TPOT ms", "goodput", "SLO", "valid",
                   counted.empty() ? "" : fmt::format(" {:>13}", "search"),
                   graded ? fmt::format(" {:>9}", "accuracy") : "", compared ? fmt::format(" {:>9}", "identical") : "",
                   ttfo ? fmt::format(" {:>12}", "p99 TTFO ms") : "", cache ? fmt::format(" {:>10}", "cache hit") : "",
                   structured ? fmt::format(" {:>9}", "invalid") : ""));
  auto num = [](const json& j, const char* k, int d) {
    return j.contains(k) && j[k].is_number() ? fmt::format("{:.{}f}", j[k].get<double>(), d) : std::string("-");
  };
  for (const auto& [load, p] : points_) {
    const json& a = p.aggregate;
    bool stopped = false;
    bool overloaded = false;
    for (const auto& e : p.entries) {
      stopped = stopped || e["stopped_early"].is_string();
      overloaded = overloaded || e.value("overloaded", false);
    }
    const std::string verdict = a.contains("slo") && a["slo"].is_object() ? a["slo"].value("verdict", std::string("-")) : "-";
    const std::string search = counted.empty() ? "" : fmt::format(" {:>13}", counted.count(load) ? counted[load] : "-");
    auto pct = [&](const char* section, const char* key) {
      const json& s = a.value(section, json());
      return s.is_object() && s.value(key, json()).is_number() ? fmt::format("{:.1f}%", 100 * s[key].get<double>())
                                                               : std::string("-");
    };
    const json ttfo_p99 = median_or_null(p.p99_ttfo_ms);
    const json hit = median_or_null(p.prefix_cache_hit_rate);
    const json invalid = median_or_null(p.structured_invalid_rate);
    line(fmt::format("{:>10} {:>7} {:>10} {:>11} {:>12} {:>12} {:>10} {:>13} {:>8}{}{}{}{}{}{}", load_text(load),
                     p.entries.size(), num(a, "request_throughput", 2), num(a, "output_throughput", 1),
                     num(a, "p99_ttft_ms", 1), num(a, "p99_tpot_ms", 2), num(a, "request_goodput", 2),
                     verdict + (stopped ? "*" : "") + (overloaded && !stopped ? "!" : ""),
                     a.contains("validity") && a["validity"].value("valid", false) ? "VALID" : "INVALID", search,
                     graded ? fmt::format(" {:>9}", pct("accuracy", "accuracy")) : "",
                     compared ? fmt::format(" {:>9}", pct("consistency", "exact_match_rate")) : "",
                     ttfo ? fmt::format(" {:>12}", ttfo_p99.is_number() ? fmt::format("{:.1f}", ttfo_p99.get<double>()) : "-")
                          : "",
                     cache ? fmt::format(" {:>10}",
                                         hit.is_number() ? fmt::format("{:.1f}%", 100 * hit.get<double>()) : "-")
                           : "",
                     structured ? fmt::format(" {:>9}", invalid.is_number()
                                                            ? fmt::format("{:.2f}%", 100 * invalid.get<double>())
                                                            : "-")
                                : ""));
  }
  if (std::any_of(points_.begin(), points_.end(), [](const auto& kv) {
        return std::any_of(kv.second.entries.begin(), kv.second.entries.end(),
                           [](const json& e) { return e["stopped_early"].is_string(); });
      })) {
    line("* stopped early: over-saturated (in flight and TTFT grew without bound); counts as FAIL (its canceled "
         "requests are not failures)");
  }
  if (std::any_of(points_.begin(), points_.end(), [](const auto& kv) {
        return std::any_of(kv.second.entries.begin(), kv.second.entries.end(),
                           [](const json& e) { return e.value("overloaded", false); });
      })) {
    line("! over-loaded over the window (in flight or the server's queue grew, or completions fell behind "
         "arrivals): counts as FAIL");
  }
  std::vector<std::pair<std::string, const ProbeColumn*>> probe_rows;
  for (const auto& [load, p] : points_) probe_rows.emplace_back(load_text(load), &p.probe);
  out += probe_sweep_table(probe_rows);
  if (capacity.is_object()) print_capacity(capacity, line);
  line(std::string(98, '='));
  fmt::print("{}", out);
  std::fflush(stdout);
}

 void Sweep::print_capacity(const json& c, const std::function<void(const std::string&)>& line) const {
  const auto hp = c.value("highest_pass", json(nullptr));
  const auto lf = c.value("lowest_fail", json(nullptr));
  const std::string unit = concurrency_ ? "concurrency" : "req/s";
  const std::string slo = base_.slo ? base_.slo->to_string() : "?";
  if (c.value("valid", false) && hp.is_number()) {
    line(fmt::format("Capacity at the SLO {}: {} {} (VALID, confidence {}); lowest not passing {}", slo,
                     load_text(hp.get<double>()), unit, c.value("confidence", std::string("?")),
                     lf.is_number() ? load_text(lf.get<double>()) : "none"));
  } else {
    std::string why;
    for (const auto& r : c.value("invalid_reasons", json::array())) why += (why.empty() ? "" : "; ") + r.get<std::string>();
    line(fmt::format("Capacity at the SLO {}: NOT FOUND (INVALID: {}); highest passing {}, lowest not passing {}", slo,
                     why, hp.is_number() ? load_text(hp.get<double>()) : "none",
                     lf.is_number() ? load_text(lf.get<double>()) : "none"));
  }
  line(fmt::format("  bounded by: {}", c.value("bounded_by", std::string("-"))));
  for (const auto& n : c.value("notes", json::array())) line(fmt::format("  note: {}", n.get<std::string>()));
  line(fmt::format("  search stopped: {}", c.value("explanation", std::string())));
  if (hp.is_number() && c.contains("goodput_at_capacity") && c["goodput_at_capacity"].is_number()) {
    line(fmt::format("  goodput there: {:.2f} req/s, throughput {:.2f} req/s (medians of its trials)",
                     c["goodput_at_capacity"].get<double>(),
                     c["throughput_at_capacity"].is_number() ? c["throughput_at_capacity"].get<double>() : 0.0));
  }
}

void Sweep::print_point(const Point& p) const {
  const json& a = p.aggregate;
  auto num = [&](const char* k, int d) {
    return a.contains(k) && a[k].is_number() ? fmt::format("{:.{}f}", a[k].get<double>(), d) : std::string("-");
  };
  fmt::print(stderr, "llmload: {} {}: {} req/s, p99 TTFT {} ms, goodput {} req/s, SLO {} ({} trials)\n",
             concurrency_ ? "concurrency" : "rate", load_text(p.load), num("request_throughput", 2),
             num("p99_ttft_ms", 1), num("request_goodput", 2),
             a.contains("slo") && a["slo"].is_object() ? a["slo"].value("verdict", std::string("-")) : "-",
             p.entries.size());
}

}  // namespace llmload::app
