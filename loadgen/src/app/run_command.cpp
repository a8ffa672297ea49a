// `llmload run` (and each rank of llmload-mpi): see run_command.hpp.
#include <cmath>
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "run_command.hpp"

#include "file_write.hpp"
#include "output_dir.hpp"
#include "rebuild.hpp"
#include "run_journal.hpp"
#include "stop_signal.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include "llmload/analysis/report.hpp"
#include "llmload/analysis/stage_metrics.hpp"
#include "llmload/analysis/token_accounting.hpp"
#include "llmload/common/build_info.hpp"
#include "llmload/common/duration.hpp"
#include "llmload/common/process_limits.hpp"
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/overload.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/calibration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/net/asio_transport.hpp"
#include "llmload/loadgen/net/driver.hpp"
#include "llmload/loadgen/net/metrics_scraper.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/redact.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/shard_plan.hpp"
#include "llmload/loadgen/url.hpp"
#include "llmload/loadgen/workload.hpp"
#include "progress.hpp"
#include "settings.hpp"
#include "trials.hpp"

namespace llmload::app {
namespace {

using nlohmann::json;

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

// Checks before the run that results can be written there (nothing measured is lost later).
json arrivals_json(const ScenarioConfig& cfg) {
  if (cfg.timed_arrivals) return {{"process", "trace"}, {"description", "each request at its own timestamp"}};
  if (cfg.kind == ScenarioKind::kOffline) return {{"process", "all-at-start"}};
  if (cfg.kind == ScenarioKind::kConcurrency || cfg.kind == ScenarioKind::kSingleStream) return {{"process", "closed-loop"}};
  json a = {{"process", cfg.arrivals.process},
            {"burstiness", cfg.arrivals.process == "gamma" ? json(cfg.arrivals.burstiness) : json(nullptr)},
            {"ramp", cfg.arrivals.ramp},
            {"ramp_duration_s", std::chrono::duration<double>(cfg.arrivals.ramp_duration).count()},
            {"ramp_start_rate", cfg.arrivals.ramp_start_rate}};
  if (cfg.kind == ScenarioKind::kStages) {
    json stages = json::array();
    for (const auto& st : cfg.arrivals.stages) {
      stages.push_back({{"kind", st.concurrency ? "concurrency" : "rate"},
                        {"value", st.value},
                        {"duration_s", std::chrono::duration<double>(st.duration).count()}});
    }
    a["stages"] = std::move(stages);
  }
  return a;
}

json conditions_json(const ScenarioConfig& cfg, const BaseUrl& url, const RequestBuilder& builder,
                     const net::ModelsInfo& models, const std::vector<std::string>& argv, const std::string& start_iso) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json scenario = {
      {"scenario", to_string(cfg.kind)},
      {"backend", builder.backend().name},
      {"endpoint", cfg.endpoint == ApiKind::kChat ? "chat" : cfg.endpoint == ApiKind::kSglang ? "generate" : "completions"},
      {"stream", cfg.stream},
      {"ignore_eos", cfg.ignore_eos},
      {"continuous_usage_stats", cfg.stream && cfg.continuous_usage && cfg.endpoint != ApiKind::kSglang},
      {"extra_body", cfg.extra_body.empty() ? json(nullptr) : json::parse(cfg.extra_body, nullptr, false)},
      {"extra_headers", [&] {
         json h = json::array();
         for (const auto& kv : cfg.headers) h.push_back(kv.first);  // names only: values may be secrets
         return h;
       }()},
      {"turns", cfg.turns},
      {"think_time_s", std::chrono::duration<double>(cfg.think_time).count()},
      {"input_tokens", cfg.input_tokens},
      {"output_tokens", cfg.output_tokens},
      {"num_requests", cfg.num_requests ? json(*cfg.num_requests) : json(nullptr)},
      {"duration_s", cfg.duration ? json(std::chrono::duration<double>(*cfg.duration).count()) : json(nullptr)},
      {"warmup", cfg.warmup.automatic ? json("auto")
                 : cfg.warmup.by_time()
                     ? json(fmt::format("{}s", std::chrono::duration<double>(cfg.warmup.duration).count()))
                     : json(cfg.warmup.requests)},
      {"request_rate", cfg.kind == ScenarioKind::kServer ? json(cfg.request_rate) : json(nullptr)},
      {"concurrency", cfg.kind == ScenarioKind::kConcurrency || cfg.kind == ScenarioKind::kSingleStream
                          ? json(cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency)
                          : json(nullptr)},
      {"max_inflight", cfg.max_inflight ? json(*cfg.max_inflight) : json(nullptr)},
      {"arrival_process", arrivals_json(cfg)["process"]},
      {"arrivals", arrivals_json(cfg)},
      {"timeout_s", std::chrono::duration<double>(cfg.timeout).count()},
      {"idle_timeout_s", std::chrono::duration<double>(cfg.idle_timeout).count()},
      {"connect_timeout_s", std::chrono::duration<double>(cfg.connect_timeout).count()},
      {"schedule_spin_us", std::chrono::duration<double, std::micro>(cfg.schedule_spin).count()},
      {"first_token_timeout_s", cfg.first_token_timeout.count() > 0 ? json(std::chrono::duration<double>(cfg.first_token_timeout).count()) : json(nullptr)},
      {"inter_token_timeout_s", cfg.inter_token_timeout.count() > 0 ? json(std::chrono::duration<double>(cfg.inter_token_timeout).count()) : json(nullptr)},
      {"tls", url.scheme == "https" ? json({{"verify", !cfg.insecure}, {"ca_cert", cfg.ca_cert.empty() ? json("system") : json(cfg.ca_cert)}}) : json(nullptr)},
      {"slo", cfg.slo ? json(cfg.slo->to_string()) : json(nullptr)},
  };
  json server_models = json::parse(models.raw, nullptr, false);
  const HostInfo hostinfo = host_info();
  return {
      {"tool", {{"name", "llmload"}, {"version", kVersion}, {"git_commit", git_commit()}, {"build", kBuildType},
                {"compiler", kCompiler}}},
      {"command_line", argv},
      {"start_time", start_iso},
      {"scenario", scenario},
      {"seeds", {{"base", cfg.seed}, {"arrival", arrival_seed(cfg.seed)}, {"data", data_seed(cfg.seed)}}},
      {"endpoint", {{"base_url", url.to_string()}, {"path", builder.path()}, {"api_key", cfg.api_key.empty() ? "none" : "set (redacted)"}}},
      {"model", cfg.model},
      {"server", {{"models", server_models.is_discarded() ? json(nullptr) : server_models}}},
      {"machine", {{"hostname", host},
                   {"hardware_threads", std::thread::hardware_concurrency()},
                   {"cpu_model", hostinfo.cpu_model},
                   {"kernel", hostinfo.kernel},
                   {"local_gpus", hostinfo.gpus}}},
      {"definitions", {{"document", "docs/metrics.md"},
                       {"ttft", "t_first - t_send"},
                       {"tpot", "(e2e - ttft) / (n_out - 1), n_out >= 2"},
                       {"itl", "gaps between output events, token-weighted"},
                       {"e2e", "t_last - t_send"},
                       {"response_time", "same, measured from t_intended"},
                       {"histograms", "HdrHistogram, microseconds, 3 significant digits"}}},
  };
}

// Settings that only the workload knows (trace replay, timestamped datasets) are decided here;
// everything else is checked before any connection is made.
bool may_be_timed(const ScenarioConfig& cfg) {
  return cfg.workload.dataset == "trace" ||
         (cfg.workload.dataset == "custom" && !cfg.scenario_explicit && cfg.request_rate == 0);
}

// Prompt calibration with the server's /tokenize (or the built-in estimate).
CalibrationResult calibrate(const ScenarioConfig& cfg, boost::asio::io_context& ioc, Transport& transport,
                            const BaseUrl& url) {
  if (cfg.prompt_calibration == "estimate") {
    return CalibrationResult{TokenModel::builtin(), estimate_report("--prompt-calibration estimate")};
  }
  net::TokenizeTarget target{url.path, url.host_header(), cfg.api_key, cfg.model, cfg.endpoint == ApiKind::kChat,
                             cfg.headers};
  TokenCounter count = [&](const std::string& prompt) { return net::tokenize_count(ioc, transport, target, prompt); };
  std::optional<CalibrationResult> r;
  try {
    r = calibrate_token_model(count, cfg.input_tokens, data_seed(cfg.seed));
  } catch (const ConfigError& e) {
    if (cfg.prompt_calibration == "tokenize") throw;
    return CalibrationResult{TokenModel::builtin(), estimate_report(std::string("calibration failed: ") + e.what())};
  }
  if (r) return *r;
  if (cfg.prompt_calibration == "tokenize") {
    throw ConfigError(fmt::format("--prompt-calibration tokenize: POST {}/tokenize is not available at this server; use "
                                  "--prompt-calibration estimate",
                                  url.to_string()));
  }
  return CalibrationResult{TokenModel::builtin(), estimate_report("the server has no /tokenize")};
}

// What a shard's artifact records of its shard (conditions.shard), with its actual start.
json shard_json(const ScenarioConfig& global, const ScenarioConfig& local, WallTime wall_start) {
  json j = describe_shard(global, local);
  j["actual_start"] = format_rfc3339(wall_start);
  j["start_skew_ms"] = global.shard.start_at
                           ? json(std::chrono::duration<double, std::milli>(wall_start - *global.shard.start_at).count())
                           : json(nullptr);
  return j;
}

}  // namespace

void check_start_at(WallTime start_at, WallTime now) {
  if (start_at + kStartLateTolerance < now) {
    throw ConfigError(fmt::format("--start-at {} has passed ({} ago): the shards cannot start together; give a time far "
                                  "enough ahead for every shard to be launched and to probe the server, e.g. "
                                  "--start-at $(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)",
                                  format_rfc3339(start_at), format_duration(now - start_at)));
  }
  if (start_at - now > std::chrono::hours(24 * 7)) {
    throw ConfigError(fmt::format("--start-at {} is more than a week ahead: give seconds (not milliseconds) since the "
                                  "epoch, or an RFC 3339 UTC time such as 2025-06-01T12:00:00Z",
                                  format_rfc3339(start_at)));
  }
}

bool sleep_until_wall(WallTime t) {
  while (stop_signal() == 0) {
    const auto now = std::chrono::system_clock::now();
    if (now >= t) return true;
    if (!sleep_unless_stopped(std::min<std::chrono::nanoseconds>(t - now, std::chrono::seconds(1)))) return false;
  }
  return false;
}

// --verbose: the server-metric cross-checks and how the window was chosen, on stderr.
static void print_cross_checks(const json& result) {
  if (result.contains("window") && result["window"].is_object()) {
    fmt::print(stderr, "llmload: window {:.3f}-{:.3f} s: {}\n", result["window"].value("start_s", 0.0),
               result["window"].value("end_s", 0.0), result["window"].value("method", std::string("?")));
  }
  const json& t = result.contains("ttft_cross_check") ? result["ttft_cross_check"] : json();
  if (t.is_object()) fmt::print(stderr, "llmload: TTFT client vs server: {}\n", t.dump());
  const json& l = result.contains("littles_law") ? result["littles_law"] : json();
  if (l.is_object()) {
    fmt::print(stderr, "llmload: Little's law: {}\n",
               l.value("available", false) ? l.value("explanation", std::string("?")) : l.value("reason", std::string("?")));
  }
}

// Little's law across client and server: the server's mean requests in the system (running +
// waiting, its own /metrics series, sampled inside the window) against the client's request
// throughput x mean E2E. Null when the server gave no such series.
static json littles_law_check(const json& result, const analysis::RunMetrics& metrics) {
  const json& sm = result["server_metrics"];
  if (!sm.is_object() || !sm.value("available", false) || !sm.contains("series")) return nullptr;
  const json& series = sm["series"];
  if (!series.contains("t_s") || !series.contains("running") || !series.contains("waiting")) return nullptr;
  const double start = std::chrono::duration<double>(metrics.window.start).count();
  const double end = std::chrono::duration<double>(metrics.window.end).count();
  double sum = 0;
  int n = 0;
  for (std::size_t i = 0; i < series["t_s"].size(); ++i) {
    const json& t = series["t_s"][i];
    const json& r = series["running"][i];
    const json& w = series["waiting"][i];
    if (!t.is_number() || !r.is_number() || !w.is_number()) continue;
    if (t.get<double>() < start || t.get<double>() > end) continue;
    sum += r.get<double>() + w.get<double>();
    ++n;
  }
  const auto& e2e = metrics.latency.at(analysis::Metric::kE2e);
  if (n < 3 || e2e.count == 0) {
    return json{{"available", false}, {"reason", "fewer than 3 server samples inside the measurement window"}};
  }
  if (sum == 0) {
    return json{{"available", false},
                {"reason", "the server's running and waiting gauges stayed at 0 during the run (it does not count "
                           "requests in flight in this mode, e.g. llmload-server's fixed latency model)"}};
  }
  // The server's count is sampled n times: for a Poisson-like number in system with mean L, the
  // sample mean's standard error is about sqrt(L / n); two of them widen the 10% tolerance.
  const double predicted = metrics.request_throughput * e2e.mean_us / 1e6;
  const double sampling = predicted > 0 ? 2 * std::sqrt(std::max(predicted, 1.0) / n) / predicted : 0;
  const analysis::LittleCheck c = analysis::littles_law(sum / n, metrics.request_throughput, e2e.mean_us / 1e6,
                                                        0.10 + sampling, end - start);
  return json{{"available", true},
              {"server_mean_in_system", c.measured_l},
              {"client_throughput_x_mean_e2e", c.predicted_l},
              {"relative_deviation", c.relative_deviation},
              {"tolerance", c.tolerance},
              {"agrees", c.agrees},
              {"samples", n},
              {"sampling_tolerance", sampling},
              {"explanation", c.explanation},
              {"caveat", "the server counts every client and its own queue; it is sampled every "
                         "--server-metrics-interval, so short runs give few samples"}};
}

// Over-load over the window (analysis/overload.hpp): the client's requests in flight, the
// server's waiting queue (its /metrics series, when scraped) and completions against arrivals.
static json overload_check(const json& result, const analysis::RunMetrics& metrics,
                           std::span<const analysis::RequestRecord> records) {
  std::vector<analysis::QueueSample> waiting;
  const json& sm = result["server_metrics"];
  if (sm.is_object() && sm.value("available", false) && sm.contains("series")) {
    const json& series = sm["series"];
    if (series.contains("t_s") && series.contains("waiting") && series["t_s"].size() == series["waiting"].size()) {
      for (std::size_t i = 0; i < series["t_s"].size(); ++i) {
        const json& t = series["t_s"][i];
        const json& w = series["waiting"][i];
        if (t.is_number() && w.is_number()) waiting.push_back({t.get<double>(), w.get<double>()});
      }
    }
  }
  return analysis::to_json(analysis::detect_overload(records, metrics.window.start, metrics.window.end, waiting));
}

std::int64_t most_in_flight(const ScenarioConfig& cfg) {
  std::int64_t n = cfg.max_inflight.value_or(0);
  if (cfg.kind == ScenarioKind::kConcurrency) n = cfg.concurrency;
  // Offline: every request at once, unless capped.
  if (cfg.kind == ScenarioKind::kOffline && !cfg.max_inflight && cfg.num_requests) {
    n = *cfg.num_requests + cfg.warmup.requests;
  }
  for (const auto& st : cfg.arrivals.stages) {
    if (st.concurrency) n = std::max(n, static_cast<std::int64_t>(st.value));
  }
  return n;
}

void check_open_file_limit(std::int64_t in_flight) {
  // Each request in flight holds a connection (a descriptor): refuse a load the open-file limit
  // cannot hold instead of failing requests with EMFILE.
  raise_open_file_limit();
  if (auto limit = open_file_limit(); limit && in_flight > 0 && static_cast<std::uint64_t>(in_flight) + 64 > *limit) {
    throw ConfigError(fmt::format("{} requests in flight need {} connections, but the open-file limit is {}: lower "
                                  "--concurrency/--max-inflight (or --num-requests offline) or raise the limit "
                                  "(ulimit -n)",
                                  in_flight, in_flight, *limit));
  }
}

int slo_gate(const ScenarioConfig& cfg, const json& result, int exit_code) {
  return slo_gate(cfg.fail_on_slo, result, exit_code);
}

// Precedence (docs/artifact.md, "Exit codes"): 6 nothing measured (nothing_measured_gate) > 3 a
// clear FAIL > 5 INVALID > 3 FAIL > 4 INCONCLUSIVE. A FAIL is clear when it holds with the
// client's schedule lag taken out (judged from t_send too): no flag on the run can explain it
// away, so a CI gate tells a run past capacity (3) from one it cannot trust (5).
int slo_gate(bool fail_on_slo, const json& result, int exit_code) {
  if (!fail_on_slo || exit_code != kExitOk) return exit_code;
  const json& slo = result.contains("slo") ? result["slo"] : json();
  const std::string verdict = slo.is_object() ? slo.value("verdict", std::string()) : std::string();
  const std::string service = slo.is_object() ? slo.value("service_view_verdict", verdict) : std::string();
  if (verdict == "FAIL" && service == "FAIL") return kExitSloFail;
  const json& v = result.contains("validity") ? result["validity"] : json();
  if (v.is_object() && v.contains("valid") && v["valid"].is_boolean() && !v["valid"].get<bool>()) return kExitInvalid;
  if (!slo.is_object()) return exit_code;  // no --slo: nothing to gate on (validate() refuses that combination)
  if (verdict == "FAIL") return kExitSloFail;
  if (verdict == "INCONCLUSIVE") return kExitSloInconclusive;
  return exit_code;
}

namespace {

// "20 failed, most common: http_status (20, e.g. HTTP 500: ...)" from a run's result.json.
std::string failures_in_words(const json& result) {
  const std::int64_t failed = result.value("failed", std::int64_t{0});
  if (failed == 0) return "none completed in the measurement window and none failed";
  std::string words = fmt::format("all {} failed", failed);
  const json* by_class = nullptr;
  if (result.contains("errors") && result["errors"].is_object() && result["errors"].contains("by_class")) {
    by_class = &result["errors"]["by_class"];
  }
  if (by_class != nullptr && by_class->is_object() && !by_class->empty()) {
    std::string top;
    std::int64_t top_n = -1;
    for (const auto& [cls, e] : by_class->items()) {
      const std::int64_t n = e.is_object() ? e.value("count", std::int64_t{0}) : 0;
      if (n > top_n) {
        top_n = n;
        top = cls;
      }
    }
    const json& e = (*by_class)[top];
    words += fmt::format("; most common: {} ({}{})", top, top_n,
                         e.contains("example") && e["example"].is_string()
                             ? ", e.g. " + e["example"].get<std::string>()
                             : std::string());
  }
  return words;
}

}  // namespace

int nothing_measured_gate(const json& result, int exit_code, bool quiet) {
  if (exit_code != kExitOk || !result.is_object()) return exit_code;
  if (result.value("artifact", std::string("run")) == "trials") {
    std::vector<std::string> empty;
    const json& trials = result.contains("trials") ? result["trials"] : json();
    if (trials.is_array()) {
      for (const auto& t : trials) {
        if (t.is_object() && t.value("completed", std::int64_t{1}) == 0) {
          empty.push_back(fmt::format("trial {} ({} failed)", t.value("trial", 0), t.value("failed", std::int64_t{0})));
        }
      }
    }
    if (empty.empty()) return exit_code;
    if (!quiet) {
      fmt::print(stderr,
                 "llmload: error: no measured request succeeded in {}: the results are written, but what they "
                 "aggregate includes runs that measured nothing; see the errors in each trial's result.json\n",
                 fmt::join(empty, ", "));
    }
    return kExitNothingMeasured;
  }
  if (result.value("completed", std::int64_t{1}) != 0) return exit_code;
  if (!quiet) {
    fmt::print(stderr,
               "llmload: error: no measured request succeeded ({}): the results are written, but they measure "
               "nothing; see errors in result.json (a failing server, a wrong --model or --endpoint, or a "
               "measurement window too short for any request to finish)\n",
               failures_in_words(result));
  }
  return kExitNothingMeasured;
}

namespace {

// The console report after the load: the metrics table, the stages, and the notes on what may
// have limited the run.
void print_console_report(const ScenarioConfig& cfg, const analysis::RunMetrics& metrics, const json& tokens,
                          const std::vector<analysis::StageMetrics>& stages, const std::string& shard_label,
                          double cpu_busy_s, double load_wall_s, bool interrupted,
                          const analysis::SequentialSlo* sequential) {
  const std::string title = fmt::format("llmload {} | {}{}", to_string(cfg.kind), cfg.model, shard_label);
  analysis::ConsoleOptions copts{cfg.metric_percentiles, cfg.percentile_metrics};
  std::string report = analysis::console_report(metrics, title, copts);
  report += analysis::stages_console(stages);
  if (tokens["ended_early"].get<std::int64_t>() > 0) {
    report += fmt::format("NOTE: {} requests ended with fewer output tokens than requested (see ended_early in "
                          "requests.jsonl)\n",
                          tokens["ended_early"].get<std::int64_t>());
  }
  if (load_wall_s > 1.0 && cpu_busy_s / load_wall_s > 0.85) {
    report += fmt::format("NOTE: the client used {:.0f}% of a core while the load ran (its event loop is one "
                          "thread): it may have limited the load; see client_cpu in result.json, or split the "
                          "load over shards (docs/distributed.md)\n",
                          100.0 * cpu_busy_s / load_wall_s);
  }
  if (sequential && sequential->conclusive()) {
    report += fmt::format("SLO-sized run: {}; issuing stopped there\n", sequential->summary());
  } else if (sequential) {
    const std::string bound = fmt::format("--max-duration {} or {} measured requests",
                                          format_duration(cfg.max_duration.value_or(Nanos(0))), cfg.sequential_cap);
    report += sequential->looks().empty()
                  ? fmt::format("NOTE: the SLO verdict is not conclusive: the run ended ({}) before its first look "
                                "({} measured requests): raise --max-duration or the load, or give "
                                "--num-requests/--duration\n",
                                bound, sequential->next_look())
                  : fmt::format("NOTE: the SLO verdict is not conclusive: {}. The run ended at {}: the percentile is "
                                "too close to its bound to tell in that many; raise --max-duration, or give "
                                "--num-requests/--duration\n",
                                sequential->summary(), bound);
  }
  if (interrupted) report += "RUN INTERRUPTED: results cover only what was measured before the signal\n";
  fmt::print("{}", report);
  std::fflush(stdout);
}

// The stages of a plan as the pacer runs them: back to back from the run's start.
std::vector<analysis::StagePlan> stage_plan(const ScenarioConfig& cfg) {
  std::vector<analysis::StagePlan> plan;
  Nanos t{0};
  for (const auto& st : cfg.arrivals.stages) {
    plan.push_back({t, t + st.duration,
                    st.concurrency ? fmt::format("concurrency {:g}", st.value) : fmt::format("rate {:g}/s", st.value)});
    t += st.duration;
  }
  return plan;
}

// Writes result.json, requests.jsonl and latency.hlog into cfg.output_dir, then the report.
// false when a file could not be written (the message is printed).
bool write_artifact(const ScenarioConfig& cfg, const ScenarioConfig& local, const ShardPlan& plan,
                    const std::vector<analysis::RequestRecord>& records, const analysis::RunMetrics& metrics,
                    const json& result, WallTime wall_start, const RunHooks& hooks) {
  if (cfg.output_dir.empty()) return true;
  const std::filesystem::path dir(cfg.output_dir);
  // Each file through a temporary and a rename; result.json last, naming any file that failed,
  // so a result.json never sits beside a half-written requests.jsonl without saying so.
  std::vector<std::string> failures;
  auto stream_file = [&](const char* name, const std::function<void(std::ostream&)>& fill) {
    const std::filesystem::path path = dir / name;
    const std::string tmp = path.string() + ".tmp";
    errno = 0;
    std::ofstream f(tmp);
    if (f) fill(f);
    f.flush();
    const int err = errno != 0 ? errno : EIO;
    const bool written = static_cast<bool>(f);
    f.close();
    std::error_code ec;
    if (written) std::filesystem::rename(tmp, path, ec);
    if (!written || ec) {
      std::filesystem::remove(tmp, ec);
      failures.push_back(fmt::format("{}: {}", path.string(), write_failure_reason(written ? ec.value() : err)));
    }
  };
  stream_file("requests.jsonl", [&](std::ostream& f) {
    for (const auto& r : records) f << request_line(r, local, plan) << '\n';
  });
  stream_file("latency.hlog", [&](std::ostream& f) {
    analysis::write_latency_hlog(f, metrics, epoch_seconds(wall_start), fmt::format("llmload {}", kVersion));
  });
  json complete = result;
  complete["incomplete_files"] = failures.empty() ? json(nullptr) : json(failures);
  if (auto e = write_file_atomically(dir / "result.json",
                                     complete.dump(2, ' ', false, json::error_handler_t::replace) + "\n")) {
    failures.push_back(*e);
  }
  if (!failures.empty()) {
    std::string why;
    for (const auto& f : failures) why += "\n  " + f;
    fmt::print(stderr, "llmload: error: writing results to '{}' failed:{}\n", cfg.output_dir, why);
    return false;
  }
  // Inside trials or a sweep (a label), the enclosing command says where everything went.
  const bool notes = !cfg.quiet && (hooks.label.empty() || cfg.verbose);
  if (notes) {
    fmt::print(stderr, "llmload: results written to {}/{{result.json,requests.jsonl,latency.hlog}}\n", cfg.output_dir);
  }
  // The report (report.html, summary.md, summary.csv) from the artifact just written; a failure
  // here loses nothing measured, so it is a warning.
  try {
    analysis::write_report(cfg.output_dir);
    if (notes) {
      fmt::print(stderr, "llmload: report written to {}/{{report.html,summary.md,summary.csv}}\n", cfg.output_dir);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload: warning: report not written: {}\n", e.what());
  }
  return true;
}

// The client's own CPU while the load ran (getrusage deltas over the load's wall time).
json client_cpu_json(double user, double system, double wall_s, std::int64_t requests) {
  return {{"user_s", user},
          {"system_s", system},
          {"wall_s", wall_s},
          {"core_share", wall_s > 0 ? json((user + system) / wall_s) : json(nullptr)},
          {"per_request_us", requests > 0 ? json((user + system) / static_cast<double>(requests) * 1e6) : json(nullptr)},
          {"covers", "llmload's process CPU (getrusage) from the first release to the last response: not start-up, "
                     "not the result files and the report written after"}};
}

// Cost per 1M output tokens at the run's output throughput, or null without --price-per-hour.
json cost_json(const ScenarioConfig& cfg, const analysis::RunMetrics& metrics) {
  if (!cfg.price_per_hour) return nullptr;
  const double devices = cfg.devices.value_or(1.0);
  const double per_m = analysis::cost_per_million_tokens(*cfg.price_per_hour, devices, metrics.output_throughput);
  return {{"price_per_hour", *cfg.price_per_hour},
          {"devices", devices},
          {"output_throughput", metrics.output_throughput},
          {"per_million_output_tokens", std::isfinite(per_m) ? json(per_m) : json(nullptr)},
          {"formula", "price_per_hour x devices / (3600 x output tokens/s) x 1e6"}};
}

// The server's own metrics and the cross-checks against them (TTFT, Little's law), or why absent.
void add_server_metrics(json& result, const net::MetricsScraper* scraper, const analysis::RunMetrics& metrics) {
  if (scraper == nullptr) {
    result["server_metrics"] = {{"available", false}, {"reason", "not scraped (--server-metrics-interval off)"}};
    return;
  }
  result["server_metrics"] = scraper->to_json();
  const auto& ttft = metrics.latency.at(analysis::Metric::kTtft);
  if (ttft.count > 0) {
    result["ttft_cross_check"] =
        net::cross_check_ttft(ttft.mean_us / 1e3, ttft.percentile(50) / 1e3, result["server_metrics"], ttft.count);
  }
  result["littles_law"] = littles_law_check(result, metrics);
}

// Removes the run's output directory, when this run created it and left it empty, unless keep()
// was called: a run refused or stopped before its load leaves nothing behind.
class EmptyDirGuard {
 public:
  explicit EmptyDirGuard(const std::string& dir) {
    std::error_code ec;
    // The directories this run will create: `dir` and its parents that do not exist yet (a
    // trial's directory inside the trials' own).
    for (std::filesystem::path p = std::filesystem::absolute(dir, ec); !dir.empty() && !p.empty() && !ec;
         p = p.parent_path()) {
      if (std::filesystem::exists(p, ec) || p == p.parent_path()) break;
      created_.push_back(p);
    }
  }
  ~EmptyDirGuard() {
    std::error_code ec;
    for (const auto& p : created_) {  // innermost first
      if (!std::filesystem::is_empty(p, ec) || ec) break;
      std::filesystem::remove(p, ec);
    }
  }
  EmptyDirGuard(const EmptyDirGuard&) = delete;
  EmptyDirGuard& operator=(const EmptyDirGuard&) = delete;
  void keep() { created_.clear(); }

 private:
  std::vector<std::filesystem::path> created_;
};

// A signal before the load began: nothing measured, nothing written.
RunOutcome interrupted_before_load(const ScenarioConfig& cfg) {
  if (!cfg.quiet) {
    fmt::print(stderr, "llmload: {} received before the load started: stopping; nothing was measured\n",
               stop_signal() == SIGINT ? "SIGINT" : "SIGTERM");
  }
  RunOutcome o;
  o.exit_code = kExitInterrupted;
  return o;
}

// result.json `conditions`: what was run, against what, on what, with which prompts.
json run_conditions(const ScenarioConfig& cfg, const ScenarioConfig& local, const BaseUrl& url,
                    const RequestBuilder& builder, const net::ModelsInfo& models, const std::vector<std::string>& argv,
                    const json& env_settings, const CalibrationResult& calibration, const Workload& workload,
                    WallTime wall_start) {
  json c = conditions_json(cfg, url, builder, models, argv, iso8601_utc(wall_start));
  c["start_epoch_s"] = epoch_seconds(wall_start);
  c["environment_settings"] = env_settings;
  c["devices"] = cfg.devices ? json(*cfg.devices) : json(nullptr);
  c["price_per_hour"] = cfg.price_per_hour ? json(*cfg.price_per_hour) : json(nullptr);
  c["prompts"] = calibration.report;
  c["workload"] = workload.describe();
  if (cfg.shard.sharded() || cfg.shard.count_given || cfg.shard.start_at) c["shard"] = shard_json(cfg, local, wall_start);
  return c;
}

// result.json `load.offered_*`: the load asked for (null where the scenario has none).
json offered_load(const ScenarioConfig& cfg) {
  return {{"offered_rate", cfg.kind == ScenarioKind::kServer && !cfg.timed_arrivals ? json(cfg.request_rate) : json(nullptr)},
          {"offered_concurrency", cfg.kind == ScenarioKind::kConcurrency || cfg.kind == ScenarioKind::kSingleStream
                                      ? json(cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency)
                                      : json(nullptr)}};
}

}  // namespace

RunOutcome run_once(const ScenarioConfig& cfg_in, const std::vector<std::string>& argv, const json& env_settings,
                    const RunHooks& hooks) {
  install_stop_handler();  // a signal before the load (calibration, the start wait) is recorded
  if (stop_signal() != 0) return interrupted_before_load(cfg_in);
  ScenarioConfig cfg = cfg_in;
  if (cfg.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY"); k != nullptr) cfg.api_key = k;
  }
  cfg.endpoint = parse_backend(cfg.backend).api;
  if (cfg.shard.start_at) check_start_at(*cfg.shard.start_at, std::chrono::system_clock::now());
  {
    // Everything that can be checked before contacting the server.
    ScenarioConfig probe = cfg;
    if (may_be_timed(probe)) {
      probe.timed_arrivals = true;
      if (!probe.scenario_explicit) probe.kind = ScenarioKind::kServer;
    }
    probe.validate();
    shard_config(probe);  // can this scenario be split this way?
    RequestBuilder check(probe, "", "");  // --extra-body, --backend
  }
  const BaseUrl url = parse_base_url(cfg.base_url);
  if (url.scheme != "https" && (!cfg.ca_cert.empty() || cfg.insecure)) {
    fmt::print(stderr, "llmload: warning: --ca-cert/--insecure apply to https:// only; {} is plain HTTP\n",
               url.to_string());
  }
  if (cfg.shard.sharded() && !cfg.shard.start_at && !hooks.ready) {
    fmt::print(stderr, "llmload: warning: shard {} of {} has no --start-at: it starts as soon as it is ready, not "
                       "together with the other shards\n", cfg.shard.index, cfg.shard.count);
  }
  // The output directory is claimed (created, its writability probed) before anything is sent;
  // a run refused before its load leaves no empty directory behind (issue 16).
  EmptyDirGuard dir_guard(cfg.output_dir);
  claim_output_dir(cfg.output_dir, cfg.overwrite);
  raise_open_file_limit();

  boost::asio::io_context ioc;
  SteadyClock clock;
  net::TransportOptions topts;
  topts.timeout = cfg.timeout;
  topts.idle_timeout = cfg.idle_timeout;
  topts.connect_timeout = cfg.connect_timeout;
  topts.ca_cert = cfg.ca_cert;
  topts.insecure = cfg.insecure;
  net::AsioTransport transport(ioc, clock, url, topts);
  net::ModelsInfo models;
  CalibrationResult calibration;
  std::unique_ptr<Workload> workload;
  try {
    models = net::probe_models(ioc, transport, url.to_string(), url.path, url.host_header(), cfg.api_key, cfg.headers);
    if (cfg.model.empty()) {
      if (models.ids.empty()) {
        throw ConfigError(fmt::format("GET {}/v1/models listed no models: pass --model", url.to_string()));
      }
      cfg.model = models.ids.front();
      if (printable(cfg.model) != cfg.model) {
        throw ConfigError(fmt::format("the first model GET {}/v1/models lists, '{}', has control characters in its "
                                      "id: pass --model with the model to use",
                                      url.to_string(), printable(cfg.model)));
      }
    }
    calibration = calibrate(cfg, ioc, transport, url);
  } catch (const ConfigError& e) {
    throw ConfigError(cfg.secrets().for_output(e.what()));  // the server may echo a secret back
  }
  // An answer that echoes the request (its headers) is stored in the conditions: without secrets.
  models.raw = cfg.secrets().redact(std::move(models.raw));
  const std::optional<std::uint64_t> max_items =
      cfg.num_requests ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(
                             std::max({*cfg.num_requests, cfg.min_requests.value_or(0), cfg.sequential_cap}) + cfg.warmup.requests))
                       : std::nullopt;
  workload = make_workload(cfg.workload, cfg.input_tokens, cfg.output_tokens, max_items, data_seed(cfg.seed),
                           calibration.model);
  std::vector<Nanos> timed;
  if (workload->timed() && may_be_timed(cfg)) {
    cfg.timed_arrivals = true;
    if (!cfg.scenario_explicit) cfg.kind = ScenarioKind::kServer;
    const auto n = workload->size().value_or(0);
    timed.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) timed.push_back(workload->item(i).arrival.value_or(Nanos(0)));
    if (!cfg.num_requests) cfg.num_requests = static_cast<std::int64_t>(n) - cfg.warmup.requests;
    if (cfg.num_requests && *cfg.num_requests < 1) {
      throw ConfigError(fmt::format("the trace window holds {} requests, no more than the --warmup of {}: widen the "
                                    "window or lower --warmup",
                                    n, cfg.warmup.requests));
    }
  } else if (cfg.workload.dataset != "random" && !cfg.num_requests && !cfg.duration) {
    if (auto n = workload->size()) cfg.num_requests = static_cast<std::int64_t>(*n);
  }
  if (cfg.timed_arrivals && cfg.request_rate > 0) {
    throw ConfigError("--request-rate does not apply to a trace replay (requests keep the trace's own times): use "
                      "--time-scale to replay faster or slower");
  }
  cfg.validate();
  // This shard's part: `cfg` stays the whole run (recorded in the artifact), `local` is what this
  // process issues.
  const ScenarioConfig local = shard_config(cfg);
  check_open_file_limit(most_in_flight(local));

  ShardPlan plan = plan_shard(local, local.timed_arrivals ? &timed : nullptr);
  ShardedWorkload sharded_workload(*workload, plan);
  const Workload* items = local.shard.sharded() ? &sharded_workload : workload.get();
  RequestBuilder builder(local, url.path, url.host_header(), items);
  RunController controller(local, clock, *plan.pacer, transport, builder);
  const std::string shard_label =
      local.shard.sharded() ? fmt::format(" (shard {} of {})", local.shard.index, local.shard.count) : std::string();

  // Everyone ready: wait for the common start (the MPI launcher synchronizes its ranks here).
  std::optional<WallTime> start_at = cfg.shard.start_at;
  if (hooks.ready) start_at = hooks.ready(start_at);
  if (start_at) {
    const auto now = std::chrono::system_clock::now();
    if (*start_at + kStartLateTolerance < now) {
      throw ConfigError(fmt::format("shard {} of {} was ready only {} after --start-at {}: start the shards earlier or "
                                    "give a later --start-at",
                                    local.shard.index, local.shard.count, format_duration(now - *start_at),
                                    format_rfc3339(*start_at)));
    }
    if (*start_at > now) {
      fmt::print(stderr, "llmload: waiting {} for the common start at {}{}\n", format_duration(*start_at - now),
                 format_rfc3339(*start_at), shard_label);
    }
    if (!sleep_until_wall(*start_at)) return interrupted_before_load(cfg);
  }
  if (stop_signal() != 0) return interrupted_before_load(cfg);
  cfg.shard.start_at = start_at;
  const WallTime wall_start = std::chrono::time_point_cast<Nanos>(std::chrono::system_clock::now());
  if (!cfg.quiet) {
    fmt::print(stderr, "llmload {}: {} against {}{} model '{}'{}{}\n", kVersion, scenario_summary(cfg), url.to_string(),
               builder.path(), cfg.model, shard_label, hooks.label.empty() ? "" : " [" + hooks.label + "]");
  }
  // Requests are streamed to requests.jsonl as they complete, beside run-in-progress.json: a run
  // killed outright still leaves what it measured (run_journal.hpp; `llmload report` rebuilds).
  const json conditions =
      run_conditions(cfg, local, url, builder, models, argv, env_settings, calibration, *workload, wall_start);
  RunJournal journal(cfg.output_dir,
                     {{"artifact", "run-in-progress"},
                      {"schema_version", kSchemaVersion},
                      {"about", "written when the run started and removed once result.json is written: a run that "
                                "left it did not finish; `llmload report DIR` rebuilds result.json from requests.jsonl"},
                      {"conditions", conditions},
                      {"load", offered_load(cfg)},
                      {"judging", judging_json(controller.validity_options(), controller.verdict_view(), local.slo,
                                               local.warmup, local.duration)}},
                     [&](const analysis::RequestRecord& r) { return request_line(r, local, plan); }, cfg.quiet);
  controller.on_record = [&](const analysis::RequestRecord& r) { journal.append(r); };
  dir_guard.keep();  // the load starts: the directory holds the run from here on
  // The server's own metrics (Prometheus /metrics), co-computed with this run: a snapshot before,
  // a series during, a snapshot after. Absent or broken metrics never fail the run.
  std::optional<net::MetricsScraper> scraper;
  if (cfg.server_metrics_interval) {
    net::ScraperOptions so;
    so.url = url;
    so.api_key = cfg.api_key;
    so.headers = cfg.headers;
    so.ca_cert = cfg.ca_cert;
    so.insecure = cfg.insecure;
    so.interval = *cfg.server_metrics_interval;
    const json listed = json::parse(models.raw, nullptr, false);
    if (listed.is_object() && listed.contains("data") && listed["data"].is_array() && !listed["data"].empty() &&
        listed["data"][0].is_object() && listed["data"][0].contains("owned_by") &&
        listed["data"][0]["owned_by"].is_string()) {
      so.server_hint = listed["data"][0]["owned_by"].get<std::string>();
    }
    scraper.emplace(std::move(so));
    if (scraper->probe()) scraper->start();
  }
  net::DriveOptions dopts;
  dopts.stop_requested = [] { return stop_signal() != 0; };
  dopts.on_signal = note_stop_signal;
  dopts.drain_timeout = cfg.drain_timeout;
  dopts.hard_limit = local.max_duration;
  dopts.spin_lead = cfg.schedule_spin;
  MonitorOptions mopts;
  mopts.progress_line = !cfg.quiet && isatty(STDERR_FILENO) == 1 && std::getenv("TERM") != nullptr &&
                        std::string_view(std::getenv("TERM")) != "dumb";
  // Not a terminal (a CI log, a pipe): the same line, as a line of its own every 10 s.
  if (!cfg.quiet && !mopts.progress_line) mopts.log_interval = kProgressLogInterval;
  mopts.watch_saturation = hooks.watch_saturation;
  if (local.num_requests) mopts.planned_requests = *local.num_requests + local.warmup.requests;
  mopts.warmup_requests = local.warmup.requests;
  if (local.min_requests) mopts.min_requests = *local.min_requests + local.warmup.requests;
  if (local.duration) mopts.planned_duration = *local.duration + local.warmup.duration;
  if (!cfg.quiet) {
    mopts.warn = [](const std::string& what) { fmt::print(stderr, "llmload: warning: {}\n", what); };
  }
  mopts.label = hooks.label;
  // Over-saturated: stop releasing, and cancel what waits in the server's queue (draining it would
  // take as long as the overload built up; the point fails either way). The canceled requests
  // are recorded as such (error class canceled).
  mopts.stop = [&](const std::string& reason) { controller.stop_now(reason); };
  RunMonitor monitor(controller, clock, mopts);
  const bool monitor_ticks = mopts.progress_line || mopts.watch_saturation || mopts.log_interval || mopts.warn;
  dopts.tick_interval = RunMonitor::kTick;
  dopts.on_tick = [&] {
    if (monitor_ticks) monitor.tick();
    journal.flush_if_due();
  };
  // The client's own CPU while the load ran (the whole process: the event loop, and the metrics
  // scraper's thread when there is one): whether the client could have been the bottleneck.
  auto cpu_now = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return std::pair<double, double>{s(u.ru_utime), s(u.ru_stime)};
  };
  const auto cpu_before = cpu_now();
  const auto wall_before = std::chrono::steady_clock::now();
  net::drive(ioc, controller, dopts);
  install_stop_handler();  // Asio put the default action back
  journal.close();
  const auto cpu_after = cpu_now();
  const double load_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  monitor.finish();
  if (scraper && scraper->available()) scraper->stop();
  if (scraper) scraper->set_t0(controller.start_time());

  const double cpu_busy_s = cpu_after.first - cpu_before.first + cpu_after.second - cpu_before.second;
  const analysis::RunMetrics metrics =
      controller.metrics(load_wall_s > 0 ? std::optional<double>(cpu_busy_s / load_wall_s) : std::nullopt);
  const json tokens = analysis::token_accounting(controller.records());
  std::vector<analysis::StageMetrics> stages;
  if (cfg.kind == ScenarioKind::kStages) {
    stages = analysis::stage_metrics(controller.records(), stage_plan(local), cfg.slo,
                                     metrics.slo ? metrics.slo->view
                                                 : (metrics.open_loop ? analysis::LatencyView::kResponse
                                                                      : analysis::LatencyView::kService));
  }
  if (hooks.print_report) {
    print_console_report(cfg, metrics, tokens, stages, shard_label, cpu_busy_s, load_wall_s, controller.interrupted(),
                         controller.sequential());
  }

  RunOutcome outcome;
  outcome.exit_code = controller.interrupted() ? kExitInterrupted : kExitOk;
  json& result = outcome.result;
  {
    result = analysis::metrics_json(metrics);
    result["schema_version"] = kSchemaVersion;
    result["artifact"] = "run";
    result["conditions"] = conditions;
    result["tokens"].update(tokens);
    result["load"].update(offered_load(cfg));
    result["interrupted"] = controller.interrupted();
    result["incomplete_files"] = nullptr;  // write_artifact names any file it could not write
    result["sequential"] = controller.sequential() ? analysis::sequential_json(*controller.sequential()) : json(nullptr);
    result["stages"] = stages.empty() ? json(nullptr) : analysis::stages_json(stages);
    result["max_in_flight"] = controller.max_in_flight();
    result["client_cpu"] = client_cpu_json(cpu_after.first - cpu_before.first, cpu_after.second - cpu_before.second,
                                           load_wall_s, metrics.requests);
    result["connections_opened"] = transport.connections_opened();
    result["non_streaming_note"] = cfg.stream ? json(nullptr) : json("non-streaming: TTFT equals E2E");
    add_server_metrics(result, scraper ? &*scraper : nullptr, metrics);
    result["overload"] = cfg.open_loop() ? overload_check(result, metrics, controller.records()) : json(nullptr);
    result["cost"] = cost_json(cfg, metrics);
    if (cfg.verbose && !cfg.quiet) print_cross_checks(result);
  }
  if (!write_artifact(cfg, local, plan, controller.records(), metrics, result, wall_start, hooks)) {
    outcome.exit_code = kExitFailure;
  }
  std::error_code ec;
  if (!cfg.output_dir.empty() && std::filesystem::exists(std::filesystem::path(cfg.output_dir) / "result.json", ec)) {
    journal.finish();
  }
  return outcome;
}

int run_command(const ScenarioConfig& cfg, const std::vector<std::string>& argv, const json& env_settings,
                const RunHooks& hooks) {
  if (cfg.fail_on_slo && !cfg.slo) {
    throw ConfigError("--fail-on-slo needs an SLO to gate on: add --slo, e.g. --slo ttft:500ms,tpot:50ms");
  }
  if (cfg.fail_on_slo && cfg.shard.sharded()) {
    throw ConfigError("--fail-on-slo does not apply to one shard: its verdict is partial (the sample checks are the "
                      "merge's); drop it here and gate the merged run with `llmload merge SHARD_DIRS... "
                      "--fail-on-slo` (llmload-mpi --fail-on-slo gates the merged run itself)");
  }
  if (cfg.trials > 1 && (cfg.shard.sharded() || cfg.shard.start_at)) {
    throw ConfigError("--trials cannot be combined with sharding (--shard-count/--start-at): run the sharded trials as "
                      "separate runs, each with its own --start-at and --seed");
  }
  // Every run writes its artifact, and never over another's (app/output_dir.hpp).
  ScenarioConfig run_cfg = cfg;
  resolve_output_dir(run_cfg, std::time(nullptr));
  check_output_dir_unused(run_cfg.output_dir, run_cfg.overwrite);
  json result;
  int code = kExitOk;
  if (run_cfg.trials > 1) {
    const TrialsOutcome t = run_trials(run_cfg, argv, env_settings, hooks);
    result = t.result;
    code = t.exit_code;
  } else {
    const RunOutcome o = run_once(run_cfg, argv, env_settings, hooks);
    result = o.result;
    code = o.exit_code;
  }
  if (!run_cfg.vllm_result_file.empty() && result.is_object()) {
    // vLLM's --save-result file, beside the artifact's directory of the same name.
    std::ofstream f(run_cfg.vllm_result_file);
    f << result.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    if (!f) {
      fmt::print(stderr, "llmload: error: writing '{}' failed\n", run_cfg.vllm_result_file);
      if (code == kExitOk) code = kExitFailure;
    } else if (!run_cfg.quiet) {
      fmt::print(stderr, "llmload: result also written to {}\n", run_cfg.vllm_result_file);
    }
  }
  return slo_gate(run_cfg, result, hooks.gate_nothing_measured ? nothing_measured_gate(result, code) : code);
}

}  // namespace llmload::app
