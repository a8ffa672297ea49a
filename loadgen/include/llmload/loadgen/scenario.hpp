#pragma once
// What load to offer: the settings of one run, from flags or a scenario file.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmload/analysis/slo.hpp"
#include "llmload/loadgen/redact.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/probe_config.hpp"
#include "llmload/loadgen/shard.hpp"
#include "llmload/loadgen/stream_decoder.hpp"
#include "llmload/loadgen/structured_request.hpp"
#include "llmload/loadgen/workload.hpp"

namespace llmload {

/// The MLPerf scenarios plus closed-loop concurrency.
enum class ScenarioKind {
  kSingleStream,  // one request at a time; the next is sent when the previous completes
  kServer,        // open loop: Poisson arrivals at request_rate
  kOffline,       // open loop: every request released at start (optionally capped in flight)
  kConcurrency,   // closed loop: `concurrency` requests always in flight
  kStages         // a multi-stage plan: a list of rate or concurrency stages, each for a duration
};
std::string_view to_string(ScenarioKind k);
/// Parses "single-stream", "server", "offline", "concurrency" (underscores accepted). Throws ConfigError.
ScenarioKind parse_scenario_kind(std::string_view s);

/// Warmup: none, the first N requests, or the first T of the run. Warmup requests are sent
/// and recorded in requests.jsonl, but never enter statistics.
struct WarmupSpec {
  std::int64_t requests = 0;
  Nanos duration{0};
  /// --warmup auto: nothing is discarded up front; after the run the start of steady state is
  /// detected from the per-interval series (see docs/statistics.md) and what came before it is
  /// discarded.
  bool automatic = false;
  bool by_time() const { return duration.count() > 0; }
  bool none() const { return requests == 0 && duration.count() == 0 && !automatic; }
};
/// Parses "20" (requests), "5s" (time) or "auto". Throws ConfigError.
WarmupSpec parse_warmup(std::string_view s);

/// How open-loop arrivals are spaced (server scenario) and how the rate evolves.
struct ArrivalConfig {
  /// poisson (exponential gaps), gamma (gamma gaps with shape `burstiness`, mean 1/rate: vLLM's
  /// --burstiness; 1 is Poisson, < 1 burstier, > 1 more regular), constant (fixed gaps 1/rate).
  std::string process = "poisson";
  double burstiness = 1.0;
  /// Ramp-up: none, linear or exponential, from ramp_start_rate to request_rate over ramp_duration.
  std::string ramp = "none";
  Nanos ramp_duration{0};
  double ramp_start_rate = 0;  // 0: a tenth of the target rate... (see schedule.hpp)
  /// Multi-stage plan (scenario 'stages'): each stage holds a rate (open loop) or a concurrency
  /// (closed loop) for its duration, in order.
  struct Stage {
    bool concurrency = false;  // false: `value` is a rate in requests/s
    double value = 0;
    Nanos duration{0};
  };
  std::vector<Stage> stages;
};

struct ScenarioConfig {
  ScenarioKind kind = ScenarioKind::kConcurrency;
  std::string base_url = "http://127.0.0.1:8000";
  ApiKind endpoint = ApiKind::kCompletions;
  std::string model;    // empty: the first model of GET /v1/models (with --model a,b,c: the first)
  /// --model a,b,c: requests dealt over several models or adapters by --model-weights
  /// (ModelMix); empty for one model.
  std::vector<std::string> models;
  std::string model_weights;  // "" uniform, "w1,w2,...", "zipf[:S]"
  std::string api_key;  // never written anywhere
  bool stream = true;
  std::int64_t input_tokens = 128;
  std::int64_t output_tokens = 128;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> num_requests;  // measured requests (warmup not included)
  std::optional<Nanos> duration;             // length of the measurement window
  WarmupSpec warmup;
  /// MLPerf-style minimums: the run goes on issuing until both hold (unless max_duration comes
  /// first); a run that ends below either is INVALID with that reason.
  std::optional<Nanos> min_duration;
  std::optional<std::int64_t> min_requests;
  std::optional<Nanos> max_duration;  // hard bound on the whole run (warmup included)
  /// Sequential stopping, set by validate() for --slo with no size given (server, concurrency and
  /// single-stream runs): the run issues until its SLO verdict is conclusive
  /// (analysis/sequential_slo.hpp), at most `sequential_cap` measured requests and max_duration
  /// (kSequentialMaxDuration unless given); num_requests holds the first look's size.
  bool sequential = false;
  std::int64_t sequential_cap = 0;
  /// Validity: a run whose failed fraction of measured requests is above this is INVALID.
  double max_error_rate = 0.05;
  /// Trials: independent repetitions of the whole run (new connections; seeds derived from
  /// `seed` and the trial index), with `trial_pause` between them.
  std::int64_t trials = 1;
  Nanos trial_pause{0};
  /// Exit status reflects the SLO verdict (FAIL, INCONCLUSIVE: non-zero), for CI gates.
  bool fail_on_slo = false;
  /// Console: quiet (the report only, no progress or notes), verbose (more detail).
  bool quiet = false;
  bool verbose = false;
  /// Cost and scaling: the devices (GPUs, replicas) serving the endpoint and the price of one
  /// device-hour; recorded in the conditions, cost per 1M output tokens in the result.
  std::optional<double> devices;
  std::optional<double> price_per_hour;
  std::optional<analysis::SloSpec> slo;
  double request_rate = 0;                   // server: requests per second
  std::optional<std::int64_t> max_inflight;  // offline: cap on requests in flight
  std::int64_t concurrency = 1;              // concurrency: requests in flight
  Nanos timeout = std::chrono::minutes(10);  // whole request
  Nanos idle_timeout = std::chrono::seconds(60);  // silence between bytes of a response
  Nanos drain_timeout = std::chrono::seconds(30);  // after a signal: how long in-flight requests may finish
  /// Scheduled releases: wake this long before the due time and spin to it (net::DriveOptions::
  /// spin_lead); 0 sleeps on the timer alone.
  Nanos schedule_spin = std::chrono::microseconds(100);
  std::string output_dir;                    // empty: a new directory named for the run (app/output_dir.hpp)
  bool overwrite = false;                    // --overwrite: write into a non-empty output directory
  bool save_result = false;                  // vLLM's --save-result: descriptive unique names
  std::string vllm_result_file;              // set with save_result: result.json is copied here too

  ArrivalConfig arrivals;
  WorkloadConfig workload;
  /// Multi-turn sessions: each session sends `turns` requests one after another, the next
  /// `think_time` after the previous completes, its prompt carrying the conversation so far.
  /// Sessions start as requests would (rate or concurrency); 1 turn = no sessions.
  std::int64_t turns = 1;
  Nanos think_time{0};

  /// --conversation-state: how a session's later turns carry the conversation: "history" (the
  /// whole conversation resent, default) or "server" (Responses API: previous_response_id and the
  /// new input only).
  std::string conversation_state = "history";
  /// Tool calls and structured output (--tools, --tool-choice, --tool-ratio, --json-schema,
  /// --structured-output-ratio; docs/workloads.md).
  StructuredConfig structured;

  /// Backend: openai-completions, openai-chat or sglang (native /generate).
  std::string backend = "openai-completions";
  std::string endpoint_path;  // overrides the backend's path (vLLM's --endpoint), e.g. /v1/completions
  std::string extra_body;     // JSON object merged into every request body
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
  bool ignore_eos = true;     // send ignore_eos and min_tokens so the output length is exact
  bool continuous_usage = true;  // ask for usage in every chunk (stream_options.continuous_usage_stats)

  /// TLS (https:// base URLs): verification on by default against the system CAs.
  std::string ca_cert;        // PEM file of CAs to trust instead of the system's
  bool insecure = false;      // skip certificate and host name verification
  /// Scrape the server's Prometheus /metrics before, every this often during, and after the
  /// run (0: before and after only); nullopt: not at all (--server-metrics-interval off).
  std::optional<Nanos> server_metrics_interval = std::chrono::seconds(1);

  /// Timeouts, each its own error class. 0 = none.
  Nanos connect_timeout = std::chrono::seconds(30);
  Nanos first_token_timeout{0};
  Nanos inter_token_timeout{0};

  /// --tokenizer PATH: the model's tokenizer (a model directory, tokenizer.json or tokenizer.model).
  std::string tokenizer;

  /// --trace-http N: the first N exchanges to http-trace.jsonl in the output directory (0: none).
  std::int64_t trace_http = 0;

  /// --probe-rate: single small requests beside the load, measured apart (probe_config.hpp).
  ProbeConfig probe;

  /// Correctness (issue 18, docs/metrics.md "Accuracy", "Consistency").
  /// --save-outputs: each request's generated text goes into requests.jsonl (with its reference).
  bool save_outputs = false;
  /// --grader SPEC: grade every row with this grader instead of the dataset's (a row still needs
  /// a reference, except for json).
  std::string grader;
  /// --consistency: after the load, the first --consistency-requests measured prompts are sent
  /// again at concurrency 1 (or compared with --reference DIR's saved outputs) and the answers
  /// compared request by request.
  bool consistency = false;
  std::int64_t consistency_requests = 100;
  std::string consistency_reference;  // --reference DIR
  /// --consistency-tokens: what a request whose output is kept (--consistency, --save-outputs)
  /// asks the server for, so outputs compare token by token: "logprobs" (default; the OpenAI
  /// field), "token-ids" (vLLM's return_token_ids) or "none". Such requests also carry
  /// `"seed": 0`, the same in every pass.
  std::string consistency_tokens = "logprobs";
  /// Internal: the workload item of release index i is i + item_offset (a consistency reference
  /// pass re-sends the items of the measured requests).
  std::uint64_t item_offset = 0;

  /// Prompt token calibration: auto (the server's /tokenize when it answers), tokenize, estimate.
  std::string prompt_calibration = "auto";
  /// Console table (vLLM's --percentile-metrics / --metric-percentiles); empty: defaults.
  std::vector<std::string> percentile_metrics;
  std::vector<double> metric_percentiles;
  bool scenario_explicit = false;  // --scenario given (else vLLM-style flags may choose it)
  bool backend_explicit = false;   // --backend given (else --endpoint's path may choose it)
  /// Arrivals come from the workload (trace replay, timestamped datasets): no rate needed.
  bool timed_arrivals = false;
  /// Which part of the run this process issues (--shard-index/--shard-count/--start-at); see
  /// shard_plan.hpp. Not sharded by default.
  ShardSpec shard;

  bool open_loop() const { return kind == ScenarioKind::kServer || kind == ScenarioKind::kOffline; }
  /// Whether the prompts' lengths are `input_tokens` (the random workload without a length
  /// distribution): not where a dataset, a trace or a distribution gives them.
  bool input_tokens_used() const;
  /// Whether `output_tokens` is used: each request's length (random, without a distribution), or
  /// the default or cap of a dataset's rows (custom, gsm8k, mmlu); not for ShareGPT or a trace.
  bool output_tokens_used() const;
  /// Whether `request_rate` paces the releases: a server run whose arrivals are not the workload's own.
  bool request_rate_used() const;
  /// The run's secrets (the API key, --header values): what every output is redacted of.
  Secrets secrets() const;
  /// Checks the combination of settings; throws ConfigError naming the field and the fix.
  /// Fills the default (default_num_requests) when neither num_requests nor duration is set.
  void validate();
};

/// The measured requests of a run given no size: 1,000 (p99 from 1,000 samples, not
/// low-confidence, and a few failures cost nothing), or with an SLO the smallest multiple of 100
/// from which a server exceeding a bound in half the allowed share of requests (0.5% at p99)
/// still gets a conclusive early-stopping PASS.
std::int64_t default_num_requests(const std::optional<analysis::SloSpec>& slo);

/// The bound on a sequential run when --max-duration is not given (its warmup comes on top).
inline constexpr Nanos kSequentialMaxDuration = std::chrono::minutes(10);
/// A sequential run looks at most this many times (the sample doubles each look).
inline constexpr int kSequentialMaxLooks = 7;

/// Seeds derived from the base seed, separate for arrivals and for data (prompts).
std::uint64_t arrival_seed(std::uint64_t base);
std::uint64_t data_seed(std::uint64_t base);

}  // namespace llmload
