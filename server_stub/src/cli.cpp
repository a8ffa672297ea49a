// GCC 12 at -O2 reports a false -Wnull-dereference inside CLI11's inlined string helpers
// (CLI::detail::split -> std::string), located in libstdc++'s headers; silenced for this file.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "llmload/server/cli.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "llmload/common/duration.hpp"
#include "llmload/common/version.hpp"
#include "llmload/server/engine/profile.hpp"
#include "llmload/server/fault.hpp"
#include "llmload/server/latency_model.hpp"
#include "llmload/server/lora_modules.hpp"
#include "llmload/server/model_server_tokenizer.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload::server {
namespace {

constexpr const char* kDescription =
    "llmload-server: a mock OpenAI-compatible LLM inference server (vLLM-shaped responses) for testing "
    "load generators. Serves GET /health, GET /metrics, GET /v1/models, POST /v1/completions, "
    "POST /v1/chat/completions, POST /v1/responses (OpenAI Responses API), POST /v1/messages (Anthropic Messages "
    "API), all streaming and not, POST /tokenize, POST /detokenize and SGLang's POST /generate. "
    "By default an engine simulator (continuous batching, KV cache, chunked prefill, preemption) times the "
    "tokens of a model profile; see docs/server.md.";

constexpr const char* kFooter =
    "Tokens: the mock counts one prompt token per whitespace-separated word of the prompt (for chat: the sum "
    "over all messages of the words of their text content, no template overhead). It generates max_tokens "
    "tokens, each a word with a leading space drawn by a generator seeded from the prompt (and the request's "
    "seed), and finishes with finish_reason \"length\"; when the prompt asks an arithmetic question "
    "(e.g. 'What is 48 + 17 * 3?') it answers first ('The answer is 99. #### 99', or 'Answer: B' with options "
    "'A. 97' ...) and stops there (\"stop\") unless ignore_eos is set (--answers off: never). With --tokenizer PATH the model's real tokenizer counts prompts "
    "(chat: each message's text encoded alone, summed, no template), answers /tokenize and /detokenize, and "
    "generated tokens are real single-token words whose text re-encodes to exactly completion_tokens. Timing: with --latency-model engine (the default) steps of a "
    "simulated continuous-batching engine, timed by the profile's roofline model (or real kernels with a CUDA GPU, "
    "--device); with --latency-model fixed token k is due TTFT + k*ITL after the request body has been read.\n"
    "Built-in profiles: " ;

CLI::Validator duration_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          (void)parse_duration(value, "");
          return {};
        } catch (const DurationParseError& e) {
          return e.what();
        }
      },
      "DURATION");
}

/// A duration with a unit that is > 0 (a zero timeout would close every connection at once).
CLI::Validator positive_duration_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          if (parse_duration(value, "").count() <= 0) return "must be positive, e.g. 30s";
          return {};
        } catch (const DurationParseError& e) {
          return e.what();
        }
      },
      "DURATION");
}

/// The output model's flags as parsed, before they go into OutputModelConfig.
struct OutputFlags {
  std::string answers = "on";
  double preempted = 0;
  CLI::Option* preempted_option = nullptr;
};

/// --answers, --wrong-answer-*, --divergence-* (the ranges checked by CLI11).
void add_output_options(CLI::App& app, OutputFlags& flags, OutputModelConfig& out) {
  app.add_option("--answers", flags.answers,
                 "Answer an arithmetic question in the prompt first ('The answer is N. #### N', or 'Answer: X' "
                 "with multiple-choice options), then stop at EOS unless ignore_eos: on or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--wrong-answer-rate", out.wrong_answer_rate,
                 "Probability that an answer is wrong when its first token comes from a batch of 1 (0 to 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--wrong-answer-batch-slope", out.wrong_answer_batch_slope,
                 "Added to the wrong-answer probability per additional sequence in the batch that produced the "
                 "request's first token: p = min(1, RATE + SLOPE x (batch - 1))")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  flags.preempted_option = app.add_option("--wrong-answer-preempted", flags.preempted,
                                          "Probability of a wrong answer for a request preempted before its first "
                                          "token, instead of the above [default: the above]")
                               ->check(CLI::Range(0.0, 1.0));
  app.add_option("--divergence-rate", out.divergence_rate,
                 "Probability that a decoding step (after any answer) makes the output diverge, at batch 1 (0 to 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--divergence-batch-slope", out.divergence_batch_slope,
                 "Added to the divergence probability per additional sequence in the step's batch: "
                 "p = min(1, RATE + SLOPE x (batch - 1))")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
}

/// The output model's flags into `out`; the error, if any.
std::optional<std::string> apply_output_flags(const CLI::App& app, const OutputFlags& flags, OutputModelConfig& out) {
  out.answers = flags.answers == "on";
  if (flags.preempted_option->count() > 0) out.wrong_answer_preempted = flags.preempted;
  for (const char* flag : {"--wrong-answer-rate", "--wrong-answer-batch-slope", "--wrong-answer-preempted"}) {
    if (!out.answers && app.count(flag) > 0) {
      return fmt::format("{} applies to answers, and --answers is off: turn answers on or leave {} out", flag, flag);
    }
  }
  // CLI::Range lets NaN through (every comparison with it is false).
  for (const double p : {out.wrong_answer_rate, out.wrong_answer_batch_slope, flags.preempted, out.divergence_rate,
                         out.divergence_batch_slope}) {
    if (std::isnan(p)) return std::string("--wrong-answer-*, --divergence-*: a probability must be a number in [0, 1]");
  }
  return std::nullopt;
}

/// --reasoning-tokens, --reasoning-field (docs/server-apis.md, "Reasoning").
void add_reasoning_options(CLI::App& app, ReasoningConfig& out, std::string& field) {
  app.add_option("--reasoning-tokens", out.tokens,
                 "Reasoning tokens generated before each chat, Responses answer (and each Messages answer with "
                 "thinking on) unless the request says otherwise (reasoning_effort: none, minimal, low, medium, high "
                 "= 0, N/4, N/2, N, 2N; with 0, a request that asks for reasoning gets 0/8/16/64/256); they count "
                 "against max_tokens. 0: no reasoning")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30));
  app.add_option("--reasoning-field", field,
                 "The chat field reasoning text travels in: reasoning_content (vLLM <= 0.9, DeepSeek) or reasoning "
                 "(vLLM's newer name)")
      ->capture_default_str()
      ->check(CLI::IsMember({"reasoning_content", "reasoning"}));
}

/// The LoRA flags as parsed, before they go into LoraConfig.
struct LoraFlags {
  bool enable = false;
  std::vector<std::string> modules;
  std::int64_t max_loras = 1;
  std::int64_t max_cpu_loras = 0;
  std::int64_t max_lora_rank = 16;
  std::string load_time;
  std::string disk_load_time;
};

/// --enable-lora, --lora-modules, --max-loras, --max-cpu-loras, --max-lora-rank, --lora-load-time,
/// --lora-disk-load-time (vLLM's names where vLLM has the knob; docs/server.md, "LoRA adapters").
void add_lora_options(CLI::App& app, LoraFlags& flags) {
  app.add_flag("--enable-lora", flags.enable, "Serve LoRA adapters (implied by --lora-modules)");
  app.add_option("--lora-modules", flags.modules,
                 "LoRA adapters, vLLM's syntax: NAME=PATH or '{\"name\":..,\"path\":..,\"base_model_name\":..}' "
                 "(several after one flag, or repeat it). Requests name an adapter in `model`; it runs on its base "
                 "model (default: the first --model)");
  app.add_option("--max-loras", flags.max_loras,
                 "Most distinct adapters in one running batch (= GPU adapter slots); a request of another adapter "
                 "waits")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--max-cpu-loras", flags.max_cpu_loras,
                 "Adapters kept in CPU memory; one outside them loads from disk first (>= --max-loras) "
                 "[default: --max-loras]")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--max-lora-rank", flags.max_lora_rank,
                 "The adapters' rank: sets their size, load time and per-token cost (1, 8, 16, 32, 64, 128, 256, "
                 "320, 512)")
      ->capture_default_str();
  app.add_option("--lora-load-time", flags.load_time,
                 "Engine: time to load an adapter into a GPU slot from CPU memory [default: 2 ms + adapter bytes / "
                 "25 GB/s]")
      ->check(duration_validator());
  app.add_option("--lora-disk-load-time", flags.disk_load_time,
                 "Engine: extra time to load an adapter that is not in CPU memory from disk [default: 20 ms + adapter "
                 "bytes / 1 GB/s]")
      ->check(duration_validator());
}

/// The LoRA flags into `out`; the error, if any.
std::optional<std::string> apply_lora_flags(const CLI::App& app, const LoraFlags& flags, bool engine,
                                            const std::vector<std::string>& models, LoraConfig& out) {
  out.enabled = flags.enable || !flags.modules.empty();
  for (const char* flag : {"--max-loras", "--max-cpu-loras", "--max-lora-rank", "--lora-load-time",
                           "--lora-disk-load-time"}) {
    if (app.count(flag) == 0) continue;
    if (!out.enabled) {
      return fmt::format("{} applies to LoRA serving: add --lora-modules NAME=PATH (or --enable-lora)", flag);
    }
    if (!engine) {
      return fmt::format("{} applies to --latency-model engine: the fixed model serves adapters as their base model, "
                         "with no slots and no load time",
                         flag);
    }
  }
  try {
    for (const auto& item : flags.modules) out.modules.push_back(parse_lora_module(item, models));
    out.max_loras = flags.max_loras;
    out.max_cpu_loras = app.count("--max-cpu-loras") > 0 ? flags.max_cpu_loras : flags.max_loras;
    out.max_lora_rank = flags.max_lora_rank;
    if (!flags.load_time.empty()) out.load_time = parse_duration(flags.load_time, "");
    if (!flags.disk_load_time.empty()) out.disk_load_time = parse_duration(flags.disk_load_time, "");
    validate_lora_config(out, models);
  } catch (const LoraModuleError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace

CliOutcome parse_command_line(const std::vector<std::string>& args) {
  ServerConfig cfg;
  CLI::App app{kDescription, "llmload-server"};
  std::string footer = kFooter;
  for (const auto& name : builtin_profile_names()) footer += name + (name == kDefaultProfile ? " (default) " : " ");
  footer += "\n";
  app.footer(footer);
  app.set_version_flag("--version", std::string("llmload-server ") + kVersion);

  int port = cfg.port;
  std::string ttft = "50ms";
  std::string itl = "10ms";
  std::vector<std::string> models;
  std::string header_timeout = "30s";
  std::string body_timeout = "60s";
  std::string keepalive_timeout = "120s";
  std::string profile_name(kDefaultProfile);
  EngineOverrides overrides;
  std::int64_t max_model_len = 0;
  std::vector<std::string> fault_flags;
  std::string api_key_file;
  std::string tokenizer_path;

  app.add_option("--host", cfg.host,
                 "Address to listen on. Other than loopback (127.0.0.0/8, ::1, localhost) it needs --allow-remote")
      ->capture_default_str();
  app.add_flag("--allow-remote", cfg.allow_remote,
               "Allow listening on a non-loopback address (the server has no authentication)");
  app.add_option("--port", port, "TCP port to listen on; 0 picks a free one (printed on the listening line)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--model", models, "Served model id; repeat the flag to serve several [default: llmload-mock]")
      ->allow_extra_args(false);
  app.add_option("--max-model-len", max_model_len,
                 "Context length: prompt tokens + max_tokens must fit [default: the profile's; 8192 with "
                 "--latency-model fixed]")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--latency-model", cfg.latency.model,
                 "How token times are computed: engine (simulated continuous batching) or fixed (TTFT + k*ITL)")
      ->capture_default_str()
      ->check(CLI::IsMember(latency_model_names()));
  app.add_option("--ttft", ttft, "Fixed model: time to first token, from the end of the request body (e.g. 50ms)")
      ->capture_default_str()
      ->check(duration_validator());
  app.add_option("--itl", itl, "Fixed model: inter-token latency between consecutive tokens (e.g. 10ms)")
      ->capture_default_str()
      ->check(duration_validator());
  app.add_option("--jitter", cfg.latency.jitter,
                 "Fixed model: scale each TTFT and ITL by a random factor uniform in [1-J, 1+J] (0 <= J <= 1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--profile", profile_name,
                 "Engine: a built-in model profile or a YAML profile file (see server_stub/profiles/)")
      ->capture_default_str();
  app.add_option("--device", cfg.device,
                 "Engine step timing: auto (a CUDA GPU when usable, else the CPU roofline), cpu, or cuda (a GPU is "
                 "required)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--max-num-seqs", overrides.max_num_seqs, "Most requests generating at once [engine: profile; fixed: no limit]; with --latency-model fixed the others "
                 "wait in arrival order")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--max-num-batched-tokens", overrides.max_num_batched_tokens,
                 "Engine: token budget of one step (chunked prefill) [profile]")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  app.add_option("--kv-cache-tokens", overrides.kv_cache_tokens,
                 "Engine: KV-cache capacity in tokens [profile: derived from device memory]")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--block-size", overrides.block_size, "Engine: tokens per KV block [profile]")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  app.add_option("--gpu-memory-utilization", overrides.gpu_memory_utilization,
                 "Engine: fraction of device memory for weights + KV cache [profile]")
      ->check(CLI::Range(0.01, 1.0));
  bool prefix_on = false;
  bool prefix_off = false;
  auto* prefix_on_flag =
      app.add_flag("--enable-prefix-caching", prefix_on, "Engine: reuse the KV blocks of shared prompt prefixes [profile]");
  app.add_flag("--no-enable-prefix-caching", prefix_off, "Engine: turn prefix caching off")->excludes(prefix_on_flag);
  app.add_option("--max-waiting", cfg.max_waiting,
                 "Engine: requests waiting for their first step beyond this get 429 (0: no limit, as vLLM)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  app.add_option("--fault", fault_flags,
                 "Inject a fault into a fraction of generation requests: RATE:SPEC, SPEC one of error[=STATUS], "
                 "reset@TOKEN, stall=DURATION@TOKEN, malformed@TOKEN, slow-first-byte=DURATION, "
                 "stream-error[=STATUS][@TOKEN], invalid-output[=json|schema] (repeatable; per request: header "
                 "X-Llmload-Fault: SPEC)")
      ->allow_extra_args(false);
  auto* api_key_opt = app.add_option("--api-key", cfg.api_key,
                                     "Require 'Authorization: Bearer KEY' (or 'x-api-key: KEY') on /v1/* and /generate (also from "
                                     "$LLMLOAD_SERVER_API_KEY)");
  app.add_option("--api-key-file", api_key_file, "Read the API key from this file (first line)");
  app.add_option("--tokenizer", tokenizer_path,
                 "A model's tokenizer (a model directory, tokenizer.json or tokenizer.model) for prompt counts, "
                 "/tokenize, /detokenize and the generated tokens [default: one mock token per word]");
  OutputFlags output_flags;
  add_output_options(app, output_flags, cfg.output);
  std::string reasoning_field = "reasoning_content";
  add_reasoning_options(app, cfg.reasoning, reasoning_field);
  LoraFlags lora_flags;
  add_lora_options(app, lora_flags);
  app.add_option("--seed", cfg.latency.seed,
                 "Seed of the jitter, the response ids, the faults and the output model's draws")
      ->capture_default_str();
  app.add_option("--threads", cfg.io_threads, "Number of io threads")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--header-timeout", header_timeout,
                 "The request head must arrive within this from its first byte (from the accept on a new "
                 "connection), however slowly bytes trickle in; else 408 and close")
      ->capture_default_str()
      ->check(positive_duration_validator());
  app.add_option("--body-timeout", body_timeout,
                 "The request body must arrive within this from the end of the head; else 408 and close")
      ->capture_default_str()
      ->check(positive_duration_validator());
  app.add_option("--keepalive-timeout", keepalive_timeout,
                 "Close a keep-alive connection when no next request starts within this")
      ->capture_default_str()
      ->check(positive_duration_validator());
  app.add_option("--max-connections", cfg.max_connections,
                 "Open connections beyond this get 503 and are closed at once (lowered to fit ulimit -n)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10000000}));
  app.add_option("--log-level", cfg.log_level, "Logging to stderr (debug: one line per request)")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

  std::vector<const char*> argv;
  argv.push_back("llmload-server");
  for (const auto& a : args) argv.push_back(a.c_str());

  CliOutcome outcome;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    std::ostringstream out;
    std::ostringstream err;
    outcome.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;  // every parse error exits 2 (bad configuration)
    outcome.out = out.str();
    outcome.err = err.str();
    return outcome;
  }
  cfg.port = static_cast<std::uint16_t>(port);
  if (!models.empty()) cfg.models = models;
  for (const auto& m : cfg.models) {
    if (m.empty()) {
      outcome.exit_code = 2;
      outcome.err = "--model: a model id must not be empty\nRun with --help for more information.\n";
      return outcome;
    }
  }
  auto usage_error = [&](const std::string& message) {
    outcome.exit_code = 2;
    outcome.err = message + "\nRun with --help for more information.\n";
    return outcome;
  };
  const bool engine = cfg.latency.model == "engine";
  if (prefix_on) overrides.enable_prefix_caching = true;
  if (prefix_off) overrides.enable_prefix_caching = false;
  if (engine) {
    for (const char* fixed_only : {"--ttft", "--itl", "--jitter"}) {
      if (app.count(fixed_only) > 0) {
        return usage_error(fmt::format("{} applies to --latency-model fixed; the engine model (the default) times "
                                       "tokens from --profile. Add --latency-model fixed to use it.",
                                       fixed_only));
      }
    }
  } else {
    if (overrides.max_num_seqs) cfg.fixed_max_num_seqs = *overrides.max_num_seqs;  // slots, FIFO queue
    for (const char* engine_only : {"--profile", "--device", "--max-num-batched-tokens",
                                    "--kv-cache-tokens", "--block-size", "--gpu-memory-utilization",
                                    "--max-waiting", "--enable-prefix-caching", "--no-enable-prefix-caching"}) {
      if (app.count(engine_only) > 0) {
        return usage_error(fmt::format("{} applies to --latency-model engine, not {}", engine_only,
                                       cfg.latency.model));
      }
    }
  }
  if (engine) {
    try {
      Profile profile = load_profile(profile_name);
      if (max_model_len > 0) overrides.max_model_len = max_model_len;
      apply_overrides(profile, overrides);
      cfg.max_model_len = profile.engine.max_model_len;
      cfg.profile = std::move(profile);
    } catch (const ProfileError& e) {
      return usage_error(fmt::format("--profile: {}", e.what()));
    }
  } else if (max_model_len > 0) {
    cfg.max_model_len = max_model_len;
  }
  for (const auto& flag : fault_flags) {
    try {
      cfg.faults.push_back(parse_fault_rule(flag));
    } catch (const FaultSpecError& e) {
      return usage_error(fmt::format("--fault {}: {}", flag, e.what()));
    }
  }
  // An empty key would silently turn authentication off.
  if (api_key_opt->count() > 0 && cfg.api_key.empty()) {
    return usage_error("--api-key was given an empty value: give the key, or leave the flag out to serve without "
                       "authentication");
  }
  if (!api_key_file.empty()) {
    std::ifstream in(api_key_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return usage_error(fmt::format("--api-key-file {}: cannot read the file", api_key_file));
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) return usage_error(fmt::format("--api-key-file {}: the first line is empty", api_key_file));
    cfg.api_key = line;
  } else if (cfg.api_key.empty()) {
    if (const char* env = std::getenv("LLMLOAD_SERVER_API_KEY"); env != nullptr) cfg.api_key = env;
  }
  if (!tokenizer_path.empty()) {
    try {
      cfg.tokenizer = load_server_tokenizer(tokenizer_path);
    } catch (const tokenizer::TokenizerError& e) {
      return usage_error(fmt::format("--tokenizer {}: {}\n(leave --tokenizer out to use the mock's word tokens; "
                                     "docs/tokenizers.md lists the supported tokenizers)",
                                     tokenizer_path, e.what()));
    }
  }
  if (auto bad = apply_output_flags(app, output_flags, cfg.output)) {
    return usage_error(*bad);
  }
  if (auto bad = apply_lora_flags(app, lora_flags, engine, cfg.models, cfg.lora)) {
    return usage_error(*bad);
  }
  cfg.reasoning.field = reasoning_field == "reasoning" ? ReasoningField::kReasoning : ReasoningField::kReasoningContent;
  // The validators above already accepted these.
  cfg.latency.ttft = parse_duration(ttft, "");
  cfg.latency.itl = parse_duration(itl, "");
  cfg.header_timeout = parse_duration(header_timeout, "");
  cfg.body_timeout = parse_duration(body_timeout, "");
  cfg.keepalive_timeout = parse_duration(keepalive_timeout, "");
  outcome.config = std::move(cfg);
  return outcome;
}

}  // namespace llmload::server
