#include "settings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/model_mix.hpp"
#include "llmload/loadgen/schedule.hpp"
#include "probe_settings.hpp"

namespace llmload::app {
namespace {

constexpr std::size_t kMaxScenarioFileBytes = 1 << 20;  // settings only: 1 MiB is far beyond any

std::int64_t parse_int(const std::string& v, const std::string& origin, std::int64_t min) {
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < min) {
    throw ConfigError(fmt::format("bad {} '{}': expected an integer >= {}", origin, v, min));
  }
  return n;
}

double parse_double(const std::string& v, const std::string& origin) {
  double d = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(d) || d < 0) {
    throw ConfigError(fmt::format("bad {} '{}': expected a non-negative number", origin, v));
  }
  return d;
}

Nanos parse_dur(const std::string& v, const std::string& origin) {
  try {
    return parse_duration(v);  // with its unit: the help says so, and a bare 10 could mean anything
  } catch (const DurationParseError& e) {
    throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
  }
}

bool parse_bool(const std::string& v, const std::string& origin) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw ConfigError(fmt::format("bad {} '{}': expected true or false", origin, v));
}

std::string normalize(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : v) {
    if (c == ',' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// vLLM's --goodput "ttft:100 tpot:50 e2el:2000" (milliseconds) as an --slo spec.
std::string goodput_to_slo(const std::string& v, const std::string& origin) {
  std::string spec;
  for (const auto& part : split_list(v)) {
    const auto colon = part.find(':');
    if (colon == std::string::npos) {
      throw ConfigError(fmt::format("bad {} '{}': give metric:milliseconds pairs, e.g. --goodput ttft:500 tpot:50", origin,
                                    part));
    }
    std::string metric = part.substr(0, colon);
    if (metric == "e2el") metric = "e2e";
    spec += (spec.empty() ? "" : ",") + metric + ":" + part.substr(colon + 1) + "ms";
  }
  if (spec.empty()) throw ConfigError(fmt::format("bad {}: empty; e.g. --goodput ttft:500 tpot:50", origin));
  return spec;
}

std::optional<Nanos> parse_opt_dur(const std::string& v, const std::string& origin) {
  const Nanos d = parse_dur(v, origin);
  if (d.count() < 0) throw ConfigError(fmt::format("bad {} '{}': must not be negative", origin, v));
  return d;
}

// Tool calls, structured output and how sessions carry the conversation (issue 19).
bool apply_structured_setting(const std::string& name, const std::string& value, const std::string& origin,
                              ScenarioConfig& cfg) {
  auto ratio = [&] {
    const double r = parse_double(value, origin);
    if (r > 1) throw ConfigError(fmt::format("bad {} '{}': a share of the requests, in [0, 1]", origin, value));
    return r;
  };
  if (name == "tools") {
    cfg.structured.tools = value;
  } else if (name == "tool-choice") {
    cfg.structured.tool_choice = value;  // checked against the tools when they are loaded
  } else if (name == "tool-ratio") {
    cfg.structured.tool_ratio = ratio();
  } else if (name == "json-schema") {
    cfg.structured.json_schema = value;
  } else if (name == "structured-output-ratio") {
    cfg.structured.structured_ratio = ratio();
  } else if (name == "conversation-state") {
    if (value != "history" && value != "server") {
      throw ConfigError(fmt::format("bad {} '{}': use history (resend the conversation, default) or server (Responses "
                                    "API: previous_response_id)", origin, value));
    }
    cfg.conversation_state = value;
  } else {
    return false;
  }
  return true;
}

bool apply_extended_setting(const std::string& name, const std::string& value, const std::string& origin,
                            ScenarioConfig& cfg) {
  auto& w = cfg.workload;
  if (apply_structured_setting(name, value, origin, cfg)) return true;
  if (apply_probe_setting(name, value, origin, cfg)) return true;
  if (name == "backend") {
    cfg.backend = value;
    cfg.backend_explicit = true;
  } else if (name == "extra-body") {
    cfg.extra_body = value;
  } else if (name == "header") {
    const auto colon = value.find(':');
    std::string key = value.substr(0, colon);
    if (colon == std::string::npos || key.empty() ||
        key.find_first_of(" \t\r\n") != std::string::npos) {
      throw ConfigError(fmt::format("bad {} '{}': give 'Name: value', e.g. --header 'X-Team: perf'", origin, value));
    }
    // The fields that frame the request or the connection are llmload's: a second Content-Length
    // or Host makes the request ambiguous (a server may take either, or refuse it).
    std::string lower = key;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* framing : {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te",
                                "trailer", "upgrade", "expect"}) {
      if (lower == framing) {
        throw ConfigError(fmt::format("bad {} '{}': {} is set by llmload (it frames the request or the connection) "
                                      "and cannot be given; drop it",
                                      origin, key, key));
      }
    }
    std::string val = value.substr(colon + 1);
    while (!val.empty() && val.front() == ' ') val.erase(val.begin());
    if (val.find_first_of("\r\n") != std::string::npos) {
      throw ConfigError(fmt::format("bad {}: a header value must not contain line breaks", origin));
    }
    cfg.headers.emplace_back(std::move(key), std::move(val));
  } else if (name == "ignore-eos") {
    cfg.ignore_eos = parse_bool(value, origin);
  } else if (name == "continuous-usage") {
    cfg.continuous_usage = parse_bool(value, origin);
  } else if (name == "ca-cert") {
    cfg.ca_cert = value;
  } else if (name == "insecure") {
    cfg.insecure = parse_bool(value, origin);
  } else if (name == "server-metrics-interval") {
    if (value == "off") {
      cfg.server_metrics_interval.reset();
    } else {
      cfg.server_metrics_interval = parse_dur(value, origin);
    }
  } else if (name == "connect-timeout") {
    cfg.connect_timeout = *parse_opt_dur(value, origin);
  } else if (name == "first-token-timeout") {
    cfg.first_token_timeout = *parse_opt_dur(value, origin);
  } else if (name == "inter-token-timeout") {
    cfg.inter_token_timeout = *parse_opt_dur(value, origin);
  } else if (name == "tokenizer") {
    cfg.tokenizer = value;
  } else if (name == "trace-http") {
    cfg.trace_http = parse_int(value, origin, 0);
  } else if (name == "save-outputs") {
    cfg.save_outputs = parse_bool(value, origin);
  } else if (name == "grader") {
    cfg.grader = value;
  } else if (name == "consistency") {
    cfg.consistency = parse_bool(value, origin);
  } else if (name == "consistency-requests") {
    cfg.consistency_requests = parse_int(value, origin, 1);
  } else if (name == "consistency-tokens") {
    if (value != "logprobs" && value != "token-ids" && value != "none") {
      throw ConfigError(fmt::format("bad {} '{}': use logprobs (the OpenAI field, default), token-ids (vLLM's "
                                    "return_token_ids) or none (compare by --tokenizer or words)",
                                    origin, value));
    }
    cfg.consistency_tokens = value;
  } else if (name == "reference") {
    cfg.consistency_reference = value;
    cfg.consistency = true;
  } else if (name == "dataset-name") {
    if (value != "random" && value != "sharegpt" && value != "custom" && value != "trace" && value != "gsm8k" &&
        value != "mmlu") {
      throw ConfigError(fmt::format("bad {} '{}': use random, sharegpt, custom, trace, gsm8k or mmlu", origin, value));
    }
    w.dataset = value;
  } else if (name == "dataset-path") {
    w.dataset_path = value;
  } else if (name == "input-dist") {
    w.input_dist = value;
  } else if (name == "output-dist") {
    w.output_dist = value;
  } else if (name == "traffic-scenario") {
    w.genai_scenario = value;
  } else if (name == "random-input-len") {
    cfg.input_tokens = parse_int(value, origin, 1);
  } else if (name == "random-output-len") {
    cfg.output_tokens = parse_int(value, origin, 1);
  } else if (name == "random-range-ratio") {
    w.random_range_ratio = parse_double(value, origin);
    if (w.random_range_ratio >= 1) {
      throw ConfigError(fmt::format("bad {} '{}': must be in [0, 1)", origin, value));
    }
  } else if (name == "random-prefix-len") {
    w.prefix_tokens = parse_int(value, origin, 0);
    if (w.prefix_groups == 0 && w.prefix_tokens > 0) w.prefix_groups = 1;
  } else if (name == "prefix-groups") {
    w.prefix_groups = parse_int(value, origin, 0);
  } else if (name == "prefix-tokens") {
    w.prefix_tokens = parse_int(value, origin, 0);
  } else if (name == "sharegpt-output-len") {
    w.sharegpt_output_len = parse_int(value, origin, 1);
  } else if (name == "prompt-calibration") {
    if (value != "auto" && value != "tokenize" && value != "estimate") {
      throw ConfigError(fmt::format("bad {} '{}': use auto, tokenize or estimate", origin, value));
    }
    cfg.prompt_calibration = value;
  } else if (name == "trace") {
    w.dataset = "trace";
    w.trace_path = value;
  } else if (name == "trace-format") {
    if (value != "azure" && value != "mooncake") {
      throw ConfigError(fmt::format("bad {} '{}': use azure or mooncake (or leave it out to detect)", origin, value));
    }
    w.trace_format = value;
  } else if (name == "time-scale") {
    w.time_scale = parse_double(value, origin);
    if (w.time_scale <= 0) throw ConfigError(fmt::format("bad {} '{}': must be > 0 (2 = twice as fast)", origin, value));
  } else if (name == "trace-start") {
    w.trace_start = parse_opt_dur(value, origin);
  } else if (name == "trace-duration") {
    w.trace_duration = parse_opt_dur(value, origin);
  } else if (name == "turns") {
    cfg.turns = parse_int(value, origin, 1);
  } else if (name == "think-time") {
    cfg.think_time = *parse_opt_dur(value, origin);
  } else if (name == "num-prompts") {
    cfg.num_requests = parse_int(value, origin, 1);
  } else if (name == "arrival-process") {
    cfg.arrivals.process = value;
  } else if (name == "burstiness") {
    cfg.arrivals.burstiness = parse_double(value, origin);
    if (cfg.arrivals.process == "poisson") cfg.arrivals.process = "gamma";
  } else if (name == "ramp") {
    cfg.arrivals.ramp = value;
  } else if (name == "ramp-duration") {
    cfg.arrivals.ramp_duration = *parse_opt_dur(value, origin);
  } else if (name == "ramp-start-rate") {
    cfg.arrivals.ramp_start_rate = parse_double(value, origin);
  } else if (name == "stages") {
    cfg.arrivals.stages = parse_stages(value);  // its errors name --stages
    cfg.kind = ScenarioKind::kStages;
  } else if (name == "max-concurrency") {
    cfg.max_inflight = parse_int(value, origin, 1);
  } else if (name == "goodput") {
    try {
      cfg.slo = analysis::parse_slo(goodput_to_slo(value, origin));
    } catch (const analysis::SloParseError& e) {
      throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
    }
  } else if (name == "percentile-metrics") {
    cfg.percentile_metrics.clear();
    for (const auto& m : split_list(value)) {
      static const std::vector<std::string> kKnown = {"ttft", "ttfo", "tpot",   "itl",    "e2e",
                                                      "e2el", "ttft_rt", "ttfo_rt", "e2e_rt", "schedule_lag"};
      if (std::find(kKnown.begin(), kKnown.end(), m) == kKnown.end()) {
        throw ConfigError(fmt::format("bad {}: unknown metric '{}'; use ttft, ttfo, tpot, itl, e2el, ttft_rt, ttfo_rt, "
                                      "e2e_rt, schedule_lag",
                                      origin, m));
      }
      cfg.percentile_metrics.push_back(m);
    }
  } else if (name == "metric-percentiles") {
    cfg.metric_percentiles.clear();
    for (const auto& p : split_list(value)) {
      const double d = parse_double(p, origin);
      if (d <= 0 || d > 100) throw ConfigError(fmt::format("bad {} '{}': percentiles are in (0, 100]", origin, p));
      cfg.metric_percentiles.push_back(d);
    }
  } else if (name == "shard-count") {
    cfg.shard.count = parse_int(value, origin, 1);
    cfg.shard.count_given = true;
  } else if (name == "shard-index") {
    cfg.shard.index = parse_int(value, origin, 0);
    cfg.shard.index_given = true;
  } else if (name == "start-at") {
    cfg.shard.start_at = parse_start_at(value, origin);
  } else if (name == "result-dir") {
    cfg.output_dir = value;
  } else if (name == "save-result") {
    cfg.save_result = parse_bool(value, origin);
  } else {
    return false;
  }
  return true;
}

}  // namespace

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> kSettings = {
      {"scenario", "single-stream | server | offline | concurrency"},
      {"base-url", "server URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is accepted)"},
      {"endpoint", "completions | chat (same as --backend openai-completions/openai-chat), or vLLM's request path, "
                   "e.g. /v1/chat/completions"},
      {"model", "model name (default: the first model of GET /v1/models); several, comma-separated (a,b,c: models "
                "or LoRA adapters), deal the requests over them by --model-weights, with results per model"},
      {"tools", "tool-call workload: builtin (four function tools) or a JSON file of tools (OpenAI, Responses or "
                "Anthropic form); each tool call is checked against its tool's schema (docs/workloads.md)"},
      {"tool-choice", "with --tools: required (default: every such request must call a tool) | auto | none | a tool's "
                      "name"},
      {"tool-ratio", "with --tools: the share of requests that carry the tools, seeded (default 1)"},
      {"json-schema", "structured output: builtin (a product record) or a JSON Schema file; each answer is parsed and "
                      "checked against it, the invalid rate reported (docs/workloads.md)"},
      {"structured-output-ratio", "with --json-schema: the share of requests that ask for it, seeded (default 1)"},
      {"conversation-state", "multi-turn sessions: history (resend the conversation each turn, default) | server "
                             "(--backend openai-responses: previous_response_id and the new input only)"},
      {"model-weights", "with --model a,b,c: each request's model drawn (seeded) by these weights, one per model "
                        "(e.g. 5,3,2), or zipf[:S] (the k-th model weighs 1/k^S; S default 1); default: alike"},
      {"api-key", "API key sent as 'Authorization: Bearer' (--backend anthropic: 'x-api-key'; default: "
                  "$OPENAI_API_KEY, or $ANTHROPIC_API_KEY with --backend anthropic); never written out",
       false},
      {"input-tokens", "prompt length in tokens (synthesized prompts)"},
      {"output-tokens", "output length in tokens (max_tokens, with ignore_eos and min_tokens)"},
      {"seed", "base seed; arrival and data seeds are derived from it"},
      {"num-requests", "measured requests (warmup not included); default (no --duration): 1000, or with --slo until "
                       "the SLO verdict is conclusive (sequential stopping, bounded by --max-duration, 10m by default)"},
      {"duration", "length of the measurement window, e.g. 60s"},
      {"warmup", "discarded warmup: a number of requests (e.g. 20), a time (e.g. 5s), or auto (the start of steady "
                 "state detected from the run's interval series, MSER-5)"},
      {"min-duration", "MLPerf-style minimum: keep issuing until the measurement window lasts at least this (e.g. "
                       "60s) and --min-requests are done; a shorter run is INVALID"},
      {"min-requests", "minimum measured requests (default: enough for the requested percentiles); a run with "
                       "fewer is INVALID"},
      {"max-duration", "hard bound on the load, warmup included (e.g. 10m): stops issuing even if minimums are not "
                       "met, and cancels what is still in flight then (outcome stopped_early)"},
      {"max-error-rate", "validity: a run whose failed fraction of measured requests exceeds this is INVALID "
                         "(default 0.05)"},
      {"trials", "independent repetitions of the run (new connections, seeds derived from --seed and the trial); "
                 "metrics are the median across trials with min-max and a 95% interval"},
      {"trial-pause", "pause between trials, e.g. 5s (default 0)"},
      {"fail-on-slo", "exit status 3 when the SLO verdict is FAIL, 4 when INCONCLUSIVE (for CI gates)"},
      {"quiet", "print only the final report and warnings (no progress line, no notes)"},
      {"verbose", "print more: per-trial results, server-metric cross-checks, window choice"},
      {"devices", "devices (GPUs or replicas) serving the endpoint: recorded for `llmload scaling` and cost"},
      {"price-per-hour", "price of one device-hour (any currency): the result gets the cost per 1M output tokens"},
      {"slo", "SLO bounds and percentile, e.g. ttft:2000ms,tpot:200ms (p99 by default; a bare number is milliseconds, as in vLLM's --goodput); accuracy:0.95 adds a minimum graded "
              "accuracy, judged on its 95% interval"},
      {"request-rate", "server scenario: arrival rate in requests per second (without --scenario it selects "
                       "server; 'inf' selects offline, as in vLLM)"},
      {"max-inflight", "server, offline and rate stages: cap on requests in flight (a capped request keeps its intended "
                       "time, so the wait shows in the from-schedule latencies)"},
      {"concurrency", "concurrency scenario: requests kept in flight"},
      {"output", "directory for result.json, requests.jsonl, latency.hlog and the report (default: a new "
                 "llmload-runs/<time>-<scenario>-<load>); an existing non-empty directory is refused"},
      {"overwrite", "write into a non-empty --output directory, replacing the files a previous run left there"},
      {"timeout", "bound on each whole request (default 10m)"},
      {"idle-timeout", "bound on the silence between bytes of a response (default 60s)"},
      {"stream", "true: SSE streaming (default); false: non-streaming (then TTFT equals E2E)"},
      {"drain-timeout", "after SIGINT/SIGTERM, how long requests in flight may finish (default 30s)"},
      {"schedule-spin", "scheduled (open-loop) sends: wake this long before a send is due and spin to the exact "
                        "time, so timer wake-up latency does not become schedule lag (default 100us; costs up "
                        "to that much CPU per send; 0 sleeps on the timer alone)"},
      {"api-key-file", "read the API key from this file (first line); never written out"},
      // Backends and connections
      {"backend", "openai-completions (default; also 'openai', 'vllm') | openai-chat | openai-responses "
                  "(/v1/responses) | anthropic (Messages API, /v1/messages) | sglang (native /generate)"},
      {"extra-body", "JSON object merged into every request body, e.g. '{\"top_p\": 0.9}'"},
      {"header", "extra request header 'Name: value' (repeatable)"},
      {"ignore-eos", "true (default): send ignore_eos and min_tokens so outputs have exactly the requested length "
                     "(vLLM's default is false)"},
      {"continuous-usage", "true (default): ask for usage in every chunk (stream_options.continuous_usage_stats), so "
                           "chunks carrying several tokens weigh right in ITL"},
      {"ca-cert", "https: PEM file of the CAs to trust instead of the system's"},
      {"insecure", "https: true to skip certificate verification (not for production numbers)"},
      {"server-metrics-interval", "scrape the server's Prometheus /metrics before, every DURATION during, and after "
                                  "the run into result.json server_metrics (default 1s; 0 = before and after only; "
                                  "off = never)"},
      {"connect-timeout", "bound on TCP connect plus TLS handshake (default 30s; error class connect_timeout)"},
      {"first-token-timeout", "bound on the wait for the first token after the send (default none; error class "
                              "first_token_timeout)"},
      {"inter-token-timeout", "bound on the gap between tokens (default none; error class inter_token_timeout)"},
      {"trace-http", "write the first N exchanges (request and response: headers, body as received, receive times; "
                     "secrets redacted) to http-trace.jsonl in the output directory (default 0: none; docs/wire.md)"},
      // Correctness (docs/metrics.md "Accuracy", "Consistency")
      {"save-outputs", "keep each request's generated text (and its reference) in requests.jsonl, for `llmload score` "
                       "(off by default: texts can be large)"},
      {"grader", "grade every dataset row with this grader instead of its own: exact | normalized | regex:PATTERN | "
                 "choice | number[:TOL] | json"},
      {"consistency", "after the load, send its first --consistency-requests prompts again at concurrency 1 and "
                      "compare the answers request by request (exact-match rate, first divergent token)"},
      {"consistency-requests", "prompts compared by --consistency (default 100)"},
      {"consistency-tokens", "what requests whose outputs are kept (--consistency, --save-outputs) ask the server "
                             "for, to compare token by token: logprobs (default) | token-ids (vLLM's "
                             "return_token_ids) | none (then --tokenizer, else words)"},
      {"reference", "compare the answers with this earlier run's (saved with --save-outputs) instead of a concurrency-1 "
                    "pass; implies --consistency"},
      // Workload
      {"dataset-name", "random (synthesized prompts, default) | sharegpt | custom (JSONL) | trace | gsm8k (GSM8K "
                       "JSONL, graded) | mmlu (MMLU CSV, graded)"},
      {"dataset-path", "file of the sharegpt/custom/gsm8k dataset (or the trace); mmlu: a CSV file or a directory of "
                       "them"},
      {"input-dist", "input length distribution: fixed:N, uniform:MIN,MAX, normal:MEAN,SD, lognormal:MEAN,SD, "
                     "empirical:FILE"},
      {"output-dist", "output length distribution (same forms as --input-dist)"},
      {"traffic-scenario", "genai-bench lengths: D(in,out), N(mu,sd)/(mu,sd), U(min,max)/(min,max)"},
      {"random-input-len", "vLLM name of --input-tokens"},
      {"random-output-len", "vLLM name of --output-tokens"},
      {"random-range-ratio", "vLLM: lengths uniform in [L*(1-r), L*(1+r)] (0 <= r < 1)"},
      {"random-prefix-len", "vLLM: a shared prefix of this many tokens before every prompt (one prefix group)"},
      {"prefix-groups", "shared-prefix workload: number of distinct prefixes"},
      {"prefix-tokens", "shared-prefix workload: tokens in each prefix"},
      {"sharegpt-output-len", "sharegpt: override every output length"},
      {"prompt-calibration", "auto (default: --tokenizer when given, else the server's /tokenize when it has one) | "
                             "tokenize | estimate"},
      {"tokenizer", "the model's tokenizer: a model directory, a tokenizer.json or a tokenizer.model "
                    "(docs/tokenizers.md); counts the generated text of responses without usage, calibrates prompts "
                    "locally, and compares its count with the server's usage"},
      {"trace", "replay a trace file (Azure LLM CSV or Mooncake JSONL) at its own timing"},
      {"trace-format", "azure | mooncake (default: detected from the content)"},
      {"time-scale", "trace replay speed: 2 = twice as fast (default 1)"},
      {"trace-start", "skip this much of the trace's start, e.g. 10m"},
      {"trace-duration", "replay only this much of the trace, e.g. 5m"},
      {"turns", "multi-turn sessions: requests per session (default 1: no sessions)"},
      {"think-time", "multi-turn sessions: pause between a turn's completion and the next turn"},
      // Arrivals
      {"num-prompts", "vLLM name of --num-requests"},
      {"arrival-process", "server scenario: poisson (default) | gamma | constant"},
      {"burstiness", "vLLM: gamma shape of the inter-arrival times (1 = Poisson, < 1 burstier); implies gamma"},
      {"ramp", "rate ramp-up: none | linear | exponential (from --ramp-start-rate to --request-rate)"},
      {"ramp-duration", "length of the ramp-up, e.g. 30s (measured unless --warmup covers it)"},
      {"ramp-start-rate", "rate at the start of the ramp (requests/s)"},
      {"stages", "scenario 'stages': e.g. rate:5@30s,rate:10@30s,concurrency:16@60s"},
      {"max-concurrency", "vLLM name of --max-inflight: cap on requests in flight (a capped request keeps its "
                          "intended time, so the wait shows in the from-schedule latencies)"},
      // The probe stream (docs/metrics.md "Probe stream")
      {"probe-rate", "probe stream: single small requests at this many per second (Poisson, seeded; e.g. 0.5) beside "
                     "the load in its measurement window, reported apart (result.json probe): the latency an "
                     "unrelated user sees under this load"},
      {"probe-input-tokens", "with --probe-rate: each probe's prompt length (default 32)"},
      {"probe-output-tokens", "with --probe-rate: each probe's output length (default 16)"},
      {"probe-baseline", "with --probe-rate: probes sent one at a time before the load, the unloaded reference "
                         "(default 3; 0 = none)"},
      // Results
      {"goodput", "vLLM form of --slo: 'ttft:MS tpot:MS e2el:MS' (milliseconds)"},
      {"percentile-metrics", "metrics shown in the console table, e.g. ttft,tpot,itl,e2el (default: all)"},
      {"metric-percentiles", "percentiles shown in the console table, e.g. 50,90,99 (default 50,90,95,99,99.9)"},
      {"result-dir", "vLLM name of --output"},
      {"save-result", "vLLM: name the results as vLLM does, <backend>-<rate>qps-<model>-<time>: a directory with "
                      "the artifact and a .json copy of result.json, under --result-dir (default '.')"},
      // Several load generators (docs/distributed.md)
      {"shard-count", "split the run into N shards (one per machine or pod): each issues its part of the same global "
                      "schedule; merge their artifacts with `llmload merge`"},
      {"shard-index", "this process's shard, 0 <= I < --shard-count (default: $JOB_COMPLETION_INDEX, as a Kubernetes "
                      "Indexed Job sets it)"},
      {"start-at", "common start of the shards: RFC 3339 UTC time (2025-06-01T12:00:00Z) or Unix epoch seconds; the "
                   "run prepares, sleeps until then on the system clock, then runs on its monotonic clock"},
  };
  return kSettings;
}

namespace {
void apply_setting_to(const std::string& raw_name, const std::string& value, const std::string& origin,
                      ScenarioConfig& cfg);
}  // namespace

void apply_setting(const std::string& raw_name, const std::string& value, const std::string& origin,
                   ScenarioConfig& cfg) {
  try {
    apply_setting_to(raw_name, value, origin, cfg);
  } catch (const ConfigError& e) {
    // Some parsers name the flag (e.g. "bad --stages part ..."): a value from a scenario file or
    // the environment also says where it came from.
    const std::string what = e.what();
    if (what.find(origin) != std::string::npos) throw;
    throw ConfigError(fmt::format("{}: {}", origin, what));
  }
}

namespace {
void apply_setting_to(const std::string& raw_name, const std::string& value, const std::string& origin,
                      ScenarioConfig& cfg) {
  const std::string name = normalize(raw_name);
  if (name == "scenario") {
    cfg.scenario_explicit = true;
    try {
      cfg.kind = parse_scenario_kind(value);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
    }
  } else if (name == "base-url") {
    cfg.base_url = value;
  } else if (name == "endpoint") {
    if (value == "completions") {
      cfg.backend = "openai-completions";
    } else if (value == "chat") {
      cfg.backend = "openai-chat";
    } else if (!value.empty() && value.front() == '/') {
      // vLLM's --endpoint: the request path. Without --backend, the path tells the API.
      cfg.endpoint_path = value;
      if (!cfg.backend_explicit) {
        if (value.find("chat/completions") != std::string::npos) {
          cfg.backend = "openai-chat";
        } else if (value.find("/generate") != std::string::npos) {
          cfg.backend = "sglang";
        } else {
          cfg.backend = "openai-completions";
        }
      }
    } else {
      throw ConfigError(fmt::format("bad {} '{}': use completions, chat, or a path such as /v1/completions", origin,
                                    value));
    }
  } else if (name == "model") {
    cfg.models = split_model_list(value);
    cfg.model = cfg.models.front();
    if (cfg.models.size() == 1) cfg.models.clear();
  } else if (name == "model-weights") {
    cfg.model_weights = value;
  } else if (name == "api-key") {
    cfg.api_key = value;
  } else if (name == "input-tokens") {
    cfg.input_tokens = parse_int(value, origin, 1);
  } else if (name == "output-tokens") {
    cfg.output_tokens = parse_int(value, origin, 1);
  } else if (name == "seed") {
    cfg.seed = static_cast<std::uint64_t>(parse_int(value, origin, 0));
  } else if (name == "num-requests") {
    cfg.num_requests = parse_int(value, origin, 1);
  } else if (name == "duration") {
    cfg.duration = parse_dur(value, origin);
  } else if (name == "warmup") {
    try {
      cfg.warmup = parse_warmup(value);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}", origin, e.what()));
    }
  } else if (name == "min-duration") {
    cfg.min_duration = parse_dur(value, origin);
  } else if (name == "min-requests") {
    cfg.min_requests = parse_int(value, origin, 1);
  } else if (name == "max-duration") {
    cfg.max_duration = parse_dur(value, origin);
  } else if (name == "max-error-rate") {
    cfg.max_error_rate = parse_double(value, origin);
    if (cfg.max_error_rate < 0 || cfg.max_error_rate > 1) {
      throw ConfigError(fmt::format("bad {} '{}': give a fraction between 0 and 1, e.g. 0.05", origin, value));
    }
  } else if (name == "trials") {
    cfg.trials = parse_int(value, origin, 1);
  } else if (name == "trial-pause") {
    cfg.trial_pause = parse_dur(value, origin);
  } else if (name == "fail-on-slo") {
    cfg.fail_on_slo = parse_bool(value, origin);
  } else if (name == "quiet") {
    cfg.quiet = parse_bool(value, origin);
  } else if (name == "verbose") {
    cfg.verbose = parse_bool(value, origin);
  } else if (name == "devices") {
    cfg.devices = parse_double(value, origin);
    if (!(*cfg.devices >= 1)) throw ConfigError(fmt::format("bad {} '{}': give the number of devices, >= 1", origin, value));
  } else if (name == "price-per-hour") {
    cfg.price_per_hour = parse_double(value, origin);
    if (!(*cfg.price_per_hour >= 0)) {
      throw ConfigError(fmt::format("bad {} '{}': give the price of one device-hour, >= 0 (e.g. 2.5)", origin, value));
    }
  } else if (name == "slo") {
    try {
      cfg.slo = analysis::parse_slo(value);
    } catch (const analysis::SloParseError& e) {
      throw ConfigError(fmt::format("bad {}: {}", origin, e.what()));
    }
  } else if (name == "request-rate") {
    if (value == "inf" || value == "infinity") {
      // vLLM: every request at once (optionally capped by --max-concurrency): our offline scenario.
      cfg.request_rate = 0;
      if (!cfg.scenario_explicit) cfg.kind = ScenarioKind::kOffline;
    } else {
      cfg.request_rate = parse_double(value, origin);
      // Issue 16: 0 silently ran the default scenario (concurrency 1) instead of a rate.
      if (cfg.request_rate <= 0) {
        throw ConfigError(fmt::format("bad {} '{}': a rate must be above 0 requests per second, e.g. 0.5; for every "
                                      "request at once give inf (the offline scenario)",
                                      origin, value));
      }
      if (!cfg.scenario_explicit) cfg.kind = ScenarioKind::kServer;
    }
  } else if (name == "max-inflight") {
    cfg.max_inflight = parse_int(value, origin, 1);
  } else if (name == "concurrency") {
    cfg.concurrency = parse_int(value, origin, 1);
  } else if (name == "output") {
    cfg.output_dir = value;
  } else if (name == "overwrite") {
    cfg.overwrite = parse_bool(value, origin);
  } else if (name == "timeout") {
    cfg.timeout = parse_dur(value, origin);
  } else if (name == "idle-timeout") {
    cfg.idle_timeout = parse_dur(value, origin);
  } else if (name == "drain-timeout") {
    cfg.drain_timeout = parse_dur(value, origin);
  } else if (name == "schedule-spin") {
    cfg.schedule_spin = parse_dur(value, origin);
  } else if (name == "api-key-file") {
    std::ifstream f(value);
    std::string key;
    if (!f || !std::getline(f, key)) {
      throw ConfigError(fmt::format("bad {}: cannot read an API key from '{}'", origin, value));
    }
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.front()))) key.erase(key.begin());
    if (key.empty()) throw ConfigError(fmt::format("bad {}: the file '{}' holds no API key", origin, value));
    cfg.api_key = key;
  } else if (name == "stream") {
    cfg.stream = parse_bool(value, origin);
  } else if (!apply_extended_setting(name, value, origin, cfg)) {
    std::string names;
    for (const auto& s : settings()) names += (names.empty() ? "" : ", ") + s.name;
    throw ConfigError(fmt::format("unknown setting '{}' ({}); known settings: {}", raw_name, origin, names));
  }
}
}  // namespace

void apply_scenario_file(const std::string& path, ScenarioConfig& cfg) {
  // Issue 16: a directory was an "internal error", and /dev/zero was read until memory ran out.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(fmt::format("scenario file '{}' is a directory: give a YAML or JSON file in it", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("cannot read scenario file '{}': check the path", path));
  std::string text(kMaxScenarioFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxScenarioFileBytes) {
    throw ConfigError(fmt::format("scenario file '{}' is larger than {} KiB: a scenario file holds settings (the "
                                  "requests go in --dataset-path or --trace); is it the right file?",
                                  path, kMaxScenarioFileBytes / 1024));
  }
  apply_scenario_text(text, path, cfg);
}

void apply_scenario_text(const std::string& text, const std::string& path, ScenarioConfig& cfg) {
  // A NUL would cut every message that echoes a key or value (what() is a C string), and means
  // this is not a text file anyway.
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw ConfigError(fmt::format("scenario file '{}' is not a text file: it contains a NUL byte (line {})", path, line));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("scenario file '{}' is not valid YAML/JSON: line {}, column {}: {}", path,
                                  e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) {
    throw ConfigError(fmt::format("scenario file '{}' must be a mapping of settings (e.g. 'scenario: server'), "
                                  "not a {}",
                                  path, root.IsSequence() ? "list" : (root.IsNull() ? "empty document" : "scalar")));
  }
  try {
    std::map<std::string, int> seen;  // normalized name -> line: a key given twice is refused
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) {
        throw ConfigError(fmt::format("scenario file '{}' (line {}): keys must be plain names", path,
                                      kv.first.Mark().line + 1));
      }
      const std::string key = kv.first.as<std::string>();
      const std::string origin =
          fmt::format("scenario file '{}', key '{}' (line {})", path, key, kv.first.Mark().line + 1);
      const std::string name = normalize(key);
      if (auto [it, fresh] = seen.emplace(name, kv.first.Mark().line + 1); !fresh) {
        throw ConfigError(fmt::format("{}: given twice (first on line {}): keep one", origin, it->second));
      }
      if (name == "api-key") {
        throw ConfigError(fmt::format("{}: API keys do not belong in scenario files; set OPENAI_API_KEY or pass "
                                      "--api-key-file",
                                      origin));
      }
      const YAML::Node& v = kv.second;
      if (name == "slo" && v.IsMap()) {
        // slo: {ttft: 2000ms, tpot: 200ms, percentile: 99}
        std::string spec;
        for (const auto& b : v) {
          if (!b.first.IsScalar() || !b.second.IsScalar()) {
            throw ConfigError(fmt::format("{}: each SLO entry must be 'metric: bound'", origin));
          }
          const std::string k = b.first.as<std::string>();
          spec += (spec.empty() ? "" : ",") +
                  (k == "percentile" ? "p" + b.second.as<std::string>() : k + ":" + b.second.as<std::string>());
        }
        apply_setting(name, spec, origin, cfg);
        continue;
      }
      if (v.IsSequence() && (name == "header" || name == "goodput" || name == "stages" ||
                             name == "percentile-metrics" || name == "metric-percentiles")) {
        // Lists: headers one by one; the others as their comma-separated form.
        std::string joined;
        for (const auto& item : v) {
          if (!item.IsScalar()) throw ConfigError(fmt::format("{}: list items must be single values", origin));
          if (name == "header") {
            apply_setting(name, item.as<std::string>(), origin, cfg);
          } else {
            if (!joined.empty()) joined += ',';
            joined += item.as<std::string>();
          }
        }
        if (name != "header") apply_setting(name, joined, origin, cfg);
        continue;
      }
      if (!v.IsScalar()) {
        throw ConfigError(fmt::format("{}: expected a single value, got {}", origin,
                                      v.IsMap() ? "a mapping" : (v.IsSequence() ? "a list" : "nothing")));
      }
      apply_setting(name, v.as<std::string>(), origin, cfg);
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("scenario file '{}': line {}: {}", path, e.mark.line + 1, e.msg));
  }
}

std::string env_name(const std::string& flag) {
  std::string out = "LLMLOAD_";
  for (char c : flag) {
    out.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

void resolve_shard(ScenarioConfig& cfg, const char* job_completion_index) {
  ShardSpec& s = cfg.shard;
  if (s.index_given && !s.count_given) {
    throw ConfigError(fmt::format("--shard-index {} needs --shard-count N (the number of shards of the run)", s.index));
  }
  if (s.count_given && !s.index_given) {
    if (job_completion_index != nullptr && *job_completion_index != '\0') {
      s.index = parse_int(job_completion_index, "JOB_COMPLETION_INDEX (the shard index, from the Kubernetes Indexed "
                                                "Job)", 0);
      s.index_given = true;
    } else if (s.count > 1) {
      throw ConfigError(fmt::format("--shard-count {} needs this process's shard: give --shard-index I (0 <= I < {}), "
                                    "or run it as a Kubernetes Indexed Job (which sets JOB_COMPLETION_INDEX)",
                                    s.count, s.count));
    }
  }
  if (s.index >= s.count) {
    throw ConfigError(fmt::format("shard index {} is not below --shard-count {}: shards are numbered 0 to {}", s.index,
                                  s.count, s.count - 1));
  }
}

std::string scenario_summary(const ScenarioConfig& cfg) {
  // Only what the run uses: a trace's arrivals and lengths are its own, a dataset's prompts too.
  const WorkloadConfig& w = cfg.workload;
  const bool random = w.dataset.empty() || w.dataset == "random";
  std::string lengths;
  if (random && !w.genai_scenario.empty()) {
    lengths = fmt::format(" lengths={}", w.genai_scenario);
  } else if (random) {
    lengths = fmt::format(" in={} out={}", cfg.input_tokens_used() ? std::to_string(cfg.input_tokens) : w.input_dist,
                          cfg.output_tokens_used() ? std::to_string(cfg.output_tokens) : w.output_dist);
  } else {
    lengths = fmt::format(" dataset={}{}", w.dataset,
                          cfg.output_tokens_used() ? fmt::format(" max-out={}", cfg.output_tokens) : std::string());
  }
  const std::string load =
      cfg.kind == ScenarioKind::kServer
          ? (cfg.request_rate_used() ? fmt::format("rate={}/s", cfg.request_rate) : std::string("arrivals=timestamps"))
      : cfg.kind == ScenarioKind::kConcurrency ? fmt::format("concurrency={}", cfg.concurrency)
      : cfg.kind == ScenarioKind::kOffline && cfg.max_inflight ? fmt::format("max-inflight={}", *cfg.max_inflight)
                                                               : std::string();
  return fmt::format("{} {}{}", to_string(cfg.kind), load, lengths);
}

}  // namespace llmload::app
