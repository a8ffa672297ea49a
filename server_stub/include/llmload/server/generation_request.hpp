#pragma once
// Validation of /v1/completions and /v1/chat/completions request bodies into a
// GenerationRequest, following vLLM's rules and messages where the mock has an equivalent.
// Pure functions (no I/O); errors are thrown as ApiException with the HTTP status, the
// OpenAI error type and the offending field in `param`.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/server/server_config.hpp"

namespace llmload::server {

enum class Endpoint { kCompletions, kChat };

/// A validated generation request. The mock always generates exactly `max_tokens` tokens.
struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::int64_t prompt_tokens = 0;  ///< words in the prompt (mock_tokenizer.hpp)
  std::int64_t max_tokens = 16;    ///< resolved: explicit value or the endpoint's default
  std::int64_t min_tokens = 0;     ///< validated <= max_tokens, hence always honoured
  bool ignore_eos = false;         ///< accepted; the mock has no EOS so it changes nothing
  bool stream = false;
  bool include_usage = false;      ///< stream_options.include_usage
  bool continuous_usage = false;   ///< include_usage && stream_options.continuous_usage_stats
};

/// A request with the identity the server gives it.
struct GenerationJob {
  GenerationRequest request;
  std::string id;                ///< "cmpl-…" or "chatcmpl-…"
  std::int64_t created_unix = 0; ///< arrival, seconds since the epoch
};

/// Validates a completions body (already parsed JSON). Throws ApiException:
/// 400 for a missing/wrong-typed/out-of-range field (param names it), 404 for an unknown model,
/// 400 when prompt tokens + max_tokens exceed config.max_model_len.
GenerationRequest parse_completion_request(const nlohmann::json& body, const ServerConfig& config);

/// Same for chat; max_completion_tokens wins over max_tokens; the default output length is
/// max_model_len - prompt tokens.
GenerationRequest parse_chat_request(const nlohmann::json& body, const ServerConfig& config);

/// The text of a completions `prompt` (a string, or an array of exactly one string).
/// Views into `prompt`. Throws 400 param "prompt" for any other shape.
std::vector<std::string_view> prompt_texts(const nlohmann::json& prompt);

/// The text parts of a chat `messages` array: each message's string content, or the "text" of
/// each {"type":"text"} part; null content is allowed and contributes nothing.
/// Throws 400 param "messages" for any other shape.
std::vector<std::string_view> message_texts(const nlohmann::json& messages);

/// Total words over `texts`.
std::int64_t count_prompt_tokens(const std::vector<std::string_view>& texts);

/// Throws 404 NotFoundError "The model `X` does not exist." unless `model` is served.
void check_model_served(std::string_view model, const ServerConfig& config);

}  // namespace llmload::server
