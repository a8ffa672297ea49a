// llmload: the load generator's command line.
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/report.hpp"
#include "llmload/common/process_limits.hpp"
#include "llmload/common/version.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/net/asio_transport.hpp"
#include "llmload/loadgen/net/driver.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/redact.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/url.hpp"
#include "settings.hpp"

namespace {

using namespace llmload;
using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitConfig = 2;
constexpr int kExitInterrupted = 130;

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

// The command line as it will be stored: secrets redacted.
std::vector<std::string> redacted_argv(int argc, char** argv) {
  std::vector<std::string> out;
  bool redact_next = false;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (redact_next) {
      out.emplace_back("***");
      redact_next = false;
      continue;
    }
    if (a == "--api-key") {
      redact_next = true;
    } else if (a.rfind("--api-key=", 0) == 0) {
      a = "--api-key=***";
    }
    out.push_back(a);
  }
  return out;
}

// Checks before the run that results can be written there (nothing measured is lost later).
void prepare_output_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("cannot create --output directory '{}': {}", dir, ec.message()));
  const auto probe = std::filesystem::path(dir) / ".llmload-write-test";
  {
    std::ofstream f(probe);
    f << std::string(4096, 'x');
    f.flush();
    if (!f) {
      throw ConfigError(fmt::format("--output directory '{}' is not writable (or the disk is full): choose another", dir));
    }
  }
  std::filesystem::remove(probe, ec);
}

json conditions_json(const ScenarioConfig& cfg, const BaseUrl& url, const std::string& path,
                     const net::ModelsInfo& models, const std::vector<std::string>& argv, const std::string& start_iso) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json scenario = {
      {"scenario", to_string(cfg.kind)},
      {"endpoint", cfg.endpoint == ApiKind::kChat ? "chat" : "completions"},
      {"stream", cfg.stream},
      {"input_tokens", cfg.input_tokens},
      {"output_tokens", cfg.output_tokens},
      {"num_requests", cfg.num_requests ? json(*cfg.num_requests) : json(nullptr)},
      {"duration_s", cfg.duration ? json(std::chrono::duration<double>(*cfg.duration).count()) : json(nullptr)},
      {"warmup", cfg.warmup.by_time() ? json(fmt::format("{}s", std::chrono::duration<double>(cfg.warmup.duration).count()))
                                      : json(cfg.warmup.requests)},
      {"request_rate", cfg.kind == ScenarioKind::kServer ? json(cfg.request_rate) : json(nullptr)},
      {"concurrency", cfg.kind == ScenarioKind::kConcurrency || cfg.kind == ScenarioKind::kSingleStream
                          ? json(cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency)
                          : json(nullptr)},
      {"max_inflight", cfg.max_inflight ? json(*cfg.max_inflight) : json(nullptr)},
      {"arrival_process", cfg.kind == ScenarioKind::kServer ? "poisson" : cfg.kind == ScenarioKind::kOffline ? "all-at-start" : "closed-loop"},
      {"timeout_s", std::chrono::duration<double>(cfg.timeout).count()},
      {"idle_timeout_s", std::chrono::duration<double>(cfg.idle_timeout).count()},
      {"slo", cfg.slo ? json(cfg.slo->to_string()) : json(nullptr)},
  };
  json server_models = json::parse(models.raw, nullptr, false);
  return {
      {"tool", {{"name", "llmload"}, {"version", kVersion}, {"build", kBuildType}, {"compiler", kCompiler}}},
      {"command_line", argv},
      {"start_time", start_iso},
      {"scenario", scenario},
      {"seeds", {{"base", cfg.seed}, {"arrival", arrival_seed(cfg.seed)}, {"data", data_seed(cfg.seed)}}},
      {"endpoint", {{"base_url", url.to_string()}, {"path", path}, {"api_key", cfg.api_key.empty() ? "none" : "set (redacted)"}}},
      {"model", cfg.model},
      {"server", {{"models", server_models.is_discarded() ? json(nullptr) : server_models}}},
      {"machine", {{"hostname", host}, {"hardware_threads", std::thread::hardware_concurrency()}}},
      {"prompts", {{"method", "synthesized: input_tokens space-separated common English words, one word per "
                              "token (exact for llmload-server; an estimate for BPE tokenizers)"}}},
      {"definitions", {{"document", "docs/metrics.md"},
                       {"ttft", "t_first - t_send"},
                       {"tpot", "(e2e - ttft) / (n_out - 1), n_out >= 2"},
                       {"itl", "gaps between output events, token-weighted"},
                       {"e2e", "t_last - t_send"},
                       {"response_time", "same, measured from t_intended"},
                       {"histograms", "HdrHistogram, microseconds, 3 significant digits"}}},
  };
}

int run_command(const ScenarioConfig& cfg_in, const std::vector<std::string>& argv) {
  ScenarioConfig cfg = cfg_in;
  if (cfg.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY"); k != nullptr) cfg.api_key = k;
  }
  cfg.validate();
  const BaseUrl url = parse_base_url(cfg.base_url);
  prepare_output_dir(cfg.output_dir);
  // Each request in flight holds a connection (a descriptor): raise the soft limit, and refuse a
  // closed-loop concurrency the limit cannot hold instead of failing requests with EMFILE.
  raise_open_file_limit();
  const std::int64_t needed = cfg.kind == ScenarioKind::kConcurrency ? cfg.concurrency
                              : cfg.kind == ScenarioKind::kOffline  ? cfg.max_inflight.value_or(0)
                                                                    : 0;
  if (auto limit = open_file_limit(); limit && needed > 0 && static_cast<std::uint64_t>(needed) + 64 > *limit) {
    throw ConfigError(fmt::format("{} requests in flight need {} connections, but the open-file limit is {}: lower "
                                  "--concurrency/--max-inflight or raise the limit (ulimit -n)",
                                  needed, needed, *limit));
  }

  boost::asio::io_context ioc;
  SteadyClock clock;
  net::TransportOptions topts{cfg.timeout, cfg.idle_timeout};
  net::AsioTransport transport(ioc, clock, url, topts);
  net::ModelsInfo models;
  try {
    models = net::probe_models(ioc, transport, url.to_string(), url.path, url.host_header(), cfg.api_key);
  } catch (const ConfigError& e) {
    throw ConfigError(redact(e.what(), cfg.api_key));  // the server may echo the key back
  }
  if (cfg.model.empty()) {
    if (models.ids.empty()) {
      throw ConfigError(fmt::format("GET {}/v1/models listed no models: pass --model", url.to_string()));
    }
    cfg.model = models.ids.front();
  }

  RequestBuilder builder(cfg, url.path, url.host_header());
  auto pacer = make_pacer(cfg);
  RunController controller(cfg, clock, *pacer, transport, builder);
  const auto wall_start = std::chrono::system_clock::now();
  fmt::print(stderr, "llmload {}: {} against {}{} model '{}'\n", kVersion, app::scenario_summary(cfg),
             url.to_string(), builder.path(), cfg.model);
  net::DriveOptions dopts;
  dopts.drain_timeout = cfg.drain_timeout;
  net::drive(ioc, controller, dopts);

  const analysis::RunMetrics metrics = controller.metrics();
  const std::string title = fmt::format("llmload {} | {}", to_string(cfg.kind), cfg.model);
  std::string report = analysis::console_report(metrics, title);
  if (controller.interrupted()) report += "RUN INTERRUPTED: results cover only what was measured before the signal\n";
  fmt::print("{}", report);
  std::fflush(stdout);

  if (!cfg.output_dir.empty()) {
    const std::filesystem::path dir(cfg.output_dir);
    json result = analysis::metrics_json(metrics);
    result["conditions"] = conditions_json(cfg, url, builder.path(), models, argv, iso8601_utc(wall_start));
    result["load"]["offered_rate"] = cfg.kind == ScenarioKind::kServer ? json(cfg.request_rate) : json(nullptr);
    result["load"]["offered_concurrency"] =
        cfg.kind == ScenarioKind::kConcurrency || cfg.kind == ScenarioKind::kSingleStream
            ? json(cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency)
            : json(nullptr);
    result["interrupted"] = controller.interrupted();
    result["max_in_flight"] = controller.max_in_flight();
    result["connections_opened"] = transport.connections_opened();
    result["non_streaming_note"] = cfg.stream ? json(nullptr) : json("non-streaming: TTFT equals E2E");
    bool ok = true;
    {
      std::ofstream f(dir / "result.json");
      f << result.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
      ok = ok && static_cast<bool>(f);
    }
    {
      std::ofstream f(dir / "requests.jsonl");
      for (const auto& r : controller.records()) f << analysis::record_json(r).dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
      ok = ok && static_cast<bool>(f);
    }
    {
      std::ofstream f(dir / "latency.hlog");
      const double start_epoch = std::chrono::duration<double>(wall_start.time_since_epoch()).count();
      analysis::write_latency_hlog(f, metrics, start_epoch, fmt::format("llmload {}", kVersion));
      ok = ok && static_cast<bool>(f);
    }
    if (!ok) {
      fmt::print(stderr, "llmload: error: writing results to '{}' failed (disk full?)\n", cfg.output_dir);
      return kExitFailure;
    }
    fmt::print(stderr, "llmload: results written to {}/{{result.json,requests.jsonl,latency.hlog}}\n", cfg.output_dir);
  }
  return controller.interrupted() ? kExitInterrupted : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"llmload: a load generator for OpenAI-compatible LLM inference servers (vLLM, SGLang, ...)"};
  app.set_version_flag("--version", std::string("llmload ") + kVersion);
  app.require_subcommand(1);
  auto* run = app.add_subcommand("run", "run one scenario against an endpoint and report TTFT, TPOT, ITL, E2E and goodput");
  std::string scenario_file;
  run->add_option("--scenario-file", scenario_file, "YAML or JSON file with the same settings as the flags "
                                                    "(flags given on the command line override it)");
  std::map<std::string, std::string> values;
  std::map<std::string, CLI::Option*> options;
  for (const auto& s : app::settings()) {
    options[s.name] = run->add_option("--" + s.name, values[s.name], s.help);
  }
  bool no_stream = false;
  run->add_flag("--no-stream", no_stream, "same as --stream false");
  run->footer(
      "Scenarios: single-stream (one request at a time), server (open-loop Poisson at --request-rate),\n"
      "offline (all requests at start, optional --max-inflight), concurrency (closed loop, --concurrency N).\n"
      "Durations take a unit: 500ms, 30s, 5m. Exit codes: 0 done, 1 failure writing results,\n"
      "2 bad configuration or unreachable endpoint, 130 interrupted (results still written).\n"
      "Metric definitions: docs/metrics.md");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    ScenarioConfig cfg;
    if (!scenario_file.empty()) app::apply_scenario_file(scenario_file, cfg);
    for (const auto& s : app::settings()) {
      if (options[s.name]->count() > 0) app::apply_setting(s.name, values[s.name], "--" + s.name, cfg);
    }
    if (no_stream) cfg.stream = false;
    return run_command(cfg, redacted_argv(argc, argv));
  } catch (const ConfigError& e) {
    fmt::print(stderr, "llmload: error: {}\n", e.what());
    return kExitConfig;
  } catch (const std::exception& e) {
    fmt::print(stderr, "llmload: internal error: {}\n", e.what());
    return kExitFailure;
  }
}
