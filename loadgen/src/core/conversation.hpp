#pragma once
// A multi-turn conversation as each API writes it (internal to request_builder.cpp): earlier
// turns, an agent turn's tool calls and their results, then the new user input. Chat: messages
// with `tool_calls` and `tool` messages; Responses: input items with `function_call` and
// `function_call_output` (or, with previous_response_id, the new items alone); Anthropic:
// `tool_use` blocks in the assistant's content and `tool_result` blocks in the next user message.

#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/loadgen/request_builder.hpp"

namespace llmload::conversation {

/// OpenAI chat `messages`.
nlohmann::json chat_messages(const std::vector<Turn>& history, const WorkItem& item);
/// Responses `input` items; `from_turn`: the turns before it are held by the server
/// (previous_response_id) and left out, with their tool results still sent when the last of them
/// ended in tool calls.
nlohmann::json responses_input(const std::vector<Turn>& history, const WorkItem& item, std::size_t from_turn = 0);
/// Anthropic `messages` (system messages of a row go to `system`, joined by newlines).
nlohmann::json anthropic_messages(const std::vector<Turn>& history, const WorkItem& item, std::string& system);

}  // namespace llmload::conversation
