#include "conversation.hpp"

#include <fmt/format.h>

namespace llmload {

using nlohmann::json;

std::string tool_result_text(const ToolCall& call) {
  return json{{"tool", call.name}, {"status", "ok"}, {"result", "done"}}.dump();
}

std::string tool_call_id(const ToolCall& call, std::size_t turn, std::size_t position) {
  return call.id.empty() ? fmt::format("call_{}_{}", turn, position) : call.id;
}

namespace conversation {
namespace {

// The row's own messages (custom JSONL "messages") or the prompt as one user message; nothing
// when the conversation continues after tool calls (their results are the new input).
void append_new_input(json& messages, const std::vector<Turn>& history, const WorkItem& item) {
  if (continues_tool_calls(history)) return;
  if (item.messages.empty()) {
    messages.push_back({{"role", "user"}, {"content", item.prompt}});
    return;
  }
  for (const auto& m : item.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
}

// Arguments as an object for Anthropic's tool_use `input` (text that is no JSON object: {}).
json input_object(const std::string& arguments) {
  json j = json::parse(arguments, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

json chat_messages(const std::vector<Turn>& history, const WorkItem& item) {
  json messages = json::array();
  for (std::size_t k = 0; k < history.size(); ++k) {
    const Turn& t = history[k];
    if (!t.user.empty()) messages.push_back({{"role", "user"}, {"content", t.user}});
    if (t.tool_calls.empty()) {
      messages.push_back({{"role", "assistant"}, {"content", t.assistant}});
      continue;
    }
    json calls = json::array();
    for (std::size_t i = 0; i < t.tool_calls.size(); ++i) {
      const ToolCall& c = t.tool_calls[i];
      calls.push_back({{"id", tool_call_id(c, k, i)}, {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    messages.push_back({{"role", "assistant"}, {"content", t.assistant.empty() ? json(nullptr) : json(t.assistant)},
                        {"tool_calls", std::move(calls)}});
    for (std::size_t i = 0; i < t.tool_calls.size(); ++i) {
      messages.push_back({{"role", "tool"}, {"tool_call_id", tool_call_id(t.tool_calls[i], k, i)},
                          {"content", tool_result_text(t.tool_calls[i])}});
    }
  }
  append_new_input(messages, history, item);
  return messages;
}

json responses_input(const std::vector<Turn>& history, const WorkItem& item, std::size_t from_turn) {
  json input = json::array();
  for (std::size_t k = 0; k < history.size(); ++k) {
    const Turn& t = history[k];
    const bool held = k < from_turn;  // the server has this turn (previous_response_id)
    if (!held && !t.user.empty()) input.push_back({{"role", "user"}, {"content", t.user}});
    if (!held && !t.assistant.empty()) input.push_back({{"role", "assistant"}, {"content", t.assistant}});
    for (std::size_t i = 0; i < t.tool_calls.size(); ++i) {
      const ToolCall& c = t.tool_calls[i];
      const std::string id = tool_call_id(c, k, i);
      if (!held) {
        input.push_back({{"type", "function_call"}, {"call_id", id}, {"name", c.name}, {"arguments", c.arguments}});
      }
      // The result of the held turn's calls is new: the server has the calls, not their output.
      if (!held || k + 1 == from_turn) {
        input.push_back({{"type", "function_call_output"}, {"call_id", id}, {"output", tool_result_text(c)}});
      }
    }
  }
  append_new_input(input, history, item);
  return input;
}

json anthropic_messages(const std::vector<Turn>& history, const WorkItem& item, std::string& system) {
  json messages = json::array();
  for (std::size_t k = 0; k < history.size(); ++k) {
    const Turn& t = history[k];
    if (!t.user.empty()) messages.push_back({{"role", "user"}, {"content", t.user}});
    if (t.tool_calls.empty()) {
      messages.push_back({{"role", "assistant"}, {"content", t.assistant}});
      continue;
    }
    json blocks = json::array();
    if (!t.assistant.empty()) blocks.push_back({{"type", "text"}, {"text", t.assistant}});
    json results = json::array();
    for (std::size_t i = 0; i < t.tool_calls.size(); ++i) {
      const ToolCall& c = t.tool_calls[i];
      const std::string id = tool_call_id(c, k, i);
      blocks.push_back({{"type", "tool_use"}, {"id", id}, {"name", c.name}, {"input", input_object(c.arguments)}});
      results.push_back({{"type", "tool_result"}, {"tool_use_id", id}, {"content", tool_result_text(c)}});
    }
    messages.push_back({{"role", "assistant"}, {"content", std::move(blocks)}});
    messages.push_back({{"role", "user"}, {"content", std::move(results)}});
  }
  json fresh = json::array();
  append_new_input(fresh, history, item);
  for (auto& m : fresh) {
    if (m["role"] == "system") {
      system += (system.empty() ? "" : "\n") + m["content"].get<std::string>();
    } else {
      messages.push_back(std::move(m));
    }
  }
  return messages;
}

}  // namespace conversation
}  // namespace llmload
