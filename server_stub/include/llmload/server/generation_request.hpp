#pragma once
// Validation of generation request bodies into a GenerationRequest: /v1/completions and
// /v1/chat/completions following vLLM's rules and messages, /generate following SGLang's
// native API, where the mock has an equivalent.
// Pure functions (no I/O); errors are thrown as ApiException with the HTTP status and the
// offending field in `param` (the router picks the error body's shape per endpoint).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/server/arithmetic_answer.hpp"
#include "llmload/server/server_config.hpp"
#include "llmload/server/server_tokenizer.hpp"

namespace llmload::server {

enum class Endpoint {
  kCompletions,  ///< POST /v1/completions (OpenAI / vLLM)
  kChat,         ///< POST /v1/chat/completions (OpenAI / vLLM)
  kGenerate,     ///< POST /generate (SGLang native)
  kResponses,    ///< POST /v1/responses (OpenAI Responses API; responses_request.hpp)
  kMessages,     ///< POST /v1/messages (Anthropic Messages API; messages_request.hpp)
};

struct StructuredOutput;   // structured_output.hpp
struct ResponsesToolEcho;  // tool_request_fields.hpp

/// One turn of a conversation as the Responses API's store keeps it (role, text).
struct ConversationTurn {
  std::string role;
  std::string text;
};

/// A stored Responses conversation (response_store.hpp): the turns of one response (its input
/// items and its output text) after those of the response it continued (`parent`).
struct StoredConversation {
  std::shared_ptr<const StoredConversation> parent;
  std::vector<ConversationTurn> turns;
};

/// What a Responses request echoes in its response object, and what it keeps for a follow-up.
struct ResponsesFields {
  std::optional<std::string> instructions;
  std::optional<std::int64_t> max_output_tokens;
  std::optional<std::string> previous_response_id;
  std::optional<std::string> effort;     ///< reasoning.effort as sent
  std::optional<std::string> summary;    ///< reasoning.summary as sent
  std::optional<double> temperature;
  std::optional<double> top_p;
  bool store = true;                     ///< kept for previous_response_id (OpenAI's default)
  std::shared_ptr<const StoredConversation> previous;  ///< the conversation it continues
  std::vector<ConversationTurn> input;   ///< this request's input turns (not the instructions)
  /// tools, tool_choice, text.format and parallel_tool_calls as the response object echoes
  /// them; null: the defaults (no tools, "auto", text, true).
  std::shared_ptr<const ResponsesToolEcho> tool_echo;
};

/// A validated generation request. The mock generates `max_tokens` tokens, or fewer when it
/// answers a question and stops at EOS (output_sequence.hpp).
struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;               ///< the served model; for kGenerate (no model field) the first one
  std::int64_t prompt_tokens = 0;  ///< == prompt_token_ids.size()
  /// The prompt's token ids (config.tokenizer, server_tokenizer.hpp; by default the mock's word
  /// ids): the ids POST /tokenize returns for the same text (chat: over all messages' text, in
  /// order), or the ids given (completions token-id prompt, SGLang input_ids).
  std::vector<std::uint32_t> prompt_token_ids;
  std::int64_t max_tokens = 16;    ///< resolved: explicit value or the endpoint's default (kGenerate: max_new_tokens)
  std::int64_t min_tokens = 0;     ///< validated <= max_tokens, hence always honoured (kGenerate: min_new_tokens)
  bool ignore_eos = false;         ///< no EOS after an answer: the filler goes on to max_tokens
  /// Seeds the generated tokens: a hash of the prompt (completions or /generate text or ids;
  /// chat: every message's role and text parts) and of the request's `seed` when given.
  std::uint64_t output_seed = 0;
  /// With --answers on: the arithmetic question of the prompt (completions or /generate text;
  /// chat: the last user message), if it has one.
  std::optional<ArithmeticQuestion> question;
  bool stream = false;
  bool include_usage = false;      ///< stream_options.include_usage (never for kGenerate)
  bool continuous_usage = false;   ///< include_usage && stream_options.continuous_usage_stats
  std::string rid;                 ///< kGenerate: the SGLang request id if the client gave one
  /// Per-token log probabilities (token_details.hpp): completions' `logprobs` N, or chat's
  /// `top_logprobs` N (default 0) when its `logprobs` is true; N in [0, 20]. -1: not asked for.
  std::int64_t logprobs = -1;
  bool return_token_ids = false;   ///< vLLM's return_token_ids: the tokens' ids on each choice
  /// Reasoning tokens asked for (reasoning.hpp: --reasoning-tokens, reasoning_effort,
  /// chat_template_kwargs.enable_thinking, Responses' reasoning, Messages' thinking). They come
  /// first and count against max_tokens, as in vLLM: the output has min(this, max_tokens).
  std::int64_t reasoning_tokens = 0;
  /// A tool call or a JSON answer instead of prose (structured_output.hpp: tools, response_format,
  /// text.format, output_config.format); null: plain text. Its JSON text is the output's answer.
  std::shared_ptr<const StructuredOutput> structured;
  /// kResponses only (null otherwise): the fields the response object echoes, the conversation.
  std::shared_ptr<const ResponsesFields> responses;
};

/// A request with the identity the server gives it.
struct GenerationJob {
  GenerationRequest request;
  std::string id;                ///< "cmpl-…", "chatcmpl-…", or for kGenerate the rid (given or 32 hex)
  std::int64_t created_unix = 0; ///< arrival, seconds since the epoch
  /// The tokens generated (the router's tokenizer: config.tokenizer or the mock); null: the mock's words.
  std::shared_ptr<const ServerTokenizer> tokenizer;
  /// The output model's settings (config.output) and the server's --seed, which seeds its draws.
  OutputModelConfig output_model;
  std::uint64_t seed = 0;
  ReasoningField reasoning_field = ReasoningField::kReasoningContent;  ///< chat's (--reasoning-field)
};

/// Validates a completions body (already parsed JSON). Throws ApiException:
/// 400 for a missing/wrong-typed/out-of-range field (param names it), 404 for an unknown model,
/// 400 when prompt tokens + max_tokens exceed config.max_model_len.
/// `prompt` is a string, an array of one string, an array of token ids, or an array of one
/// array of token ids. `logprobs` is null or an integer in [0, 20]; `return_token_ids` a boolean.
GenerationRequest parse_completion_request(const nlohmann::json& body, const ServerConfig& config);

/// Same for chat; max_completion_tokens wins over max_tokens; the default output length is
/// max_model_len - prompt tokens. `logprobs` is a boolean, `top_logprobs` an integer in [0, 20]
/// (above 0 only with `logprobs: true`).
GenerationRequest parse_chat_request(const nlohmann::json& body, const ServerConfig& config);

/// Validates an SGLang /generate body: exactly one of `text` (a string) and `input_ids` (an
/// array of token ids); `sampling_params` {max_new_tokens (default 128), min_new_tokens,
/// ignore_eos, temperature, top_p, top_k, min_p, the penalties, stop, stop_token_ids, n = 1};
/// `stream`; `rid` (a string). No model field: the first served model is used. Batches (arrays
/// of texts or of id arrays) are rejected. Throws ApiException 400; context-length errors use
/// vLLM's texts, as for the other endpoints.
GenerationRequest parse_generate_request(const nlohmann::json& body, const ServerConfig& config);

/// The text of a completions `prompt` (a string, or an array of exactly one string).
/// Views into `prompt`. Throws 400 param "prompt" for any other shape.
std::vector<std::string_view> prompt_texts(const nlohmann::json& prompt);

/// The text parts of a chat `messages` array: each message's string content, or the "text" of
/// each {"type":"text"} part; null content is allowed and contributes nothing. An assistant
/// message's `tool_calls` (agent turns) add each call's `function.arguments` text.
/// Throws 400 param "messages" for any other shape.
std::vector<std::string_view> message_texts(const nlohmann::json& messages);

/// Token ids given as a JSON array of integers, each in [0, tokenizer.vocab_size()) (the mock's:
/// [0, kVocabSize)). Throws 400 with `param` otherwise (`allow_empty` false: an empty array is
/// an error too).
std::vector<std::uint32_t> token_id_array(const nlohmann::json& ids, const char* param, bool allow_empty,
                                          const ServerTokenizer& tokenizer);
/// The same with the mock's ids.
std::vector<std::uint32_t> token_id_array(const nlohmann::json& ids, const char* param, bool allow_empty);

/// Total words over `texts` (the mock's count).
std::int64_t count_prompt_tokens(const std::vector<std::string_view>& texts);

/// The token ids of the words over `texts`, in order (the mock's ids).
std::vector<std::uint32_t> tokenize_texts(const std::vector<std::string_view>& texts);

/// A chat prompt's ids: each text part encoded on its own (no special tokens, no template).
std::vector<std::uint32_t> message_token_ids(const std::vector<std::string_view>& texts,
                                             const ServerTokenizer& tokenizer);

/// A conversation's prompt as chat computes it, for the Responses and Messages parsers, which
/// turn their input into chat `messages` (string or text-part contents): the prompt's ids (each
/// text encoded alone), the output seed (every role and text, so the same conversation gives the
/// same output on every endpoint) and, with --answers, the question of the last user message.
void set_conversation_prompt(GenerationRequest& req, const nlohmann::json& messages,
                             std::optional<std::int64_t> request_seed, const ServerConfig& config);

/// vLLM's default output length: the room the context leaves (at least 1).
std::int64_t default_max_tokens(std::int64_t prompt_tokens, const ServerConfig& config);

/// Throws 404 NotFoundError "The model `X` does not exist." unless `model` is served.
void check_model_served(std::string_view model, const ServerConfig& config);

}  // namespace llmload::server
