// `llmload sweep`: see sweep_command.hpp and docs/artifact.md.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "sweep_command.hpp"
#include "stop_signal.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/capacity.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/loadgen/record_store.hpp"
#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "output_dir.hpp"
#include "probe_summary.hpp"
#include "run_command.hpp"
#include "sweep_points.hpp"
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
               "search the highest load whose SLO verdict is PASS (needs --slo): a closed-loop calibration finds the "
               "saturation throughput and starts at half of it, then an exponential ramp (down if the start fails), "
               "bisection, more trials near the boundary; each probe is sized for its verdict");
  sub.add_option("--capacity-load", o.capacity_load, "what --find-capacity varies: rate (default) or concurrency")
      ->check(CLI::IsMember({"rate", "concurrency"}));
  sub.add_option("--capacity-start", o.capacity_start,
                 "first load probed (default: half the saturation throughput a short closed-loop calibration "
                 "measures; for concurrency, half of it x the median E2E)");
  sub.add_option("--capacity-max", o.capacity_max, "highest load probed (default 10000 req/s, or concurrency 4096)");
  sub.add_option("--capacity-min", o.capacity_min, "lowest load probed when the start fails (default start / 64)");
  sub.add_option("--capacity-tolerance", o.capacity_tolerance,
                 "stop when the bracket (lowest fail - highest pass) is within this fraction of the highest pass "
                 "(default 0.05)");
  sub.add_option("--capacity-min-window", o.capacity_min_window,
                 "each probe's measurement window lasts at least this (default 20s), --duration if longer, and at "
                 "least --capacity-window-e2e x the p99 E2E measured at that load");
  sub.add_option("--capacity-window-e2e", o.capacity_window_e2e,
                 "a probe's window must be this many times its p99 E2E, or a PASS is INCONCLUSIVE (default 10)");
  sub.add_option("--capacity-margin", o.capacity_margin,
                 "probes have enough requests to PASS with this many exceedances of the SLO (default 2: 838 "
                 "requests at p99)");
  sub.add_option("--capacity-max-extensions", o.capacity_max_extensions,
                 "an INCONCLUSIVE probe is run again twice as big at most this often (default 2)");
  sub.add_option("--max-points", o.max_points, "most probes of the capacity search (default 20)");
  sub.add_option("--trials-near-boundary", o.trials_near_boundary,
                 "trials per load once the bracket is within 2 x tolerance (default 3; --trials sets them elsewhere)");
  sub.footer(R"(Each point is a full run (with its --trials) written to DIR/<rate|concurrency>-<load>/; DIR/sweep.json
lists the points (and the capacity); DIR/report.html draws the latency-throughput curve,
goodput and attainment against offered load. --concurrency or --request-rate takes a list or a
range: 1,2,4,8 | 1..64 (doubling) | 10..50:10 (steps). Open-loop points stop early when the
server is over-saturated (requests in flight and TTFT growing without bound): they count as FAIL,
and the requests the stop cancels are not failures.
--find-capacity: every probe has a warmup (3 x p99 E2E, at least 2 s), then a window of at least
--capacity-min-window, --duration and 10 x p99 E2E, with the requests a PASS needs under early
stopping (--capacity-margin). A probe that over-loads (in flight or the server's queue growing,
completions behind arrivals) is a FAIL; an INVALID one is never a PASS; an INCONCLUSIVE one is
run again bigger. The answer says whether it is VALID, its confidence and its bracket.
      llmload sweep --base-url http://127.0.0.1:8000 --concurrency 1..64 --num-requests 200 --output sweep
      llmload sweep --base-url http://127.0.0.1:8000 --find-capacity --slo ttft:500ms,tpot:50ms --duration 60s --output cap
Exit codes: 0 done; 1 results could not be written; 2 bad flags or an unreachable endpoint;
130 interrupted (the points measured so far are written). See docs/artifact.md.)");
}

namespace {

double num(const json& j, const char* key, double fallback = std::nan("")) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// What a trial entry (trials.cpp trial_entry) shows, for analysis::judge_trial.
analysis::TrialEvidence evidence_of(const json& e) {
  analysis::TrialEvidence v;
  const std::string verdict = e["slo_verdict"].is_string() ? e["slo_verdict"].get<std::string>() : "INCONCLUSIVE";
  v.verdict = verdict == "PASS" ? analysis::Verdict::kPass
              : verdict == "FAIL" ? analysis::Verdict::kFail
                                  : analysis::Verdict::kInconclusive;
  v.valid = e.value("valid", true);
  if (e.contains("validity_reasons") && e["validity_reasons"].is_array()) {
    for (const auto& r : e["validity_reasons"]) v.invalid_codes.push_back(r.value("code", std::string("invalid")));
  }
  v.stopped_early = e["stopped_early"].is_string();
  v.overloaded = e.value("overloaded", false);
  v.overload_reason = e.contains("overload_reason") && e["overload_reason"].is_string() ? e["overload_reason"].get<std::string>() : "";
  v.window_s = num(e, "window_s", 0);
  v.e2e_p99_s = num(e, "p99_e2el_ms") / 1e3;
  v.exceedance_fraction = num(e, "slo_exceedance_fraction");
  v.goodput = num(e, "request_goodput", 0);
  v.throughput = num(e, "request_throughput", 0);
  return v;
}

// What the user bounded each run with; the probes are sized around it.
struct UserBounds {
  std::optional<Nanos> duration;
  std::optional<std::int64_t> requests;
  bool warmup = false;
  bool max_duration = false;
};

// A probe's size applied to its run (docs/statistics.md "Capacity search", probe sizing).
void apply_size(ScenarioConfig& c, const analysis::ProbeSize& z, const UserBounds& u, std::size_t extension) {
  const double scale = std::ldexp(1.0, static_cast<int>(extension));
  const double window_s = std::max(z.min_window_s, u.duration ? to_seconds(*u.duration) * scale : 0.0);
  const auto window = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(window_s));
  if (!u.warmup) {
    c.warmup = WarmupSpec{};
    c.warmup.duration = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(z.warmup_s));
  }
  if (u.requests && !u.duration) {
    c.num_requests = std::max(static_cast<std::int64_t>(static_cast<double>(*u.requests) * scale), z.min_requests);
    c.duration.reset();
    c.min_duration = window;
  } else {
    c.duration = window;
    c.num_requests.reset();
    c.min_requests = z.min_requests;
  }
  if (!u.max_duration) {
    // A bound that still leaves room for the requests the verdict needs at this rate.
    double need_s = window_s;
    if (c.kind == ScenarioKind::kServer && c.request_rate > 0) {
      need_s = std::max(need_s, static_cast<double>(z.min_requests) / c.request_rate);
    }
    const auto need = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(2 * need_s));
    c.max_duration = c.warmup.duration + std::max<Nanos>(need, std::chrono::minutes(5));
  }
}

// The saturation throughput of a short closed-loop ramp (concurrency 4, 16, 64, 256, 1024 until
// the throughput grows by less than 10%), for the search's start when --capacity-start is not given.
struct Calibration {
  double throughput = 0;        // the highest request throughput seen
  std::int64_t concurrency = 0;  // where
  double e2e_low_s = 0;          // median E2E at concurrency 4 (about unloaded)
  json steps = json::array();
  // p99 E2E of the lowest-concurrency step reaching `rate` req/s (or the last): a probe's first E2E basis.
  double e2e_at(double rate) const {
    for (const auto& s : steps) {
      if (s["request_throughput"].get<double>() >= rate) return s["p99_e2e_s"].get<double>();
    }
    return steps.empty() ? 0.0 : steps.back()["p99_e2e_s"].get<double>();
  }
};

Calibration calibrate(const ScenarioConfig& base, const std::vector<std::string>& argv, const json& env) {
  Calibration cal;
  for (std::int64_t c = 4; c <= 1024; c *= 4) {
    ScenarioConfig cfg = base;
    cfg.kind = ScenarioKind::kConcurrency;
    cfg.concurrency = c;
    cfg.num_requests = 3 * c + 20;
    cfg.duration.reset();
    cfg.min_duration.reset();
    cfg.min_requests.reset();
    cfg.max_duration = std::chrono::minutes(2);
    cfg.warmup = WarmupSpec{};
    cfg.warmup.requests = c;
    cfg.trials = 1;
    cfg.output_dir = (std::filesystem::path(base.output_dir) / fmt::format("calibrate-concurrency-{}", c)).string();
    std::filesystem::create_directories(cfg.output_dir);
    RunHooks hooks;
    hooks.print_report = false;
    hooks.label = fmt::format("calibration: concurrency {}", c);
    const RunOutcome r = run_once(cfg, argv, env, hooks);
    if (r.exit_code == kExitInterrupted) throw StopRequested();
    if (r.exit_code != kExitOk) throw ConfigError("the capacity search's calibration run was not written");
    const double x = num(r.result, "request_throughput", 0);
    const double e2e99 = num(r.result, "p99_e2el_ms", 0) / 1e3;
    cal.steps.push_back({{"concurrency", c}, {"request_throughput", x}, {"p99_e2e_s", e2e99},
                         {"median_e2e_s", num(r.result, "median_e2el_ms", 0) / 1e3}, {"dir", cfg.output_dir}});
    if (!base.quiet) {
      fmt::print(stderr, "llmload: capacity search: calibration at concurrency {}: {:.2f} req/s, p99 E2E {:.3f} s\n", c,
                 x, e2e99);
    }
    if (c == 4) cal.e2e_low_s = num(r.result, "median_e2el_ms", 0) / 1e3;
    const bool grew = x > 1.1 * cal.throughput;
    if (x > cal.throughput) {
      cal.throughput = x;
      cal.concurrency = c;
    }
    if (!grew) break;
  }
  if (!(cal.throughput > 0)) {
    throw ConfigError("the capacity search's calibration measured no throughput (every request failed?): check the "
                      "server, or give --capacity-start");
  }
  return cal;
}

// Rounds a load to 3 significant digits (a readable probe: 52.3 req/s, not 52.2861).
double round3(double v) { return std::stod(fmt::format("{:.3g}", v)); }

struct CapacityRun {
  json capacity;
  int exit_code = kExitOk;
};

analysis::ProbeSizing probe_sizing(const SweepOptions& o, const ScenarioConfig& cfg) {
  analysis::ProbeSizing sizing;
  sizing.percentile = cfg.slo->percentile;
  sizing.margin_exceedances = o.capacity_margin;
  try {
    sizing.min_window_s = to_seconds(parse_duration(o.capacity_min_window));
  } catch (const std::exception& e) {
    throw ConfigError(fmt::format("bad --capacity-min-window '{}': {} (e.g. 20s)", o.capacity_min_window, e.what()));
  }
  sizing.window_e2e = o.capacity_window_e2e;
  return sizing;
}

// --find-capacity: the search (analysis::CapacitySearch) over sized probes.
class CapacityDriver {
 public:
  CapacityDriver(const SweepOptions& o, const ScenarioConfig& cfg, bool conc, const UserBounds& user,
                 const std::vector<std::string>& argv, const json& env)
      : o_(o), cfg_(cfg), conc_(conc), user_(user), argv_(argv), env_(env), sizing_(probe_sizing(o, cfg)),
        sweep_(cfg, conc, argv, env) {}

  CapacityRun run(const std::string& given) {
    setup(given);
    while (auto probe = search_->next()) {
      if (stop_signal() != 0) {  // between probes: the search so far is written
        out_.exit_code = kExitInterrupted;
        break;
      }
      const analysis::PointOutcome outcome = run_probe(*probe);
      if (outcome.trials.empty()) break;
      search_->report(probe->load, outcome);
      if (!sweep_.write(answer())) out_.exit_code = kExitFailure;
      if (out_.exit_code != kExitOk) break;
    }
    out_.capacity = answer();
    if (!sweep_.write(out_.capacity) && out_.exit_code == kExitOk) out_.exit_code = kExitFailure;
    sweep_.print_table(out_.capacity);
    return out_;
  }

 private:
  const char* kind() const { return conc_ ? "concurrency" : "rate"; }

  // The search's options; its start from the calibration unless given.
  void setup(const std::string& given) {
    analysis::CapacityOptions copt;
    copt.max_load = o_.capacity_max > 0 ? o_.capacity_max : (conc_ ? 4096 : 10000);
    copt.min_load = o_.capacity_min;
    std::optional<double> start = o_.capacity_start > 0 ? std::optional<double>(o_.capacity_start) : std::nullopt;
    if (!given.empty()) {
      // --concurrency 4..256 / --request-rate 1..100: the search's start and maximum.
      const auto loads = parse_load_list(given, conc_, conc_ ? "--concurrency" : "--request-rate");
      start = loads.front();
      if (loads.size() > 1) copt.max_load = loads.back();
    }
    if (!start) {
      const Calibration cal = calibrate(cfg_, argv_, env_);
      start = conc_ ? std::max(1.0, std::floor(0.5 * cal.throughput * cal.e2e_low_s)) : round3(0.5 * cal.throughput);
      e2e_basis_ = conc_ ? cal.e2e_low_s : cal.e2e_at(*start);
      calibration_ = {{"saturation_throughput", cal.throughput}, {"at_concurrency", cal.concurrency},
                      {"median_e2e_s_at_concurrency_4", cal.e2e_low_s}, {"steps", cal.steps}, {"start", *start},
                      {"rule", conc_ ? "start = half of saturation throughput x median E2E (Little's law)"
                                     : "start = half of the saturation throughput"}};
      if (!cfg_.quiet) fmt::print(stderr, "llmload: capacity search: saturation {:.2f} req/s; starting at {} {}\n",
                                  cal.throughput, kind(), load_text(*start));
    }
    copt.start = *start;
    if (copt.max_load < copt.start) {
      throw ConfigError(fmt::format("--capacity-max {} is below the start {}", copt.max_load, copt.start));
    }
    copt.tolerance = o_.capacity_tolerance;
    copt.max_points = static_cast<std::size_t>(std::max(1, o_.max_points));
    copt.integer_loads = conc_;
    copt.trials = static_cast<std::size_t>(cfg_.trials);
    copt.trials_near_boundary = static_cast<std::size_t>(std::max<std::int64_t>(o_.trials_near_boundary, cfg_.trials));
    copt.max_extensions = static_cast<std::size_t>(std::max(0, o_.capacity_max_extensions));
    try {
      search_.emplace(copt);
      (void)analysis::size_probe(sizing_, 0, 0);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("bad capacity search settings: {}", e.what()));
    }
    copt_ = copt;
  }

  // Sizes and runs one probe; returns its trials as the search counts them.
  analysis::PointOutcome run_probe(const analysis::Probe& probe) {
    // The E2E basis: measured at the highest load probed at or below this one, else the calibration's.
    double basis = e2e_basis_;
    for (const auto& [load, e2e] : e2e_at_) {
      if (load <= probe.load) basis = e2e;
    }
    // A load re-probed only because the client lagged is run again at the same size, not bigger.
    const std::size_t grow = probe.extension - std::min(probe.extension, lag_retries_[probe.load]);
    const analysis::ProbeSize size = analysis::size_probe(sizing_, basis, grow);
    const auto adjust = [&](ScenarioConfig& c) { apply_size(c, size, user_, grow); };
    probes_.push_back({{"load", probe.load}, {"why", probe.why}, {"extension", probe.extension},
                       {"e2e_basis_s", std::isfinite(basis) ? json(basis) : json(nullptr)}, {"warmup_s", size.warmup_s},
                       {"min_window_s", size.min_window_s}, {"min_requests", size.min_requests}});
    if (!cfg_.quiet) print_probe(probe, adjust);
    const auto entries = sweep_.run_point(probe.load, static_cast<std::int64_t>(probe.trials), &out_.exit_code, adjust);
    analysis::PointOutcome outcome;
    bool lagged = false;
    bool lag_only = true;  // every inconclusive trial of this probe is so for schedule lag
    for (const auto& e : entries) {
      const analysis::TrialEvidence ev = evidence_of(e);
      outcome.trials.push_back(analysis::judge_trial(ev, sizing_));
      if (!cfg_.quiet) {
        fmt::print(stderr, "llmload: capacity search: {} {}: {}\n", kind(), load_text(probe.load),
                   outcome.trials.back().note);
      }
      if (!ev.overloaded && !ev.stopped_early && std::isfinite(ev.e2e_p99_s) && ev.e2e_p99_s > 0) {
        e2e_at_[probe.load] = ev.e2e_p99_s;
      }
      const bool lag = std::count(ev.invalid_codes.begin(), ev.invalid_codes.end(), "schedule_lag") > 0;
      lagged = lagged || lag;
      if (outcome.trials.back().verdict == analysis::Verdict::kInconclusive && !lag) lag_only = false;
    }
    // Lag comes from the machine running llmload (the operating system waking it late), not the
    // server: the probe is INCONCLUSIVE and re-run at the same size, not a bigger one.
    if (lagged && lag_only) ++lag_retries_[probe.load];
    return outcome;
  }

  template <typename Adjust>
  void print_probe(const analysis::Probe& probe, const Adjust& adjust) const {
    ScenarioConfig shown = cfg_;
    adjust(shown);
    fmt::print(stderr, "llmload: capacity search: {} {} ({}, {} trials): {} after a {} warmup\n", kind(),
               load_text(probe.load), probe.why, probe.trials,
               shown.duration ? fmt::format("{} window, >= {} requests", format_duration(*shown.duration),
                                            shown.min_requests.value_or(0))
                              : fmt::format("{} requests, window >= {}", shown.num_requests.value_or(0),
                                            format_duration(shown.min_duration.value_or(Nanos(0)))),
               shown.warmup.by_time() ? format_duration(shown.warmup.duration) : std::string("given"));
  }

  json answer() const {
    json c = analysis::to_json(search_->result());
    c["tolerance"] = copt_.tolerance;
    c["calibration"] = calibration_;
    c["probe_sizing"] = {{"percentile", sizing_.percentile}, {"margin_exceedances", sizing_.margin_exceedances},
                         {"min_window_s", sizing_.min_window_s}, {"window_e2e", sizing_.window_e2e},
                         {"warmup_e2e", sizing_.warmup_e2e}, {"min_warmup_s", sizing_.min_warmup_s},
                         {"max_extensions", copt_.max_extensions}, {"probes", probes_}};
    return c;
  }

  const SweepOptions& o_;
  const ScenarioConfig& cfg_;
  const bool conc_;
  const UserBounds user_;
  const std::vector<std::string>& argv_;
  const json& env_;
  const analysis::ProbeSizing sizing_;
  Sweep sweep_;
  analysis::CapacityOptions copt_;
  std::optional<analysis::CapacitySearch> search_;
  json calibration_ = nullptr;
  double e2e_basis_ = std::nan("");
  std::map<double, double> e2e_at_;           // p99 E2E (s) of the loads probed, not over-loaded
  std::map<double, std::size_t> lag_retries_;  // re-probes of a load that were for schedule lag only
  json probes_ = json::array();
  CapacityRun out_;
};

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
  check_output_dir_unused(cfg.output_dir, cfg.overwrite);  // a sweep never overwrites another's points
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
    UserBounds user;
    user.duration = cfg.duration;
    if (cfg.num_requests && !(raw("num-requests").empty() && !cfg.duration && *cfg.num_requests == 100)) {
      user.requests = cfg.num_requests;  // given (the default 100 is not a request to size by)
    }
    user.warmup = !cfg.warmup.none();
    user.max_duration = cfg.max_duration.has_value();
    try {
      CapacityRun run = CapacityDriver(o, cfg, conc, user, run_argv, env).run(conc ? conc_text : rate_text);
      capacity = std::move(run.capacity);
      exit_code = run.exit_code;
    } catch (const StopRequested&) {
      if (!cfg.quiet) fmt::print(stderr, "llmload: signal received during the capacity search's calibration: stopped\n");
      return kExitInterrupted;
    }
  } else {
    if (conc_text.empty() && rate_text.empty()) {
      throw ConfigError("a sweep needs the loads: --concurrency 1,2,4,8 (or 1..64) or --request-rate 1,2,5 (or "
                        "1..32), or --find-capacity --slo ...");
    }
    const bool conc = !conc_text.empty();
    const auto loads = parse_load_list(conc ? conc_text : rate_text, conc, conc ? "--concurrency" : "--request-rate");
    // Every point's descriptors are checked before the first runs (issue 16: a point too big for
    // the open-file limit was refused only after the points before it had run).
    for (double load : loads) {
      ScenarioConfig point = cfg;
      if (conc) {
        point.kind = ScenarioKind::kConcurrency;
        point.concurrency = static_cast<std::int64_t>(load);
      }
      check_open_file_limit(most_in_flight(point));
    }
    Sweep sweep(cfg, conc, run_argv, env);
    for (double load : loads) {
      if (stop_signal() != 0) {  // between points: the points so far are written
        exit_code = kExitInterrupted;
        break;
      }
      sweep.run_point(load, cfg.trials, &exit_code);
      if (!sweep.write(capacity) && exit_code == kExitOk) exit_code = kExitFailure;
      if (exit_code != kExitOk) break;
    }
    sweep.print_table(capacity);
  }
  try {
    analysis::HtmlReportOptions report_options;
    report_options.keep_records = compact_record_keeper();  // each point's requests.jsonl parsed once
    analysis::write_report(cfg.output_dir, report_options);
    if (!cfg.quiet) fmt::print(stderr, "llmload: sweep written to {}/sweep.json, report to {}/report.html\n",
                               cfg.output_dir, cfg.output_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload: warning: report not written: {}\n", e.what());
  }
  return exit_code;
}

}  // namespace llmload::app
