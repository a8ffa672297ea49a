#pragma once
// Interprets the JSON payloads of an OpenAI-compatible response (SSE events or a whole body):
// which events carry generated output, how many tokens, usage, in-stream errors, the end marker.
// Pure logic: no I/O, no clock.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/loadgen/sse_parser.hpp"

namespace llmload {

/// The response shape: OpenAI completions (choices[].text), chat (choices[].delta.content),
/// SGLang's native /generate (cumulative "text", "meta_info"), the OpenAI Responses API
/// (response.output_text.delta events) or the Anthropic Messages API (content_block_delta events).
enum class ApiKind { kCompletions, kChat, kSglang, kResponses, kAnthropic };

struct Usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;  // all generated tokens, reasoning included
  std::optional<std::int64_t> cached_tokens;
  std::optional<std::int64_t> reasoning_tokens;  // completion_tokens_details.reasoning_tokens (or the API's own)
};

/// The server's own timing of a request (llmload-server's "llmload" object): seconds from its
/// arrival of the request to the end of queueing and to the writes of its first and last tokens.
struct ServerTiming {
  std::optional<double> queue_s;
  std::optional<double> first_token_s;
  std::optional<double> last_token_s;
};

/// The server's own tokens of an event's (or a whole response's) output, when it returned them:
/// vLLM's `token_ids` (asked with `return_token_ids`), else the token strings of `logprobs`
/// (completions: logprobs.tokens; chat: logprobs.content[].token). Consistency compares these.
struct ServerTokens {
  enum class From : std::uint8_t { kNone, kTokenIds, kLogprobs };
  From from = From::kNone;
  std::vector<std::string> tokens;  // the ids in decimal, or the token strings
};
const char* to_string(ServerTokens::From from);  // "token_ids", "logprobs", "none"

/// A tool call the model returned (issue 19): its id (chat and Responses call_id, Anthropic
/// tool_use id; "" when the server gave none), the tool's name and its arguments as JSON text
/// (Anthropic's non-streamed `input` object is dumped).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

/// A piece of a streamed tool call: the call it belongs to (chat `index`, Responses
/// `output_index`, Anthropic content block `index`), and what this event adds: its id and name
/// (the call's first event) and argument text.
struct ToolCallPiece {
  std::int64_t index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

/// What one SSE event means for the request.
struct StreamUpdate {
  enum class Kind {
    kNoOutput,  // a valid chunk without generated output (role-only, empty, usage-only)
    kOutput,    // carries generated output: `tokens` tokens
    kDone,      // "data: [DONE]"
    kError,     // {"error": {...}} sent inside the stream (HTTP status was 200)
    kMalformed  // not JSON, or JSON of an unexpected shape
  };
  Kind kind = Kind::kNoOutput;
  std::int64_t tokens = 0;            // for kOutput: tokens in this event (n_k, at least 1)
  /// For kOutput: the event carries output that is not reasoning (answer text or tool-call
  /// arguments): the first such event is TTFO's. An event of reasoning only leaves it false.
  bool answer = false;
  std::optional<Usage> usage;         // usage carried by this event, if any
  std::optional<std::string> finish_reason;
  std::optional<ServerTiming> server_timing;  // ground truth carried by this event, if any
  std::string text;                   // generated text of this event (only when capturing text)
  std::string reasoning_text;         // its reasoning text (chat's reasoning_content / reasoning)
  ServerTokens server_tokens;         // the server's tokens of this event (only when capturing text)
  std::vector<ToolCallPiece> tool_calls;  // tool-call pieces of this event (only when capturing text)
  std::string response_id;            // Responses API: the response's id (response.created; when capturing text)
  std::string message;                // for kError/kMalformed: what was wrong
};

/// Stateful decoder for one streamed response. Threading: one per stream.
class OpenAiStreamDecoder {
 public:
  /// `capture_text`: also return each event's generated text (multi-turn sessions need it).
  explicit OpenAiStreamDecoder(ApiKind api, bool capture_text = false) : api_(api), capture_text_(capture_text) {}

  /// Interprets one SSE event. The token count of an output event is the growth of
  /// `usage.completion_tokens` when the server sends per-chunk usage (SGLang: the growth of
  /// `meta_info.completion_tokens`), else 1.
  StreamUpdate decode(const SseEvent& event);

 private:
  StreamUpdate decode_sglang(StreamUpdate u, const nlohmann::json& j);
  StreamUpdate decode_responses(StreamUpdate u, const nlohmann::json& j);  // responses_decoder.cpp
  StreamUpdate decode_anthropic(StreamUpdate u, const nlohmann::json& j);  // anthropic_decoder.cpp
  void count_output(StreamUpdate& u, bool output);

  ApiKind api_;
  bool capture_text_;
  std::int64_t last_completion_tokens_ = 0;
  bool have_running_usage_ = false;
  std::size_t sglang_text_len_ = 0;  // SGLang's text is cumulative: bytes already seen
  std::optional<Usage> message_start_usage_;  // Anthropic: the input side, from message_start
};

/// Result of a non-streamed response body (200 OK).
struct WholeResponse {
  bool ok = false;
  bool has_output = false;
  bool has_answer = false;  // output that is not reasoning (answer text or tool-call arguments)
  std::optional<Usage> usage;
  std::optional<std::string> finish_reason;
  std::optional<ServerTiming> server_timing;
  std::string text;     // the generated text (first choice)
  std::string reasoning_text;  // its reasoning text (chat's reasoning_content / reasoning)
  ServerTokens server_tokens;  // the server's tokens of the text, when it returned them
  std::vector<ToolCall> tool_calls;  // the tool calls returned (first choice), in order
  std::string response_id;     // Responses API: the response's id
  std::string message;  // when !ok: what was wrong
};
WholeResponse decode_whole_response(std::string_view body, ApiKind api);

/// The message of an error body in every shape servers use (docs/wire.md): `{"error": {"message",
/// "type", "code"}}` (OpenAI, vLLM), `{"error": "..", "message": ".."}` (TGI, gateways), `{"detail":
/// ".."}` or `{"detail": [{"loc", "msg"}]}` (FastAPI), `{"message": ".."}`, `{"object": "error",
/// "message": ..}` (vLLM, SGLang), or a short excerpt of the body when it is none of these (plain
/// text, HTML): at most `max_len` bytes, non-printable bytes escaped.
std::string error_message_from_body(std::string_view body, std::size_t max_len = 300);

/// `s` cut at `max_len` bytes ("..." after), line breaks as spaces, other control bytes as '?'.
std::string body_excerpt(std::string_view s, std::size_t max_len);

}  // namespace llmload
