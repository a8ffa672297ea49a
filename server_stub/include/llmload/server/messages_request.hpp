#pragma once
// Validation of POST /v1/messages bodies (the Anthropic Messages API) into a GenerationRequest of
// endpoint kMessages (docs/server-apis.md). `system` and `messages` become a chat conversation,
// so the prompt is counted, seeded and answered as chat's. Errors are ApiExceptions (400 with
// Anthropic-style messages, "field: …"; 404 for a model not served); the router writes them in
// Anthropic's error shape.

#include <nlohmann/json_fwd.hpp>

#include "llmload/server/generation_request.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

/// Fields: model, max_tokens (both required), messages (required, non-empty: role "user" or
/// "assistant", content a string or blocks: text; thinking and redacted_thinking blocks sent back
/// are skipped; tool_use blocks count their input as JSON text, tool_result blocks their
/// content), system (a string or text blocks), stream, thinking ({"type":"enabled",
/// "budget_tokens":B} with 1 <= B < max_tokens, "adaptive", "disabled"), tools / tool_choice /
/// output_config / output_format (tool_request_fields.hpp), and, type-checked and ignored:
/// temperature, top_p, top_k, stop_sequences, metadata, service_tier. vLLM's ignore_eos is
/// accepted. Refused (400): other content block types, server tools.
GenerationRequest parse_messages_request(const nlohmann::json& body, const ServerConfig& config);

}  // namespace llmload::server
