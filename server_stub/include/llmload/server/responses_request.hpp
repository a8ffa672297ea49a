#pragma once
// Validation of POST /v1/responses bodies (the OpenAI Responses API) into a GenerationRequest of
// endpoint kResponses (docs/server-apis.md). The input becomes a chat conversation, so the prompt
// is counted, seeded and answered as chat does: [instructions as "system"] + the turns of the
// response named by previous_response_id (its input and output, and so on back) + this input.
// Pure apart from the store lookup; errors are ApiExceptions (400 naming the field, 404 unknown
// model, 400 "Previous response with id '…' not found." with param previous_response_id).

#include <nlohmann/json_fwd.hpp>

#include "llmload/server/generation_request.hpp"
#include "llmload/server/response_store.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

/// Fields: model (required), input (required: a string, or an array of messages {role, content}
/// with content a string or input_text / output_text parts; reasoning items are skipped;
/// function_call items count their arguments as an assistant turn, function_call_output items
/// their output as a "tool" turn), instructions, max_output_tokens (>= 1; default: the room the
/// context leaves), stream, previous_response_id, store (default true), reasoning {effort,
/// summary}, temperature, top_p, tools / tool_choice / parallel_tool_calls / text.format
/// (tool_request_fields.hpp), and, accepted and ignored: metadata, user, include, top_logprobs,
/// truncation, stream_options. vLLM's ignore_eos is accepted. Refused (400): background: true.
GenerationRequest parse_responses_request(const nlohmann::json& body, const ServerConfig& config,
                                          const ResponseStore& store);

}  // namespace llmload::server
