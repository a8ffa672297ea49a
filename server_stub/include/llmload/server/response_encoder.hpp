#pragma once
// Bodies of generation responses: the SSE events of a stream, token by token, and the JSON of
// a non-streaming response, in vLLM's shapes (fields vLLM leaves unset are omitted).
// Pure; an encoder is built once per request and is read-only afterwards (thread-safe).
//
// Stream layout, all events "data: <json>\n\n":
//   chat:        token 0 -> role chunk {"delta":{"role":"assistant","content":""}} + content chunk
//   completions: token 0 -> text chunk
//   token k      -> one chunk with the token's text; the last carries finish_reason "length"
//   after last   -> usage chunk {"choices":[],"usage":{..}} when include_usage, then "data: [DONE]"

#include <cstdint>
#include <string>
#include <string_view>

#include "llmload/server/generation_request.hpp"

namespace llmload::server {

/// How each SSE event is framed on the wire: bare (HTTP/1.0 or tests) or as one
/// chunked-transfer-encoding chunk per event.
enum class Framing { kNone, kChunked };

/// Appends "data: <payload>\n\n", framed.
void append_sse_event(std::string& out, std::string_view payload, Framing framing);

/// The chunk that ends a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

class ResponseEncoder {
 public:
  explicit ResponseEncoder(const GenerationJob& job);

  /// Appends every event that is due together with token k (0 <= k < max_tokens): see above.
  void append_token_events(std::int64_t k, std::string& out, Framing framing) const;

  /// The complete non-streaming response body.
  std::string full_body() const;

 private:
  void append_usage(std::string& out, std::int64_t completion_tokens) const;
  void append_chat_chunk(std::string& out, std::string_view delta_json, std::int64_t completion_tokens, bool last,
                         Framing framing) const;

  GenerationJob job_;
  std::string chunk_prefix_;  ///< {"id":..,"object":..,"created":..,"model":..,"choices":[
};

}  // namespace llmload::server
