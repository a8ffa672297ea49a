#pragma once
// Bodies of generation responses: the SSE events of a stream, token by token, and the JSON of
// a non-streaming response, in vLLM's shapes for /v1/* (fields vLLM leaves unset are omitted)
// and SGLang's for /generate.
// Pure; an encoder is built once per request and is read-only afterwards (thread-safe).
// Token ids and texts come from the request's OutputSequence (output_sequence.hpp, over the job's
// tokenizer); every token text is written JSON-escaped (a model's tokens may hold '"', '\\', '\n').
// N below is the output's length (OutputSequence::length(): max_tokens, or fewer when it stops at
// EOS after an answer); the finish reason is "stop" then, else "length".
//
// Stream layout, all events "data: <json>\n\n":
//   chat:        token 0 -> role chunk {"delta":{"role":"assistant","content":""}} + content chunk
//   completions: token 0 -> text chunk
//   token k      -> one chunk with the token's text; the last (k = N-1) carries finish_reason
//                   "stop" or "length" and, when the outcome is given, "llmload":{..}
//                   (request_outcome.hpp)
//   after last   -> usage chunk {"choices":[],"usage":{..}} when include_usage (with
//                   "prompt_tokens_details":{"cached_tokens":n} when n > 0), then "data: [DONE]"
//   generate:    token k -> {"text":<tokens 0..k, CUMULATIVE>,"output_ids":[ids 0..k],
//                   "meta_info":{"id","finish_reason":null | {"type":"length","length":max_tokens}
//                   | {"type":"stop","matched":null},
//                   "prompt_tokens","completion_tokens":k+1,"cached_tokens"}}; the last one's
//                   meta_info also has "e2e_latency" and "llmload":{..} when the outcome is
//                   given; then "data: [DONE]".
// Non-streaming bodies carry the same facts: usage (+ prompt_tokens_details) and a top-level
// "llmload" object for /v1/*; meta_info.cached_tokens, e2e_latency and meta_info.llmload for
// /generate.
// Per-token details (token_details.hpp), only when the request asks: a /v1/* chunk's "logprobs"
// holds its token's (else null, as always), and with return_token_ids its choice ends with
// "token_ids":[id] (a completions stream's first choice also "prompt_token_ids"; a chat stream's
// role chunk has "prompt_token_ids" at the top level). Non-streaming: the same for all tokens.
// Reasoning (chat; OutputSequence::reasoning_tokens() R > 0): tokens k < R travel as
// {"delta":{"reasoning_content":..}} (or "reasoning", --reasoning-field), the others as content;
// a non-streaming message has "content" (the answer, null when there is none) and the reasoning
// field; the usage has "completion_tokens_details":{"reasoning_tokens":R}.
// Tool calls (chat; GenerationRequest::structured, structured_output.hpp): the answer tokens are
// the call's arguments. Streamed, the chunk before the first of them opens the call
// {"tool_calls":[{"index":0,"id":"call_…","type":"function","function":{"name":N,"arguments":""}}]}
// (structural: no token, logprobs null), then each token is
// {"tool_calls":[{"index":0,"function":{"arguments":<token>}}]}; finish_reason "tool_calls" (or
// "length" when max_tokens cut them). Not streamed: "content":null and "tool_calls":[{"id",
// "type","function":{"name","arguments"}}]. A JSON answer (response_format) is plain content.
// /v1/responses and /v1/messages have their own encoders (api_encoder.hpp), which this class
// hands their requests to: named events ("event: <type>\ndata: <json>\n\n"), some due as soon as
// the headers are out (append_start_events).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "llmload/server/api_error.hpp"
#include "llmload/server/generation_request.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/request_outcome.hpp"
#include "llmload/server/server_tokenizer.hpp"
#include "llmload/server/token_details.hpp"

namespace llmload::server {

/// How each SSE event is framed on the wire: bare (HTTP/1.0 or tests) or as one
/// chunked-transfer-encoding chunk per event.
enum class Framing { kNone, kChunked };

/// Appends "data: <payload>\n\n", framed.
void append_sse_event(std::string& out, std::string_view payload, Framing framing);

/// Appends "event: <name>\ndata: <payload>\n\n" (the Responses and Messages APIs' named
/// events), framed.
void append_sse_named_event(std::string& out, std::string_view name, std::string_view payload, Framing framing);

/// The chunk that ends a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

/// The "llmload" ground-truth object for an outcome: {"arrival_unix_ns","queue_s",
/// "first_token_s","last_token_s","preemptions","cached_tokens"} (non-finite numbers as null),
/// then "wrong_answer" and "diverged_at" when the outcome has them.
std::string llmload_json(const RequestOutcome& outcome);
/// The same as a JSON value.
ojson llmload_json_object(const RequestOutcome& outcome);

/// The events and bodies of an API with named events (Responses, Messages): one implementation per
/// endpoint (responses_encoder.cpp, messages_encoder.cpp), built by ResponseEncoder. Pure and
/// read-only once built, like ResponseEncoder.
class ApiEncoder {
 public:
  virtual ~ApiEncoder() = default;
  virtual void append_start_events(std::string& out, Framing framing) const = 0;
  virtual void append_token_events(std::int64_t k, std::string& out, Framing framing,
                                   const RequestOutcome* outcome) const = 0;
  /// An error after the stream started, just before token `before_token` would have been written.
  virtual void append_error_event(std::string& out, const ApiError& error, Framing framing,
                                  std::int64_t before_token) const = 0;
  virtual void append_malformed_event(std::string& out, std::string_view payload, Framing framing) const = 0;
  virtual std::string body(const RequestOutcome* outcome) const = 0;
};
std::unique_ptr<const ApiEncoder> make_responses_encoder(const GenerationJob& job,
                                                         std::shared_ptr<const OutputSequence> output);
std::unique_ptr<const ApiEncoder> make_messages_encoder(const GenerationJob& job,
                                                        std::shared_ptr<const OutputSequence> output);

class ResponseEncoder {
 public:
  /// `output`: the request's tokens, each produced (by the engine or the fixed model) before
  /// its events are asked for. Null: a sequence made here and played alone (every token at
  /// batch 1), for tests and callers without an engine.
  explicit ResponseEncoder(const GenerationJob& job, std::shared_ptr<const OutputSequence> output = nullptr);

  /// Appends every event that is due together with token k (0 <= k < N): see above.
  /// Pass `outcome` with the LAST token (k == N - 1): its chunk then carries the
  /// "llmload" object and the usage chunk / meta_info its cached tokens. Without it the stream
  /// is the same minus those facts (cached tokens 0). For /generate, an outcome given with an
  /// earlier token supplies that chunk's meta_info.cached_tokens (SGLang reports it in every
  /// chunk); for /v1/* it is ignored before the last token.
  void append_token_events(std::int64_t k, std::string& out, Framing framing,
                           const RequestOutcome* outcome = nullptr) const;

  /// Appends the events due as soon as the response head is out, before any token (the
  /// Responses API's response.created and response.in_progress; the Messages API's message_start
  /// and ping); nothing for the other endpoints.
  void append_start_events(std::string& out, Framing framing) const;

  /// Appends an injected malformed event (fault injection) carrying `payload` (not JSON): a bare
  /// data line, or for the named-event APIs a data line under the event name a token would have.
  void append_malformed_event(std::string& out, std::string_view payload, Framing framing) const;

  /// The complete non-streaming response body, with the outcome's facts (see above).
  std::string full_body(const RequestOutcome& outcome) const;

  /// Transitional: the body without the outcome's facts (no "llmload", no cached tokens, no
  /// e2e_latency). Kept so callers can move to full_body(outcome) at their own pace.
  std::string full_body() const;

  /// Appends an error that happens after the stream started, as vLLM and SGLang send it (HTTP
  /// stays 200): `data: {"error":{..}}` (OpenAI shape for /v1/*, SGLang's {"message"} for
  /// /generate), then `data: [DONE]`. The caller ends the body (kLastChunk) as after a last token.
  /// /v1/responses: `event: error` {"type":"error","code","message","param","sequence_number"};
  /// /v1/messages: `event: error` {"type":"error","error":{"type","message"}} (Anthropic's); both
  /// without [DONE]. `before_token`: the token it replaces (for the Responses sequence number).
  void append_error_event(std::string& out, const ApiError& error, Framing framing,
                          std::int64_t before_token = 0) const;

 private:
  std::string body_impl(const RequestOutcome* outcome) const;
  /// `details`: prompt_tokens_details (cached > 0) and completion_tokens_details (reasoning > 0).
  void append_usage(std::string& out, std::int64_t completion_tokens, std::int64_t cached_tokens, bool details) const;
  std::string reasoning_delta_open() const;
  /// `token`: the token whose content the delta holds; kRoleChunk or kToolCallHead for the
  /// structural chunks.
  void append_chat_chunk(std::string& out, std::string_view delta_json, std::int64_t token,
                         std::int64_t completion_tokens, bool last, const RequestOutcome* outcome,
                         Framing framing) const;
  void append_generate_event(std::int64_t k, std::string& out, Framing framing, const RequestOutcome* outcome) const;
  std::string_view finish_reason() const;
  static constexpr std::int64_t kRoleChunk = -1;
  static constexpr std::int64_t kToolCallHead = -2;
  /// The chat delta of token k (k >= 0) or of the tool call's head chunk.
  std::string chat_delta(std::int64_t k) const;
  /// The end of a /v1/* chunk's choice for token k (-1: chat's role chunk): logprobs,
  /// finish_reason (and stop_reason: always on the last chunk; on the others only when
  /// `open_stop_reason`, as vLLM's completions chunks do), then, when asked for, token ids.
  /// Without per-token details (details_ null) it is constant text, as before they existed.
  void append_choice_end(std::string& payload, std::int64_t k, bool last, bool open_stop_reason) const;

  // What the bodies need from the job (not the job itself: its prompt ids can be large).
  Endpoint endpoint_;
  std::string id_;
  std::string model_;
  std::int64_t created_unix_;
  std::int64_t prompt_tokens_;
  std::int64_t max_tokens_;
  bool include_usage_;
  bool continuous_usage_;
  std::shared_ptr<const OutputSequence> output_;  ///< the tokens' ids and texts (JSON-escaped when written)
  std::shared_ptr<const TokenDetails> details_;   ///< logprobs / token ids asked for; null: neither
  std::int64_t reasoning_;                       ///< the output's reasoning tokens (chat)
  std::string_view reasoning_key_;               ///< "reasoning_content" or "reasoning"
  std::shared_ptr<const ApiEncoder> api_;        ///< /v1/responses, /v1/messages; null otherwise
  bool tool_call_ = false;                       ///< chat: the answer is a tool call's arguments
  std::string tool_name_;                        ///< its function
  std::string call_id_;                          ///< "call_" + 24 hex digits
  std::string chunk_prefix_;  ///< /v1/*: {"id":..,"object":..,"created":..,"model":..,"choices":[
                              ///< /generate: "meta_info":{"id":<rid>,"finish_reason":
};

}  // namespace llmload::server
