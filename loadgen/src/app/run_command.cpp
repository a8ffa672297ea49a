// `llmload run` (and each rank of llmload-mpi): see run_command.hpp.
#include <cmath>
#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "run_command.hpp"

#include "correctness.hpp"
#include "output_dir.hpp"
#include "rebuild.hpp"
#include "run_journal.hpp"
#include "run_result.hpp"
#include "stop_signal.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include "llmload/analysis/grading.hpp"
#include "llmload/analysis/token_accounting.hpp"
#include "llmload/common/duration.hpp"
#include "llmload/common/process_limits.hpp"
#include "llmload/common/temp_file.hpp"
#include "llmload/common/version.hpp"
#include "llmload/tokenizer/tokenizer.hpp"
#include "llmload/loadgen/calibration.hpp"
#include "llmload/loadgen/model_mix.hpp"
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
#include "probe_run.hpp"
#include "progress.hpp"
#include "settings.hpp"
#include "trials.hpp"

namespace llmload::app {

using nlohmann::json;

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

// The API key as the backend sends it (Bearer, or Anthropic's x-api-key with anthropic-version)
// for the run's other requests (/v1/models, /tokenize): the Bearer key, and the --header fields
// with the key's own fields first (a --header of the same name replaces one).
std::pair<std::string, HeaderFields> key_and_headers(const ScenarioConfig& cfg) {
  KeyFields key = key_fields(parse_backend(cfg.backend), cfg.api_key);
  return {key.bearer, merge_fields(std::move(key.fields), cfg.headers)};
}

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

// Settings that only the workload knows (trace replay, timestamped datasets) are decided here;
// everything else is checked before any connection is made.
bool may_be_timed(const ScenarioConfig& cfg) {
  return cfg.workload.dataset == "trace" ||
         (cfg.workload.dataset == "custom" && !cfg.scenario_explicit && cfg.request_rate == 0);
}

// Prompt calibration with the server's /tokenize (or the built-in estimate).
CalibrationResult calibrate(const ScenarioConfig& cfg, boost::asio::io_context& ioc, Transport& transport,
                            const BaseUrl& url, const tokenizer::Tokenizer* tok) {
  if (cfg.prompt_calibration == "estimate") {
    return CalibrationResult{TokenModel::builtin(), estimate_report("--prompt-calibration estimate")};
  }
  if (tok != nullptr && cfg.prompt_calibration == "auto") {
    // The model's own tokenizer, locally: no /tokenize needed. The prompt is counted with the
    // special tokens the tokenizer adds (a BOS); a chat template's own tokens are not known.
    TokenCounter local = [tok](const std::string& prompt) {
      return std::optional<std::int64_t>(static_cast<std::int64_t>(tok->encode(prompt, true).size()));
    };
    auto r = calibrate_token_model(local, cfg.input_tokens, data_seed(cfg.seed));
    if (r) {
      r->report["method"] = "tokenizer";
      r->report["tokenizer"] = {{"path", tok->source().string()}, {"kind", tok->kind()}};
      if (cfg.endpoint == ApiKind::kChat) {
        r->report["note"] = "chat: the prompt's content is counted; the chat template adds its own tokens on the server";
      }
      return *r;
    }
  }
  const auto [bearer, headers] = key_and_headers(cfg);
  net::TokenizeTarget target{url.path, url.host_header(), bearer, cfg.model, cfg.endpoint == ApiKind::kChat, headers};
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


// Everything that can be checked before contacting the server.
// --grader, --consistency and --reference (issue 18): what they cannot be combined with.
void check_correctness_settings(const ScenarioConfig& cfg) {
  if (!cfg.grader.empty()) {
    try {
      analysis::GraderSpec::parse(cfg.grader);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("bad --grader: {}", e.what()));
    }
  }
  if (!cfg.consistency) return;
  if (cfg.turns > 1) {
    throw ConfigError("--consistency compares single requests: multi-turn sessions (--turns) resend each answer, so "
                      "a session's later prompts differ between the runs; drop --turns or --consistency");
  }
  if (cfg.shard.sharded()) {
    throw ConfigError("--consistency needs the whole run's answers in one process: run it unsharded");
  }
  if (!cfg.consistency_reference.empty() &&
      !std::filesystem::is_regular_file(std::filesystem::path(cfg.consistency_reference) / "requests.jsonl")) {
    throw ConfigError(fmt::format("--reference {}: no requests.jsonl there: give the output directory of an earlier "
                                  "run made with --save-outputs",
                                  cfg.consistency_reference));
  }
}

// --tools/--json-schema: the files load, the choice names a tool, and the API can carry them.
void check_structured_settings(const ScenarioConfig& cfg) {
  const StructuredConfig& sc = cfg.structured;
  if (!sc.any()) {
    if (cfg.structured.tool_choice != "required" || cfg.structured.tool_ratio != 1.0) {
      throw ConfigError("--tool-choice and --tool-ratio go with --tools: give --tools builtin or a JSON file of tools");
    }
    if (cfg.structured.structured_ratio != 1.0) {
      throw ConfigError("--structured-output-ratio goes with --json-schema: give --json-schema builtin or a schema file");
    }
  } else {
    const StructuredMix mix(sc, data_seed(cfg.seed));
    const ApiKind api = parse_backend(cfg.backend).api;
    if (!sc.tools.empty() && (api == ApiKind::kCompletions || api == ApiKind::kSglang)) {
      throw ConfigError("--tools needs a chat-style API: add --backend openai-chat, openai-responses or anthropic "
                        "(completions and /generate have no tools)");
    }
  }
  if (cfg.conversation_state == "server" && parse_backend(cfg.backend).api != ApiKind::kResponses) {
    throw ConfigError("--conversation-state server is the Responses API's previous_response_id: add --backend "
                      "openai-responses, or leave it at history");
  }
}

}  // namespace

void check_before_contact(const ScenarioConfig& cfg) {
  if (cfg.shard.start_at) check_start_at(*cfg.shard.start_at, std::chrono::system_clock::now());
  ScenarioConfig probe = cfg;
  if (may_be_timed(probe)) {
    probe.timed_arrivals = true;
    if (!probe.scenario_explicit) probe.kind = ScenarioKind::kServer;
  }
  probe.validate();
  shard_config(probe);  // can this scenario be split this way?
  RequestBuilder check(probe, "", "");  // --extra-body, --backend
  if (!cfg.models.empty()) {
    ModelMix(cfg.models, cfg.model_weights, cfg.seed);  // --model-weights
  } else if (!cfg.model_weights.empty()) {
    throw ConfigError("--model-weights deals requests over several models: give them as --model a,b,c");
  }
  check_correctness_settings(cfg);
  check_structured_settings(cfg);
}

namespace {

net::TransportOptions transport_options(const ScenarioConfig& cfg) {
  net::TransportOptions t;
  t.timeout = cfg.timeout;
  t.idle_timeout = cfg.idle_timeout;
  t.connect_timeout = cfg.connect_timeout;
  t.ca_cert = cfg.ca_cert;
  t.insecure = cfg.insecure;
  return t;
}

// --tokenizer PATH, or a clear error (exit 2) naming the file, what is unsupported and the fix.
std::unique_ptr<tokenizer::Tokenizer> load_model_tokenizer(const std::string& path) {
  try {
    return tokenizer::load_tokenizer(path);
  } catch (const tokenizer::TokenizerError& e) {
    throw ConfigError(fmt::format("--tokenizer {}: {}", path, e.what()));
  }
}

// What the run learns from the server and its workload before the load.
struct Prepared {
  net::ModelsInfo models;
  CalibrationResult calibration;
  std::unique_ptr<Workload> workload;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // --tokenizer
  std::vector<Nanos> timed;  // a trace's own arrival offsets (timed arrivals)
};

// --model names a model the server's list does not: a warning before the load, not an error (a
// gateway may route names it does not list; vLLM lists a LoRA adapter only once it is loaded).
void warn_of_unlisted_models(const ScenarioConfig& cfg, const net::ModelsInfo& listed, const BaseUrl& url) {
  if (listed.ids.empty() || !listed.problem.empty()) return;
  const std::vector<std::string> asked = cfg.models.empty() ? std::vector<std::string>{cfg.model} : cfg.models;
  std::vector<std::string> missing;
  for (const auto& m : asked) {
    if (std::find(listed.ids.begin(), listed.ids.end(), m) == listed.ids.end()) missing.push_back(printable(m));
  }
  if (missing.empty()) return;
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < listed.ids.size() && i < 8; ++i) shown.push_back(printable(listed.ids[i]));
  fmt::print(stderr,
             "llmload: warning: GET {}/v1/models does not list --model {} (it lists {}{}): requests for it may "
             "fail (HTTP 404); check --model\n",
             url.to_string(), fmt::join(missing, ","), fmt::join(shown, ", "),
             listed.ids.size() > shown.size() ? fmt::format(" and {} more", listed.ids.size() - shown.size()) : "");
}

// The server's models (and the model, when none was given), the prompt calibration, the
// workload, and the settings only the workload knows (trace replay); then the final validation.
Prepared prepare(ScenarioConfig& cfg, boost::asio::io_context& ioc, Transport& transport, const BaseUrl& url) {
  Prepared p;
  try {
    const auto [bearer, headers] = key_and_headers(cfg);
    p.models = net::probe_models(ioc, transport, url.to_string(), url.path, url.host_header(), bearer, headers,
                                 !cfg.model.empty());
    if (!p.models.problem.empty()) {
      fmt::print(stderr, "llmload: warning: {}; going on with --model {} as given\n",
                 cfg.secrets().for_output(p.models.problem), printable(cfg.model));
    }
    if (cfg.model.empty()) {
      if (p.models.ids.empty()) {
        throw ConfigError(fmt::format("GET {}/v1/models listed no models: pass --model", url.to_string()));
      }
      cfg.model = p.models.ids.front();
      if (printable(cfg.model) != cfg.model) {
        throw ConfigError(fmt::format("the first model GET {}/v1/models lists, '{}', has control characters in its "
                                      "id: pass --model with the model to use",
                                      url.to_string(), printable(cfg.model)));
      }
    }
    warn_of_unlisted_models(cfg, p.models, url);
    if (!cfg.tokenizer.empty()) p.tokenizer = load_model_tokenizer(cfg.tokenizer);
    p.calibration = calibrate(cfg, ioc, transport, url, p.tokenizer.get());
  } catch (const ConfigError& e) {
    throw ConfigError(cfg.secrets().for_output(e.what()));  // the server may echo a secret back
  }
  // An answer that echoes the request (its headers) is stored in the conditions: without secrets.
  p.models.raw = cfg.secrets().redact(std::move(p.models.raw));
  p.models.problem = cfg.secrets().for_output(p.models.problem);
  const std::optional<std::uint64_t> max_items =
      cfg.num_requests ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(
                             std::max({*cfg.num_requests, cfg.min_requests.value_or(0), cfg.sequential_cap}) + cfg.warmup.requests))
                       : std::nullopt;
  p.workload = make_workload(cfg.workload, cfg.input_tokens, cfg.output_tokens, max_items, data_seed(cfg.seed),
                             p.calibration.model);
  if (p.workload->timed() && may_be_timed(cfg)) {
    cfg.timed_arrivals = true;
    if (!cfg.scenario_explicit) cfg.kind = ScenarioKind::kServer;
    const auto n = p.workload->size().value_or(0);
    p.timed.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) p.timed.push_back(p.workload->item(i).arrival.value_or(Nanos(0)));
    if (!cfg.num_requests) cfg.num_requests = static_cast<std::int64_t>(n) - cfg.warmup.requests;
    if (cfg.num_requests && *cfg.num_requests < 1) {
      throw ConfigError(fmt::format("the trace window holds {} requests, no more than the --warmup of {}: widen the "
                                    "window or lower --warmup",
                                    n, cfg.warmup.requests));
    }
  } else if (cfg.workload.dataset != "random" && !cfg.num_requests && !cfg.duration) {
    if (auto n = p.workload->size()) cfg.num_requests = static_cast<std::int64_t>(*n);
  }
  if (cfg.timed_arrivals && cfg.request_rate > 0) {
    throw ConfigError("--request-rate does not apply to a trace replay (requests keep the trace's own times): use "
                      "--time-scale to replay faster or slower");
  }
  cfg.validate();
  return p;
}

// Everyone ready: waits for the common start (the MPI launcher synchronizes its ranks in
// hooks.ready) and records it in cfg. False when a signal ended the wait.
bool wait_for_start(ScenarioConfig& cfg, const ScenarioConfig& local, const RunHooks& hooks,
                    const std::string& shard_label) {
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
    if (!sleep_until_wall(*start_at)) return false;
  }
  cfg.shard.start_at = start_at;
  return stop_signal() == 0;
}

// run-in-progress.json (run_journal.hpp): the conditions and the rules that judge the run.
json in_progress(const json& conditions, const ScenarioConfig& cfg, const ScenarioConfig& local,
                 const RunController& controller) {
  return {{"artifact", "run-in-progress"},
          {"schema_version", kSchemaVersion},
          {"about", "written when the run started and removed once result.json is written: a run that left it did "
                    "not finish; `llmload report DIR` rebuilds result.json from requests.jsonl"},
          {"conditions", conditions},
          {"load", offered_load(cfg)},
          {"judging", judging_json(controller.validity_options(), controller.verdict_view(), local.slo, local.warmup,
                                   local.duration)}};
}

// The server's own metrics (Prometheus /metrics), co-computed with this run: a snapshot before,
// a series during, a snapshot after. Absent or broken metrics never fail the run.
void start_scraper(std::optional<net::MetricsScraper>& scraper, const ScenarioConfig& cfg, const BaseUrl& url,
                   const std::string& models_raw) {
  if (!cfg.server_metrics_interval) return;
  net::ScraperOptions so;
  so.url = url;
  so.api_key = cfg.api_key;
  so.headers = cfg.headers;
  so.ca_cert = cfg.ca_cert;
  so.insecure = cfg.insecure;
  so.interval = *cfg.server_metrics_interval;
  const json listed = json::parse(models_raw, nullptr, false);
  if (listed.is_object() && listed.contains("data") && listed["data"].is_array() && !listed["data"].empty() &&
      listed["data"][0].is_object() && listed["data"][0].contains("owned_by") &&
      listed["data"][0]["owned_by"].is_string()) {
    so.server_hint = listed["data"][0]["owned_by"].get<std::string>();
  }
  scraper.emplace(std::move(so));
  if (scraper->probe()) scraper->start();
}

// The progress line (a terminal), a line every 10 s (a log), the warnings and the
// over-saturation watch while the load runs.
MonitorOptions monitor_options(const ScenarioConfig& cfg, const ScenarioConfig& local, const RunHooks& hooks) {
  MonitorOptions m;
  m.progress_line = !cfg.quiet && isatty(STDERR_FILENO) == 1 && std::getenv("TERM") != nullptr &&
                    std::string_view(std::getenv("TERM")) != "dumb";
  // Not a terminal (a CI log, a pipe): the same line, as a line of its own every 10 s.
  if (!cfg.quiet && !m.progress_line) m.log_interval = kProgressLogInterval;
  m.watch_saturation = hooks.watch_saturation;
  if (local.num_requests) m.planned_requests = *local.num_requests + local.warmup.requests;
  m.warmup_requests = local.warmup.requests;
  if (local.min_requests) m.min_requests = *local.min_requests + local.warmup.requests;
  if (local.duration) m.planned_duration = *local.duration + local.warmup.duration;
  // A warning is said even when quiet (--quiet drops progress and notes); a worker's would reach
  // the parent only at the end, from its log, so it leaves the live ones out.
  if (hooks.live_warnings) {
    m.warn = [](const std::string& what) { fmt::print(stderr, "llmload: warning: {}\n", what); };
  }
  m.label = hooks.label;
  Nanos stage_start{0};
  for (const auto& s : local.arrivals.stages) {
    if (stage_start > Nanos(0)) m.load_changes.push_back(stage_start);
    stage_start += s.duration;
  }
  return m;
}

// The process's user and system CPU so far, in seconds.
std::pair<double, double> process_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return {s(u.ru_utime), s(u.ru_stime)};
}

}  // namespace

RunOutcome run_once(const ScenarioConfig& cfg_in, const std::vector<std::string>& argv, const json& env_settings,
                    const RunHooks& hooks) {
  install_stop_handler();  // a signal before the load (calibration, the start wait) is recorded
  if (stop_signal() != 0) return interrupted_before_load(cfg_in);
  ScenarioConfig cfg = cfg_in;
  cfg.endpoint = parse_backend(cfg.backend).api;
  if (cfg.api_key.empty()) {
    // The SDKs' variables: ANTHROPIC_API_KEY for the Messages API, OPENAI_API_KEY otherwise.
    const char* var = cfg.endpoint == ApiKind::kAnthropic && std::getenv("ANTHROPIC_API_KEY") != nullptr
                          ? "ANTHROPIC_API_KEY"
                          : "OPENAI_API_KEY";
    if (const char* k = std::getenv(var); k != nullptr) cfg.api_key = k;
  }
  check_before_contact(cfg);
  const BaseUrl url = parse_base_url(cfg.base_url);
  if (url.scheme != "https" && (!cfg.ca_cert.empty() || cfg.insecure)) {
    fmt::print(stderr, "llmload: warning: --ca-cert/--insecure apply to https:// only; {} is plain HTTP\n",
               url.to_string());
  }
  if (cfg.shard.sharded() && !cfg.shard.start_at && !hooks.ready) {
    fmt::print(stderr, "llmload: warning: shard {} of {} has no --start-at: it starts as soon as it is ready, not "
                       "together with the other shards\n", cfg.shard.index, cfg.shard.count);
  }
  if (const auto w = temp_dir_warning()) fmt::print(stderr, "llmload: warning: {}\n", *w);
  // The output directory is claimed (created, its writability probed) before anything is sent;
  // a run refused before its load leaves no empty directory behind (issue 16).
  EmptyDirGuard dir_guard(cfg.output_dir);
  claim_output_dir(cfg.output_dir, cfg.overwrite);
  raise_open_file_limit();

  boost::asio::io_context ioc;
  SteadyClock clock;
  net::AsioTransport transport(ioc, clock, url, transport_options(cfg));
  Prepared prep = prepare(cfg, ioc, transport, url);
  // This shard's part: `cfg` stays the whole run (recorded in the artifact), `local` is what this
  // process issues.
  const ScenarioConfig local = shard_config(cfg);
  check_open_file_limit(most_in_flight(local));
  ShardPlan plan = plan_shard(local, local.timed_arrivals ? &prep.timed : nullptr);
  RequestBuilder builder(local, url.path, url.host_header(), prep.workload.get());
  RunController controller(local, clock, *plan.pacer, transport, builder);
  if (local.shard.sharded()) controller.set_shard_plan(&plan);
  controller.set_tokenizer(prep.tokenizer.get());
  // --probe-rate: the probe stream beside the load (shard 0 sends it for a sharded run), and its
  // unloaded reference before the load.
  std::optional<ProbeStream> probes;
  std::vector<analysis::RequestRecord> probe_baseline;
  if (local.probe.enabled() && local.shard.index == 0) {
    probes.emplace(local, url.path, url.host_header(), prep.calibration.model);
    controller.set_probe_stream(&*probes);
    probe_baseline = run_probe_baseline(ioc, clock, transport, *probes, url, local.probe.baseline);
    if (stop_signal() != 0) return interrupted_before_load(cfg);
  }
  std::optional<HttpTraceLog> http_trace;
  if (cfg.trace_http > 0 && !cfg.output_dir.empty()) {
    http_trace.emplace(std::filesystem::path(cfg.output_dir) / "http-trace.jsonl",
                       static_cast<std::size_t>(cfg.trace_http), cfg.secrets());
    controller.set_http_trace(&*http_trace);
  }
  const std::string shard_label =
      local.shard.sharded() ? fmt::format(" (shard {} of {})", local.shard.index, local.shard.count) : std::string();
  if (!wait_for_start(cfg, local, hooks, shard_label)) return interrupted_before_load(cfg);

  const WallTime wall_start = std::chrono::time_point_cast<Nanos>(std::chrono::system_clock::now());
  if (!cfg.quiet) {
    fmt::print(stderr, "llmload {}: {} against {}{} model '{}'{}{}\n", kVersion, scenario_summary(cfg), url.to_string(),
               builder.path(), cfg.model, shard_label, hooks.label.empty() ? "" : " [" + hooks.label + "]");
  }
  // Requests are streamed to requests.jsonl as they complete, beside run-in-progress.json: a run
  // killed outright still leaves what it measured (run_journal.hpp; `llmload report` rebuilds).
  const json conditions = run_conditions(cfg, local, url, builder, prep.models, argv, env_settings, prep.calibration,
                                         *prep.workload, wall_start);
  RunJournal journal(cfg.output_dir, in_progress(conditions, cfg, local, controller),
                     [&](const analysis::RequestRecord& r) { return request_line(r, local, plan); });
  dir_guard.keep();  // the load starts: the directory holds the run from here on
  std::optional<net::MetricsScraper> scraper;
  start_scraper(scraper, cfg, url, prep.models.raw);
  MonitorOptions mopts = monitor_options(cfg, local, hooks);
  // Over-saturated: stop releasing, and cancel what waits in the server's queue (draining it would
  // take as long as the overload built up; the point fails either way). The canceled requests
  // are recorded as such (error class stopped_early).
  mopts.stop = [&](const std::string& reason) { controller.stop_now(reason); };
  RunMonitor monitor(controller, clock, mopts);
  controller.on_record = [&](const analysis::RequestRecord& r) {
    journal.append(r);
    monitor.observe(r);
  };
  const bool monitor_ticks = mopts.progress_line || mopts.watch_saturation || mopts.log_interval || mopts.warn;
  net::DriveOptions dopts;
  dopts.stop_requested = [] { return stop_signal() != 0; };
  dopts.on_signal = note_stop_signal;
  dopts.drain_timeout = cfg.drain_timeout;
  dopts.hard_limit = local.max_duration;
  dopts.spin_lead = cfg.schedule_spin;
  dopts.tick_interval = RunMonitor::kTick;
  dopts.on_tick = [&] {
    if (monitor_ticks) monitor.tick();
    journal.tick();
  };

  // The client's own CPU while the load ran: whether the client could have been the bottleneck.
  const auto cpu_before = process_cpu();
  const auto wall_before = std::chrono::steady_clock::now();
  net::drive(ioc, controller, dopts);
  install_stop_handler();  // Asio put the default action back
  journal.close();
  if (const auto& e = controller.record_spill_error()) {
    fmt::print(stderr, "llmload: warning: {}: they were kept in memory instead\n", *e);
  } else if (const auto& dir = controller.record_spill_memory_dir()) {
    fmt::print(stderr,
               "llmload: warning: the run's records were kept in a temporary file in {}, which is held in "
               "memory (tmpfs): set TMPDIR to a directory on disk to keep a long run's memory flat\n",
               *dir);
  }
  if (http_trace) http_trace->close();
  if (http_trace && http_trace->error()) {
    fmt::print(stderr, "llmload: warning: {}\n", *http_trace->error());
  } else if (http_trace && !cfg.quiet) {
    fmt::print(stderr, "llmload: {} exchanges traced in {}\n", http_trace->written(), http_trace->path().string());
  }
  const auto cpu_after = process_cpu();
  const ClientCost cost{cpu_after.first - cpu_before.first, cpu_after.second - cpu_before.second,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count()};
  monitor.finish();
  if (scraper && scraper->available()) scraper->stop();
  if (scraper) scraper->set_t0(controller.start_time());

  const analysis::RunMetrics metrics = controller.metrics(cost.core_share());
  const json tokens = analysis::token_accounting(controller.records());
  const std::vector<analysis::StageMetrics> stages = run_stages(cfg, local, controller, metrics);
  const json probe = probes ? probe_section(cfg, *probes, metrics.window, probe_baseline) : json(nullptr);
  if (hooks.print_report) {
    print_console_report(cfg, metrics, tokens, stages, shard_label, cost.user_s + cost.system_s, cost.wall_s,
                         controller.interrupted(), controller.sequential());
    fmt::print("{}", analysis::probe_console(probe));
    std::fflush(stdout);
  }
  RunOutcome outcome;
  outcome.exit_code = controller.interrupted() ? kExitInterrupted : kExitOk;
  outcome.result = run_result(cfg, controller, metrics, conditions, tokens, stages, cost,
                              transport.connections_opened(), scraper ? &*scraper : nullptr);
  outcome.result["probe"] = probe;
  add_accuracy(outcome.result, cfg, controller.records(), metrics);
  if (cfg.consistency && !controller.interrupted()) {
    // The load's results are written whatever becomes of the comparison: a reference pass that
    // cannot run (the server gone, a bad --reference) is reported in the section, not thrown.
    try {
      outcome.result["consistency"] =
          check_consistency(cfg, analysis::to_vector(controller.records()), prep.tokenizer.get(), [&](const ScenarioConfig& ref) {
          if (!cfg.quiet) fmt::print(stderr, "llmload: consistency: the compared prompts again at concurrency 1\n");
          RunHooks h;
          h.print_report = false;
          h.gate_nothing_measured = false;
          h.label = "consistency reference";
          run_once(ref, argv, env_settings, h);
          return ref.output_dir;
        });
    } catch (const std::exception& e) {
      outcome.result["consistency"] = {{"error", e.what()}, {"compared", 0}};
      fmt::print(stderr, "llmload: error: consistency not measured: {}\n", e.what());
      outcome.exit_code = kExitConfig;
    }
  }
  outcome.result["scorecard"] = scorecard(outcome.result);
  if (hooks.print_report) {
    if (const std::string lines = correctness_report(outcome.result); !lines.empty()) fmt::print("{}", lines);
  }
  // The journal's requests.jsonl is the final one unless a line is missing or a record was
  // relabeled after it was written (run_journal.hpp).
  const bool requests_written = journal.whole(controller.records().size()) && !controller.records_relabeled();
  if (!write_artifact(cfg, local, plan, controller.records(), requests_written, metrics, outcome.result, wall_start,
                      hooks)) {
    outcome.exit_code = kExitFailure;
  }
  if (probes) {
    if (const std::string e = write_probes_file(cfg.output_dir, *probes, probe_baseline); !e.empty()) {
      fmt::print(stderr, "llmload: error: {}\n", e);
      outcome.exit_code = kExitFailure;
    }
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
