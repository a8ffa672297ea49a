// `llmload sweep`: see sweep_command.hpp and docs/artifact.md.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "sweep_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/capacity.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "run_command.hpp"
#include "trials.hpp"

namespace llmload::app {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxListedPoints = 100;

double parse_load(const std::string& s, bool integers, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !std::isfinite(v) || v <= 0 || (integers && v != std::floor(v))) {
    throw ConfigError(fmt::format("bad {} value '{}': give {} > 0, a list (1,2,4,8), a doubling range (1..64) or a "
                                  "stepped range (10..50:10)",
                                  what, s, integers ? "whole numbers" : "numbers"));
  }
  return v;
}

std::string load_text(double v) { return fmt::format("{:g}", v); }

std::string now_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

}  // namespace

std::vector<double> parse_load_list(const std::string& text, bool integers, const std::string& what) {
  std::vector<double> out;
  const auto dots = text.find("..");
  if (dots != std::string::npos) {
    const std::string a = text.substr(0, dots);
    std::string b = text.substr(dots + 2);
    std::optional<double> step;
    if (const auto colon = b.find(':'); colon != std::string::npos) {
      step = parse_load(b.substr(colon + 1), integers, what);
      b = b.substr(0, colon);
    }
    const double lo = parse_load(a, integers, what);
    const double hi = parse_load(b, integers, what);
    if (hi < lo) throw ConfigError(fmt::format("bad {} range '{}': the end is below the start", what, text));
    for (double v = lo; v <= hi * (1 + 1e-12); v = step ? v + *step : v * 2) {
      out.push_back(integers ? std::round(v) : v);
      if (out.size() > kMaxListedPoints) break;
    }
  } else {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      const auto comma = text.find(',', pos);
      const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      out.push_back(parse_load(item, integers, what));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > kMaxListedPoints) {
    throw ConfigError(fmt::format("{} '{}' gives more than {} points: use a coarser range", what, text, kMaxListedPoints));
  }
  return out;
}

void add_sweep_options(CLI::App& sub, SweepOptions& o) {
  add_run_options(sub, o.run);
  sub.add_flag("--find-capacity", o.find_capacity,
               "search the highest load whose p99 SLO verdict is PASS (needs --slo): exponential ramp, then bisection, "
               "more trials near the boundary");
  sub.add_option("--capacity-load", o.capacity_load, "what --find-capacity varies: rate (default) or concurrency")
      ->check(CLI::IsMember({"rate", "concurrency"}));
  sub.add_option("--capacity-start", o.capacity_start, "first load probed (default 1)");
  sub.add_option("--capacity-max", o.capacity_max, "highest load probed (default 10000 req/s, or concurrency 4096)");
  sub.add_option("--capacity-tolerance", o.capacity_tolerance,
                 "stop when the bracket (lowest fail - highest pass) is within this fraction of the highest pass "
                 "(default 0.05)");
  sub.add_option("--max-points", o.max_points, "most probes of the capacity search (default 20)");
  sub.add_option("--trials-near-boundary", o.trials_near_boundary,
                 "trials per load once the bracket is within 2 x tolerance (default 3; --trials sets them elsewhere)");
  sub.footer(R"(Each point is a full run (with its --trials) written to DIR/<rate|concurrency>-<load>/; DIR/sweep.json
lists the points (and the capacity bracket); DIR/report.html draws the latency-throughput curve,
goodput and attainment against offered load. --concurrency or --request-rate takes a list or a
range: 1,2,4,8 | 1..64 (doubling) | 10..50:10 (steps). Open-loop points stop early when the
server is over-saturated (requests in flight and TTFT growing without bound): they count as FAIL.
      llmload sweep --base-url http://127.0.0.1:8000 --concurrency 1..64 --num-requests 200 --output sweep
      llmload sweep --find-capacity --slo ttft:500ms,tpot:50ms --duration 60s --trials 1 --output cap
Exit codes: 0 done; 1 results could not be written; 2 bad flags or an unreachable endpoint;
130 interrupted (the points measured so far are written). See docs/artifact.md.)");
}

namespace {

struct Point {
  double load = 0;
  std::string dir;
  json first;                   // the first trial's result (conditions)
  std::vector<json> entries;    // trial entries over every probe of this load
  json aggregate;               // the point's trials artifact
};

class Sweep {
 public:
  Sweep(ScenarioConfig base, bool concurrency, const std::vector<std::string>& argv, json env)
      : base_(std::move(base)), concurrency_(concurrency), argv_(argv), env_(std::move(env)) {}

  // Runs `trials` more trials at `load`; returns the new trials' entries.
  std::vector<json> run_point(double load, std::int64_t trials, int* exit_code) {
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
    RunHooks hooks;
    hooks.print_report = false;
    hooks.watch_saturation = !concurrency_;
    hooks.label = fmt::format("{} {}", concurrency_ ? "concurrency" : "rate", load_text(load));
    const std::size_t before = p.entries.size();
    TrialsOutcome t = run_trials(cfg, argv_, env_, hooks, p.entries, p.first);
    p.entries = t.entries;
    p.aggregate = t.result;
    p.first = t.first;
    *exit_code = t.exit_code;
    if (!base_.quiet) print_point(p);
    return {p.entries.begin() + static_cast<std::ptrdiff_t>(before), p.entries.end()};
  }

  json sweep_json(const json& capacity) const {
    json points = json::array();
    for (const auto& [load, p] : points_) {
      const json& slo = p.aggregate.contains("slo") ? p.aggregate["slo"] : json();
      // The first trial's reason when any trial of the point stopped early, else null.
      json stopped = nullptr;
      for (const auto& e : p.entries) {
        if (stopped.is_null() && e["stopped_early"].is_string()) {
          stopped = fmt::format("trial {}: {}", e["trial"].dump(), e["stopped_early"].get<std::string>());
        }
      }
      points.push_back({{"dir", p.dir},
                        {"offered", load},
                        {"trials", p.entries.size()},
                        {"verdict", slo.is_object() ? slo["verdict"] : json(nullptr)},
                        {"valid", p.aggregate.contains("validity") ? p.aggregate["validity"]["valid"] : json(nullptr)},
                        {"stopped_early", stopped},
                        {"request_throughput", p.aggregate.value("request_throughput", json(nullptr))},
                        {"request_goodput", p.aggregate.value("request_goodput", json(nullptr))},
                        {"p99_ttft_ms", p.aggregate.value("p99_ttft_ms", json(nullptr))}});
    }
    return {{"schema_version", kSchemaVersion},
            {"artifact", "sweep"},
            {"load_kind", concurrency_ ? "concurrency" : "rate"},
            {"slo", base_.slo ? json(base_.slo->to_string()) : json(nullptr)},
            {"trials_per_point", base_.trials},
            {"points", points},
            {"capacity", capacity}};
  }

  bool write(const json& capacity) const {
    std::ofstream f(std::filesystem::path(base_.output_dir) / "sweep.json");
    f << sweep_json(capacity).dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    return static_cast<bool>(f);
  }

  void print_table(const json& capacity) const {
    std::string out;
    auto line = [&](const std::string& s) { out += s + "\n"; };
    line(fmt::format("============ llmload sweep over {} ({} points; medians across trials) ============",
                     concurrency_ ? "concurrency" : "request rate", points_.size()));
    line(fmt::format("{:>10} {:>7} {:>10} {:>11} {:>12} {:>12} {:>10} {:>13} {:>8}", "offered", "trials", "req/s",
                     "out tok/s", "p99 TTFT ms", "p99 TPOT ms", "goodput", "SLO", "valid"));
    auto num = [](const json& j, const char* k, int d) {
      return j.contains(k) && j[k].is_number() ? fmt::format("{:.{}f}", j[k].get<double>(), d) : std::string("-");
    };
    for (const auto& [load, p] : points_) {
      const json& a = p.aggregate;
      bool stopped = false;
      for (const auto& e : p.entries) stopped = stopped || e["stopped_early"].is_string();
      const std::string verdict = a.contains("slo") && a["slo"].is_object() ? a["slo"].value("verdict", std::string("-")) : "-";
      line(fmt::format("{:>10} {:>7} {:>10} {:>11} {:>12} {:>12} {:>10} {:>13} {:>8}", load_text(load), p.entries.size(),
                       num(a, "request_throughput", 2), num(a, "output_throughput", 1), num(a, "p99_ttft_ms", 1),
                       num(a, "p99_tpot_ms", 2), num(a, "request_goodput", 2), verdict + (stopped ? "*" : ""),
                       a.contains("validity") && a["validity"].value("valid", false) ? "VALID" : "INVALID"));
    }
    if (std::any_of(points_.begin(), points_.end(), [](const auto& kv) {
          return std::any_of(kv.second.entries.begin(), kv.second.entries.end(),
                             [](const json& e) { return e["stopped_early"].is_string(); });
        })) {
      line("* stopped early: over-saturated (in flight and TTFT grew without bound); counts as FAIL");
    }
    if (capacity.is_object()) {
      const auto hp = capacity.value("highest_pass", json(nullptr));
      const auto lf = capacity.value("lowest_fail", json(nullptr));
      line(fmt::format("Capacity at the SLO {}: {} (highest passing load); lowest failing {}; {}",
                       base_.slo ? base_.slo->to_string() : "?", hp.is_number() ? load_text(hp.get<double>()) : "none",
                       lf.is_number() ? load_text(lf.get<double>()) : "none", capacity.value("explanation", std::string())));
      if (hp.is_number() && capacity.contains("goodput_at_capacity") && capacity["goodput_at_capacity"].is_number()) {
        line(fmt::format("Goodput there: {:.2f} req/s (median of its trials)", capacity["goodput_at_capacity"].get<double>()));
      }
    }
    line(std::string(98, '='));
    fmt::print("{}", out);
    std::fflush(stdout);
  }

 private:
  void print_point(const Point& p) const {
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

  ScenarioConfig base_;
  bool concurrency_;
  std::vector<std::string> argv_;
  json env_;
  std::map<double, Point> points_;
};

analysis::TrialOutcome outcome_of(const json& e) {
  analysis::TrialOutcome o;
  const std::string v = e["slo_verdict"].is_string() ? e["slo_verdict"].get<std::string>() : "INCONCLUSIVE";
  o.verdict = v == "PASS" ? analysis::Verdict::kPass : v == "FAIL" ? analysis::Verdict::kFail : analysis::Verdict::kInconclusive;
  o.goodput = e["request_goodput"].is_number() ? e["request_goodput"].get<double>() : 0.0;
  o.throughput = e["request_throughput"].is_number() ? e["request_throughput"].get<double>() : 0.0;
  o.saturated = e["stopped_early"].is_string();
  return o;
}

}  // namespace

int sweep_command(const SweepOptions& o, int argc, char** argv) {
  const auto raw = [&](const char* name) -> std::string {
    const auto* opt = o.run.options.at(name);
    return opt->count() > 0 && !opt->results().empty() ? opt->results().back() : std::string();
  };
  const std::string conc_text = raw("concurrency");
  const std::string rate_text = raw("request-rate");
  ScenarioConfig cfg = build_config(o.run, argc, argv, {"concurrency", "request-rate"});
  if (cfg.fail_on_slo) {
    throw ConfigError("--fail-on-slo applies to `llmload run`; a sweep reports every point's verdict (and the capacity "
                      "with --find-capacity) in sweep.json");
  }
  if (cfg.trials < 1) cfg.trials = 1;
  if (cfg.shard.sharded() || cfg.shard.start_at) {
    throw ConfigError("a sweep cannot be sharded (--shard-count/--start-at): run a sharded `llmload run` per point");
  }
  if (!conc_text.empty() && !rate_text.empty()) {
    throw ConfigError("give either --concurrency or --request-rate as the swept load, not both");
  }
  if (cfg.output_dir.empty()) cfg.output_dir = "sweep-" + now_stamp();
  std::error_code ec;
  std::filesystem::create_directories(cfg.output_dir, ec);
  if (ec) throw ConfigError(fmt::format("cannot create --output directory '{}': {}", cfg.output_dir, ec.message()));

  const auto run_argv = redacted_argv(argc, argv);
  const json env = environment_settings(o.run, argc, argv);
  json capacity = nullptr;
  int exit_code = kExitOk;

  if (o.find_capacity) {
    if (!cfg.slo) {
      throw ConfigError("--find-capacity searches the highest load meeting an SLO: add --slo, e.g. --slo "
                        "ttft:500ms,tpot:50ms");
    }
    bool conc = o.capacity_load == "concurrency" || !conc_text.empty();
    if (!rate_text.empty()) conc = false;
    const std::string given = conc ? conc_text : rate_text;
    analysis::CapacityOptions copt;
    copt.start = o.capacity_start > 0 ? o.capacity_start : 1;
    copt.max_load = o.capacity_max > 0 ? o.capacity_max : (conc ? 4096 : 10000);
    if (!given.empty()) {
      // --concurrency 4..256 / --request-rate 1..100: the search's start and maximum.
      const auto loads = parse_load_list(given, conc, conc ? "--concurrency" : "--request-rate");
      copt.start = loads.front();
      if (loads.size() > 1) copt.max_load = loads.back();
    }
    if (copt.max_load < copt.start) {
      throw ConfigError(fmt::format("--capacity-max {} is below the start {}", copt.max_load, copt.start));
    }
    copt.tolerance = o.capacity_tolerance;
    copt.max_points = static_cast<std::size_t>(std::max(1, o.max_points));
    copt.integer_loads = conc;
    copt.trials = static_cast<std::size_t>(cfg.trials);
    copt.trials_near_boundary = static_cast<std::size_t>(std::max<std::int64_t>(o.trials_near_boundary, cfg.trials));
    std::optional<analysis::CapacitySearch> search;
    try {
      search.emplace(copt);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("bad capacity search settings: {}", e.what()));
    }
    Sweep sweep(cfg, conc, run_argv, env);
    while (auto probe = search->next()) {
      if (!cfg.quiet) {
        fmt::print(stderr, "llmload: capacity search: {} {} ({}, {} trials)\n", conc ? "concurrency" : "rate",
                   load_text(probe->load), probe->why, probe->trials);
      }
      const auto entries = sweep.run_point(probe->load, static_cast<std::int64_t>(probe->trials), &exit_code);
      analysis::PointOutcome outcome;
      for (const auto& e : entries) outcome.trials.push_back(outcome_of(e));
      if (outcome.trials.empty()) break;
      search->report(probe->load, outcome);
      capacity = analysis::to_json(search->result());
      if (!sweep.write(capacity)) exit_code = kExitFailure;
      if (exit_code != kExitOk) break;
    }
    capacity = analysis::to_json(search->result());
    capacity["tolerance"] = copt.tolerance;
    if (!sweep.write(capacity) && exit_code == kExitOk) exit_code = kExitFailure;
    sweep.print_table(capacity);
  } else {
    if (conc_text.empty() && rate_text.empty()) {
      throw ConfigError("a sweep needs the loads: --concurrency 1,2,4,8 (or 1..64) or --request-rate 1,2,5 (or "
                        "1..32), or --find-capacity --slo ...");
    }
    const bool conc = !conc_text.empty();
    const auto loads = parse_load_list(conc ? conc_text : rate_text, conc, conc ? "--concurrency" : "--request-rate");
    Sweep sweep(cfg, conc, run_argv, env);
    for (double load : loads) {
      sweep.run_point(load, cfg.trials, &exit_code);
      if (!sweep.write(capacity) && exit_code == kExitOk) exit_code = kExitFailure;
      if (exit_code != kExitOk) break;
    }
    sweep.print_table(capacity);
  }
  try {
    analysis::write_report(cfg.output_dir);
    if (!cfg.quiet) fmt::print(stderr, "llmload: sweep written to {}/sweep.json, report to {}/report.html\n",
                               cfg.output_dir, cfg.output_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload: warning: report not written: {}\n", e.what());
  }
  return exit_code;
}

}  // namespace llmload::app
