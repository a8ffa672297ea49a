// result.json of one run and the artifact's files: see run_result.hpp.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "run_result.hpp"

#include "llmload/loadgen/model_mix.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "file_write.hpp"
#include "llmload/analysis/client_cpu.hpp"
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/html_report.hpp"
#include "llmload/analysis/overload.hpp"
#include "llmload/analysis/prefix_cache.hpp"
#include "llmload/analysis/report.hpp"
#include "llmload/analysis/sequential_slo.hpp"
#include "llmload/common/build_info.hpp"
#include "llmload/common/duration.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/shard.hpp"
#include "probe_run.hpp"
#include "run_journal.hpp"

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


// conditions.scenario.arrivals: how the arrivals are spaced.
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
      {"model_mix", [&]() -> json {
         if (cfg.models.empty()) return nullptr;
         const ModelMix mix(cfg.models, cfg.model_weights, cfg.seed);
         json shares = json::array();
         for (std::size_t k = 0; k < mix.models().size(); ++k) {
           shares.push_back({{"model", mix.models()[k]}, {"share", mix.shares()[k]}});
         }
         return {{"rule", mix.rule()}, {"models", shares}, {"per", "request (a session keeps its first model)"}};
       }()},
      // Tool calls and structured output: the tools and schema, the choice and the shares asked.
      {"structured", cfg.structured.any() ? StructuredMix(cfg.structured, data_seed(cfg.seed)).describe() : json(nullptr)},
      {"conversation_state", cfg.turns > 1 ? json(cfg.conversation_state) : json(nullptr)},
      {"endpoint", [&] {
         switch (cfg.endpoint) {
           case ApiKind::kChat: return "chat";
           case ApiKind::kSglang: return "generate";
           case ApiKind::kResponses: return "responses";
           case ApiKind::kAnthropic: return "messages";
           case ApiKind::kCompletions: break;
         }
         return "completions";
       }()},
      {"stream", cfg.stream},
      // The Responses and Messages APIs take no vLLM extensions: lengths are the model's own there.
      {"ignore_eos", cfg.ignore_eos && cfg.endpoint != ApiKind::kResponses && cfg.endpoint != ApiKind::kAnthropic},
      {"continuous_usage_stats",
       cfg.stream && cfg.continuous_usage && (cfg.endpoint == ApiKind::kCompletions || cfg.endpoint == ApiKind::kChat)},
      {"extra_body", cfg.extra_body.empty() ? json(nullptr) : json::parse(cfg.extra_body, nullptr, false)},
      {"extra_headers", [&] {
         json h = json::array();
         for (const auto& kv : cfg.headers) h.push_back(kv.first);  // names only: values may be secrets
         return h;
       }()},
      {"turns", cfg.turns},
      {"think_time_s", std::chrono::duration<double>(cfg.think_time).count()},
      // null where the workload gives the lengths (a dataset, a trace, a distribution).
      {"input_tokens", cfg.input_tokens_used() ? json(cfg.input_tokens) : json(nullptr)},
      {"output_tokens", cfg.output_tokens_used() ? json(cfg.output_tokens) : json(nullptr)},
      {"num_requests", cfg.num_requests ? json(*cfg.num_requests) : json(nullptr)},
      {"duration_s", cfg.duration ? json(std::chrono::duration<double>(*cfg.duration).count()) : json(nullptr)},
      {"warmup", cfg.warmup.automatic ? json("auto")
                 : cfg.warmup.by_time()
                     ? json(fmt::format("{}s", std::chrono::duration<double>(cfg.warmup.duration).count()))
                     : json(cfg.warmup.requests)},
      {"request_rate", cfg.request_rate_used() ? json(cfg.request_rate) : json(nullptr)},
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
      {"probe", probe_conditions(cfg)},
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
      {"server", {{"models", server_models.is_discarded() ? json(nullptr) : server_models},
                  {"models_probe", models.problem.empty() ? json("ok") : json(models.problem)}}},
      {"machine", {{"hostname", host},
                   {"hardware_threads", std::thread::hardware_concurrency()},
                   {"cpu_model", hostinfo.cpu_model},
                   {"kernel", hostinfo.kernel},
                   {"local_gpus", hostinfo.gpus}}},
      {"definitions", {{"document", "docs/metrics.md"},
                       {"ttft", "t_first - t_send (the first generated token of any kind)"},
                       {"ttfo", "t_first_output - t_send (the first generated token that is not reasoning)"},
                       {"tpot", "(e2e - ttft) / (n_out - 1), n_out >= 2"},
                       {"itl", "gaps between output events, token-weighted"},
                       {"e2e", "t_last - t_send"},
                       {"response_time", "same, measured from t_intended"},
                       {"histograms", "HdrHistogram, microseconds, 3 significant digits"}}},
  };
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

// --verbose: the server-metric cross-checks and how the window was chosen, on stderr.
void print_cross_checks(const json& result) {
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
json littles_law_check(const json& result, const analysis::RunMetrics& metrics) {
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
json overload_check(const json& result, const analysis::RunMetrics& metrics,
                           analysis::RecordRange records) {
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
  analysis::add_server_prefix_cache(result);  // the server's prefix-cache hit rate beside the usage one
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

}  // namespace

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
  // The run's first workload item when it is not 0 (a sweep's point draws its own prompts).
  if (cfg.item_offset != 0) c["workload"]["first_item"] = cfg.item_offset;
  if (cfg.shard.sharded() || cfg.shard.count_given || cfg.shard.start_at) c["shard"] = shard_json(cfg, local, wall_start);
  return c;
}

json offered_load(const ScenarioConfig& cfg) {
  return {{"offered_rate", cfg.kind == ScenarioKind::kServer && !cfg.timed_arrivals ? json(cfg.request_rate) : json(nullptr)},
          {"offered_concurrency", cfg.kind == ScenarioKind::kConcurrency || cfg.kind == ScenarioKind::kSingleStream
                                      ? json(cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency)
                                      : json(nullptr)}};
}


std::vector<analysis::StageMetrics> run_stages(const ScenarioConfig& cfg, const ScenarioConfig& local,
                                               const RunController& controller, const analysis::RunMetrics& metrics) {
  if (cfg.kind != ScenarioKind::kStages) return {};
  return analysis::stage_metrics(controller.records(), stage_plan(local), cfg.slo,
                                 metrics.slo ? metrics.slo->view
                                             : (metrics.open_loop ? analysis::LatencyView::kResponse
                                                                  : analysis::LatencyView::kService));
}

json run_result(const ScenarioConfig& cfg, const RunController& controller, const analysis::RunMetrics& metrics,
                const json& conditions, const json& tokens, const std::vector<analysis::StageMetrics>& stages,
                const ClientCost& cost, std::int64_t connections_opened, const net::MetricsScraper* scraper) {
  json result = analysis::metrics_json(metrics);
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
  // The client's own CPU while the load ran (getrusage deltas over the load's wall time).
  result["client_cpu"] = analysis::client_cpu_json(
      cost.user_s, cost.system_s, cost.wall_s, metrics.requests,
      "llmload's process CPU (getrusage) from the first release to the last response: not start-up, not the result "
      "files and the report written after");
  result["connections_opened"] = connections_opened;
  result["non_streaming_note"] =
      cfg.stream ? json(nullptr) : json(kNonStreamingNote);
  add_server_metrics(result, scraper, metrics);
  result["overload"] = cfg.open_loop() ? overload_check(result, metrics, controller.records()) : json(nullptr);
  result["cost"] = cost_json(cfg, metrics);
  if (cfg.verbose && !cfg.quiet) print_cross_checks(result);
  return result;
}

void print_console_report(const ScenarioConfig& cfg, const analysis::RunMetrics& metrics, const json& tokens,
                          const std::vector<analysis::StageMetrics>& stages, const std::string& shard_label,
                          double cpu_busy_s, double load_wall_s, bool interrupted,
                          const analysis::SequentialSlo* sequential) {
  // --model a,b,c: every model the requests were dealt over, not only the first.
  const std::string models = cfg.models.empty() ? cfg.model : fmt::format("{}", fmt::join(cfg.models, ","));
  const std::string title = fmt::format("llmload {} | {}{}", to_string(cfg.kind), models, shard_label);
  analysis::ConsoleOptions copts{cfg.metric_percentiles, cfg.percentile_metrics};
  std::string report = analysis::console_report(metrics, title, copts);
  report += analysis::stages_console(stages);
  if (!cfg.stream) report += fmt::format("NOTE: {}\n", kNonStreamingNote);
  if (tokens["ended_early"].get<std::int64_t>() > 0) {
    report += fmt::format("NOTE: {} requests ended with fewer output tokens than requested (see ended_early in "
                          "requests.jsonl){}\n",
                          tokens["ended_early"].get<std::int64_t>(),
                          cfg.ignore_eos ? "" : ": expected with --no-ignore-eos, the model stops at its EOS");
  }
  if (load_wall_s > 1.0 && cpu_busy_s / load_wall_s > 0.85) {
    report += fmt::format("NOTE: the client used {:.0f}% of a core while the load ran (its event loop is one "
                          "thread): it may have limited the load; see client_cpu in result.json, or split the "
                          "load over client processes with --workers (docs/distributed.md)\n",
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
  if (interrupted) report += analysis::kRunInterruptedLine;
  fmt::print("{}", report);
  std::fflush(stdout);
}

bool write_artifact(const ScenarioConfig& cfg, const ScenarioConfig& local, const ShardPlan& plan,
                    analysis::RecordRange records, bool requests_written, const analysis::RunMetrics& metrics,
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
  if (!requests_written) {
    stream_file("requests.jsonl", [&](std::ostream& f) {
      for (const auto& r : records) f << request_line(r, local, plan) << '\n';
    });
  }
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
    analysis::HtmlReportOptions report_options;
    report_options.run_records = records.source();  // the run's record file: no JSON to parse again
    analysis::write_report(cfg.output_dir, report_options);
    if (notes) {
      fmt::print(stderr, "llmload: report written to {}/{{report.html,summary.md,summary.csv}}\n", cfg.output_dir);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload: warning: report not written: {}\n", e.what());
  }
  return true;
}

}  // namespace llmload::app
