#pragma once
// Settings of one llmload-server instance: filled from the command line (cli.hpp) or by tests.
// A plain value; copied into the server at start-up and read-only afterwards.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmload/server/engine/profile.hpp"
#include "llmload/server/fault.hpp"
#include "llmload/server/lora_modules.hpp"

namespace llmload::server {

class ServerTokenizer;  // server_tokenizer.hpp

/// How long tokens take. `model` is "engine" (the continuous-batching engine simulator, see
/// engine/) or the name of a per-request LatencyModel (latency_model.hpp: "fixed"); ttft, itl
/// and jitter are the fixed model's parameters.
struct LatencyConfig {
  std::string model = "engine";
  std::chrono::nanoseconds ttft = std::chrono::milliseconds(50);  ///< arrival -> first token
  std::chrono::nanoseconds itl = std::chrono::milliseconds(10);   ///< token k-1 -> token k
  double jitter = 0.0;     ///< each TTFT/ITL is scaled by a factor uniform in [1-jitter, 1+jitter]
  std::uint64_t seed = 0;  ///< seeds the per-request jitter streams
};

/// What the generated text says (docs/server.md, "Generated text"): the answering mode and the
/// two models of wrong output under load. Probabilities are in [0, 1]; draws use LatencyConfig's
/// seed and the request's arrival order, so a run can be repeated.
struct OutputModelConfig {
  /// --answers: an arithmetic question in the prompt is answered first (arithmetic_answer.hpp).
  bool answers = true;
  /// The probability of a wrong answer: min(1, wrong_answer_rate + wrong_answer_batch_slope x
  /// (batch - 1)), batch = sequences in the step that produced the request's first token.
  double wrong_answer_rate = 0.0;
  double wrong_answer_batch_slope = 0.0;
  /// Used instead for a request preempted before its first token; unset: the formula above.
  std::optional<double> wrong_answer_preempted;
  /// The probability that a decoding step after the answer diverges: min(1, divergence_rate +
  /// divergence_batch_slope x (batch - 1)), batch = sequences in that step.
  double divergence_rate = 0.0;
  double divergence_batch_slope = 0.0;
};

/// Where a chat stream and a chat body put reasoning text (--reasoning-field): vLLM <= 0.9's and
/// DeepSeek's `reasoning_content`, or vLLM's newer `reasoning`.
enum class ReasoningField { kReasoningContent, kReasoning };

/// Reasoning phases (docs/server-apis.md, "Reasoning"): how many reasoning tokens come before a
/// request's answer unless the request says otherwise.
struct ReasoningConfig {
  std::int64_t tokens = 0;  ///< --reasoning-tokens: the default per request; 0: none (as before)
  ReasoningField field = ReasoningField::kReasoningContent;
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;  ///< 0: the OS picks a free port
  std::vector<std::string> models = {"llmload-mock"};  ///< served model ids; the first is the default
  std::int64_t max_model_len = 8192;                   ///< context length (prompt + output tokens)
  std::string api_key;  ///< empty: no auth
  /// --tokenizer: the model's tokenizer (model_server_tokenizer.hpp) for prompts, /tokenize,
  /// /detokenize and generated tokens; null: the mock's word tokens (mock_server_tokenizer.hpp).
  /// Immutable and thread-safe, shared by copies of the config.
  std::shared_ptr<const ServerTokenizer> tokenizer;
  LatencyConfig latency;
  OutputModelConfig output;
  ReasoningConfig reasoning;
  /// LoRA adapters served on the models above (--lora-modules, --max-loras, ...; lora_modules.hpp).
  LoraConfig lora;

  // The engine simulator (latency.model == "engine").
  /// The model profile with the command line's overrides applied; unset: the default profile.
  std::optional<Profile> profile;
  /// Step timing: "auto" (a CUDA GPU when usable, else the CPU roofline), "cpu" or "cuda".
  std::string device = "auto";
  /// New requests waiting for the engine beyond this get 429; 0: no limit (vLLM's behaviour).
  std::int64_t max_waiting = 0;
  /// The fixed model (latency.model == "fixed") with --max-num-seqs: at most this many requests
  /// generate at once, the others wait in arrival order; 0: no limit.
  std::int64_t fixed_max_num_seqs = 0;

  /// Faults injected at these rates (and per request by the X-Llmload-Fault header).
  std::vector<FaultRule> faults;
  int io_threads = 1;
  std::string log_level = "info";
  std::size_t body_limit = std::size_t{16} * 1024 * 1024;  ///< larger request bodies get 413
  std::size_t header_limit = std::size_t{64} * 1024;       ///< larger request heads (line + fields) get 431
  std::size_t header_fields_limit = 256;                   ///< more header fields get 431

  // Slow clients. Each is a deadline for a whole phase, not an inactivity timer: bytes that keep
  // trickling in do not extend it.
  /// The request head (request line + fields) must arrive within this, counted from its first
  /// byte, or from the accept for a connection's first request. Else 408 and close.
  std::chrono::nanoseconds header_timeout = std::chrono::seconds(30);
  /// The request body must arrive within this, counted from the end of the head. Else 408 and close.
  std::chrono::nanoseconds body_timeout = std::chrono::seconds(60);
  /// A keep-alive connection with no byte of a next request for this long is closed (no answer).
  std::chrono::nanoseconds keepalive_timeout = std::chrono::seconds(120);

  /// Open connections beyond this are answered 503 and closed at once. The server lowers it to
  /// what RLIMIT_NOFILE allows (see HttpServer::listen).
  std::int64_t max_connections = 10000;
  /// Listening on an address outside 127.0.0.0/8 and ::1 needs this (the server has no auth).
  bool allow_remote = false;
};

}  // namespace llmload::server
