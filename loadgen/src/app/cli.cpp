#include "cli.hpp"

#include <cstdlib>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "settings.hpp"

namespace llmload::app {
namespace {

// The container image's default --output (docker/llmload.Dockerfile), below every other source.
constexpr const char* kOutputDefaultEnv = "LLMLOAD_OUTPUT_DEFAULT";

constexpr const char* kFooter = R"(Scenarios (--scenario):
  single-stream  one request at a time
      llmload run --scenario single-stream --num-requests 200
  server         open loop: arrivals at --request-rate (poisson, gamma via --burstiness, constant),
                 optionally ramped (--ramp) and capped in flight (--max-concurrency)
      llmload run --scenario server --request-rate 20 --duration 60s --warmup 10s --slo ttft:2s,tpot:100ms
  offline        every request at start, optionally capped in flight
      llmload run --scenario offline --num-requests 1000 --max-inflight 256
  concurrency    closed loop: N requests always in flight
      llmload run --scenario concurrency --concurrency 32 --duration 2m
  stages         a plan of rate and concurrency stages in one run
      llmload run --scenario stages --stages rate:5@30s,rate:20@60s,concurrency:64@60s
Workloads: --input-dist/--output-dist, --traffic-scenario 'N(480,240)/(300,150)', --prefix-groups 8
  --prefix-tokens 1024, --turns 4 --think-time 2s, --dataset-name sharegpt|custom|gsm8k|mmlu --dataset-path FILE,
  trace replay at the trace's own timing:
      llmload run --trace data/traces/azure_llm_2023_code.csv --time-scale 2 --trace-duration 5m
Several machines (docs/distributed.md): shard i of N issues its part of the same global schedule
  (Poisson: a seeded thinning, N independent streams at rate/N; traces and lists: request k to
  shard k mod N; --concurrency C: floor(C/N), one more for the first C mod N shards), all starting
  at --start-at; then merge the artifacts:
      llmload run --request-rate 30 --duration 60s --shard-count 4 --shard-index 2 \
        --start-at 2025-06-01T12:00:00Z --output results/shard-2
      llmload merge results/shard-0 results/shard-1 results/shard-2 results/shard-3 --output results
  In a Kubernetes Indexed Job the index defaults to $JOB_COMPLETION_INDEX; under MPI use
  `mpirun -np N llmload-mpi ARGS...` (rank and size select the shard; rank 0 merges).
Environment: every option can be set as LLMLOAD_<OPTION> in upper snake case (e.g.
  LLMLOAD_REQUEST_RATE=10, LLMLOAD_SHARD_COUNT=4, LLMLOAD_NO_STREAM=true); a flag on the command line
  wins over the environment, which wins over --scenario-file. The variables used are recorded in
  result.json (conditions.environment_settings, secrets redacted).
vLLM users: `vllm bench serve` flags work with the same meaning (--backend, --base-url, --endpoint,
  --model, --dataset-name, --dataset-path, --num-prompts, --request-rate, --burstiness,
  --max-concurrency, --random-input-len, --random-output-len, --random-range-ratio, --goodput,
  --percentile-metrics, --metric-percentiles, --seed, --save-result, --result-dir, --ignore-eos):
      llmload run --backend vllm --model llmload-mock --dataset-name random --random-input-len 1024 \
        --random-output-len 128 --num-prompts 500 --request-rate 10 --goodput ttft:2000 tpot:100
  Where llmload differs: the open-loop latencies are also reported from each request's intended
  send time (TTFT/E2E "from sched"), so a lagging client or stalled server cannot hide; the
  Poisson/gamma timeline is never rescaled; ignore_eos and min_tokens are sent by default so
  output lengths are exact (--no-ignore-eos to let the model stop); warmup is discarded.
Durations take a unit: 500ms, 30s, 5m. Exit codes: 0 done, 1 failure writing results,
2 bad configuration or unreachable endpoint, 3/4/5 with --fail-on-slo (SLO FAIL, INCONCLUSIVE,
run INVALID), 6 no measured request succeeded, 130 interrupted (results still written in all
but 1 and 2). requests.jsonl is written as the run goes: after a SIGKILL or a crash,
`llmload report DIR` rebuilds result.json from it.
Metric definitions: docs/metrics.md)";

// True when the flag itself (not its environment variable) is on the command line.
bool on_command_line(int argc, char** argv, const std::string& flag) {
  const std::string eq = flag + "=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == flag || a.substr(0, eq.size()) == eq) return true;
  }
  return false;
}

bool is_secret(const std::string& name) { return name == "api-key" || name == "header"; }

// The boolean settings that may be given bare (--insecure means --insecure true).
bool is_switch(const std::string& name) {
  static const std::set<std::string> kSwitches = {"ignore-eos", "insecure",  "save-result", "stream",   "continuous-usage",
                                                  "fail-on-slo", "quiet",    "verbose",     "overwrite",
                                                  "save-outputs", "consistency"};
  return kSwitches.count(name) != 0;
}

}  // namespace

// Where a value came from, for error messages: "--num-requests" or "$LLMLOAD_NUM_REQUESTS".
std::string origin_of(int argc, char** argv, const std::string& name) {
  const std::string flag = "--" + name;
  if (on_command_line(argc, argv, flag)) return flag;
  return fmt::format("{} (from ${})", flag, env_name(name));
}

void add_run_options(CLI::App& run, RunOptions& o) {
  o.scenario_file_opt = run.add_option("--scenario-file", o.scenario_file,
                                       "YAML or JSON file with the same settings as the flags (flags and LLMLOAD_* "
                                       "variables override it)");
  o.scenario_file_opt->envname(env_name("scenario-file"));
  for (const auto& s : settings()) {
    auto* opt = run.add_option("--" + s.name, s.help);
    if (s.name == "goodput") {
      // vLLM: --goodput ttft:500 tpot:50 (several values after one flag)
      opt->allow_extra_args()->expected(1, CLI::detail::expected_max_vector_size)->multi_option_policy(
          CLI::MultiOptionPolicy::TakeAll);
    } else if (s.name == "header") {
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else if (is_switch(s.name)) {
      opt->expected(0, 1);  // a bare flag means true
    }
    opt->envname(env_name(s.name));
    o.options[s.name] = opt;
  }
  o.no_stream_opt = run.add_flag("--no-stream", o.no_stream, "same as --stream false");
  o.no_stream_opt->envname(env_name("no-stream"));
  o.no_ignore_eos_opt = run.add_flag("--no-ignore-eos", o.no_ignore_eos, "same as --ignore-eos false: let the model stop at EOS");
  o.no_ignore_eos_opt->envname(env_name("no-ignore-eos"));
  run.footer(kFooter);
}

ScenarioConfig build_config(const RunOptions& o, int argc, char** argv, const std::set<std::string>& skip) {
  ScenarioConfig cfg;
  if (!o.scenario_file.empty()) apply_scenario_file(o.scenario_file, cfg);
  for (const auto& s : settings()) {
    auto* opt = o.options.at(s.name);
    if (opt->count() == 0 || skip.count(s.name) != 0) continue;
    const std::string origin = origin_of(argc, argv, s.name);
    const auto& results = opt->results();
    if (s.name == "goodput") {
      std::string joined;
      for (const auto& r : results) joined += (joined.empty() ? "" : " ") + r;
      apply_setting(s.name, joined, origin, cfg);
    } else if (results.empty()) {
      apply_setting(s.name, "true", origin, cfg);
    } else {
      for (const auto& r : results) {
        // A bare switch (--ignore-eos, --insecure, ...) arrives as an empty value; any other
        // flag given an empty value ('') is a mistake, never a silent "true".
        if (r.empty() && !is_switch(s.name)) {
          throw ConfigError(fmt::format("{} was given an empty value: give one (see llmload run --help), or leave "
                                        "the flag out for its default",
                                        origin));
        }
        apply_setting(s.name, r.empty() ? "true" : r, origin, cfg);
      }
    }
  }
  if (o.no_stream) cfg.stream = false;
  if (o.no_ignore_eos) cfg.ignore_eos = false;
  // The lowest-precedence default for --output (set by the container image: /results): below the
  // flag, $LLMLOAD_OUTPUT and the scenario file's output/result_dir key.
  if (cfg.output_dir.empty()) {
    if (const char* d = std::getenv(kOutputDefaultEnv); d != nullptr && *d != '\0') cfg.output_dir = d;
  }
  resolve_shard(cfg, std::getenv("JOB_COMPLETION_INDEX"));
  return cfg;
}

nlohmann::json environment_settings(const RunOptions& o, int argc, char** argv) {
  nlohmann::json out = nlohmann::json::object();
  auto note = [&](const std::string& name, const CLI::Option* opt) {
    if (opt == nullptr || opt->count() == 0 || on_command_line(argc, argv, "--" + name)) return;
    const std::string env = env_name(name);
    const char* v = std::getenv(env.c_str());
    if (v == nullptr || *v == '\0') return;
    out[env] = is_secret(name) ? std::string("***") : std::string(v);
  };
  note("scenario-file", o.scenario_file_opt);
  for (const auto& [name, opt] : o.options) note(name, opt);
  note("no-stream", o.no_stream_opt);
  note("no-ignore-eos", o.no_ignore_eos_opt);
  return out;
}

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
    } else if (a == "--header" && i + 1 < argc) {
      // Header values may be credentials: keep the name only.
      out.push_back(a);
      const std::string h = argv[++i];
      out.push_back(h.substr(0, h.find(':')) + ": ***");
      continue;
    } else if (a.rfind("--header=", 0) == 0) {
      a = a.substr(0, a.find(':')) + ": ***";
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace llmload::app
