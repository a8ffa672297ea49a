#pragma once
// How many reasoning tokens a request gets before its answer (docs/server-apis.md, "Reasoning").
// N is --reasoning-tokens (the server's default per request, 0: none).
//   effort      N > 0            N = 0 (fixed defaults)
//   none        0                0
//   minimal     max(1, N / 4)    8
//   low         max(1, N / 2)    16
//   medium      N                64
//   high        2N               256
// Chat: `reasoning_effort` picks a row; `chat_template_kwargs: {"enable_thinking": false}` turns
// reasoning off whatever the effort (`true` without an effort: medium); neither: N.
// Responses: `reasoning: {"effort": E}` picks a row (effort null or absent: medium); no
// `reasoning`: N. Messages: `thinking: {"type":"enabled","budget_tokens":B}` gives
// min(medium, B); "adaptive": medium; "disabled" or no `thinking`: none (as Anthropic's models).
// The output then has min(R, max_tokens) reasoning tokens: they count against max_tokens.
// Pure; bad values are 400 ApiExceptions naming the field.

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace llmload::server {

/// The tokens for an effort name; nullopt for a name not in the table.
std::optional<std::int64_t> effort_tokens(std::string_view effort, std::int64_t configured);

/// Chat: from `reasoning_effort` and `chat_template_kwargs.enable_thinking`.
std::int64_t chat_reasoning_tokens(const nlohmann::json& body, std::int64_t configured);

/// Responses: from `reasoning` (an object or null/absent). Sets `effort_out` to reasoning.effort
/// and `summary_out` to reasoning.summary when given.
std::int64_t responses_reasoning_tokens(const nlohmann::json& body, std::int64_t configured,
                                        std::optional<std::string>& effort_out,
                                        std::optional<std::string>& summary_out);

/// Messages: from `thinking`; `max_tokens` is the request's (budget_tokens must be below it).
std::int64_t messages_thinking_tokens(const nlohmann::json& body, std::int64_t max_tokens, std::int64_t configured);

}  // namespace llmload::server
