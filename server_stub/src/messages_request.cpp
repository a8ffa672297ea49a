#include "llmload/server/messages_request.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/reasoning.hpp"
#include "llmload/server/request_fields.hpp"
#include "llmload/server/tool_request_fields.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

[[noreturn]] void invalid(std::string message, const char* param) {
  throw_bad_request(std::move(message), param != nullptr ? std::optional<std::string>(param) : std::nullopt);
}

/// An agent turn's block as prompt text parts: a tool_use block (an earlier call sent back: its
/// input as JSON text) or a tool_result block (its content: a string or text blocks).
void add_tool_block(const json& block, const std::string& t, const std::string& where, const char* param,
                    json& parts) {
  auto required_string = [&](const char* name) {
    const json* v = field(block, name);
    if (v == nullptr || !v->is_string()) invalid(fmt::format("{}.{}: Field required (a string)", where, name), param);
  };
  if (t == "tool_use") {
    required_string("id");
    required_string("name");
    const json* input = field(block, "input");
    if (input == nullptr || !input->is_object()) invalid(fmt::format("{}.input: Input should be a valid dictionary", where), param);
    parts.push_back({{"type", "text"}, {"text", input->dump()}});
    return;
  }
  required_string("tool_use_id");
  const json* content = field(block, "content");
  if (content == nullptr) return;
  if (content->is_string()) {
    parts.push_back({{"type", "text"}, {"text", *content}});
    return;
  }
  if (!content->is_array()) invalid(fmt::format("{}.content: Input should be a valid string or list", where), param);
  for (std::size_t j = 0; j < content->size(); ++j) {
    const json& inner = (*content)[j];
    const json* type = inner.is_object() ? field(inner, "type") : nullptr;
    const json* text = inner.is_object() ? field(inner, "text") : nullptr;
    if (type == nullptr || *type != "text" || text == nullptr || !text->is_string()) {
      invalid(fmt::format("{}.content.{}: only text blocks are supported by the mock (llmload-server)", where, j), param);
    }
    parts.push_back({{"type", "text"}, {"text", *text}});
  }
}

/// The text of a `system` value or of a message's content as chat content: a string as it is, or
/// an array of {"type":"text","text"} parts (thinking blocks dropped; tool_use and tool_result
/// blocks as their text).
json chat_content(const json& content, const std::string& where, const char* param) {
  if (content.is_string()) return content;
  if (!content.is_array()) {
    invalid(fmt::format("{}: Input should be a valid string or a list of content blocks, got {}", where,
                        type_name(content)),
            param);
  }
  json parts = json::array();
  for (std::size_t j = 0; j < content.size(); ++j) {
    const json& block = content[j];
    const json* type = block.is_object() ? field(block, "type") : nullptr;
    if (type == nullptr || !type->is_string()) {
      invalid(fmt::format("{}.{}.type: Field required", where, j), param);
    }
    const auto& t = type->get_ref<const std::string&>();
    if (t == "thinking" || t == "redacted_thinking") continue;  // earlier thinking sent back: not prompt text
    if (t == "tool_use" || t == "tool_result") {
      add_tool_block(block, t, fmt::format("{}.{}", where, j), param, parts);
      continue;
    }
    if (t != "text") {
      invalid(fmt::format("{}.{}: content block type '{}' is not supported by the mock (llmload-server; text, "
                          "thinking, tool_use and tool_result only)",
                          where, j, t),
              param);
    }
    const json* text = field(block, "text");
    if (text == nullptr || !text->is_string()) invalid(fmt::format("{}.{}.text: Field required", where, j), param);
    parts.push_back({{"type", "text"}, {"text", *text}});
  }
  return parts;
}

void check_ignored(const json& body) {
  for (const char* name : {"temperature", "top_p"}) (void)get_number(body, name);
  (void)get_int(body, "top_k");
  if (const json* stops = field(body, "stop_sequences")) {
    const bool ok = stops->is_array() &&
                    std::all_of(stops->begin(), stops->end(), [](const json& s) { return s.is_string(); });
    if (!ok) invalid("stop_sequences: Input should be a valid list of strings", "stop_sequences");
  }
  if (const json* metadata = field(body, "metadata"); metadata != nullptr && !metadata->is_object()) {
    invalid("metadata: Input should be a valid dictionary", "metadata");
  }
}

}  // namespace

GenerationRequest parse_messages_request(const json& body, const ServerConfig& config) {
  if (!body.is_object()) invalid(fmt::format("Input should be a valid dictionary, got {}", type_name(body)), nullptr);
  GenerationRequest req;
  req.endpoint = Endpoint::kMessages;
  const json* model = field(body, "model");
  if (model == nullptr) invalid("model: Field required", "model");
  if (!model->is_string()) invalid("model: Input should be a valid string", "model");
  req.model = model->get<std::string>();
  const json* max_tokens = field(body, "max_tokens");
  if (max_tokens == nullptr) invalid("max_tokens: Field required", "max_tokens");
  if (!max_tokens->is_number_integer()) invalid("max_tokens: Input should be a valid integer", "max_tokens");
  const std::int64_t max = max_tokens->is_number_unsigned() && max_tokens->get<std::uint64_t>() > 1ULL << 62
                               ? std::int64_t{1} << 62
                               : max_tokens->get<std::int64_t>();
  if (max < 1) invalid(fmt::format("max_tokens: Input should be greater than or equal to 1, got {}", max), "max_tokens");
  req.max_tokens = max;
  const json* stream = field(body, "stream");
  if (stream != nullptr && !stream->is_boolean()) invalid("stream: Input should be a valid boolean", "stream");
  req.stream = stream != nullptr && stream->get<bool>();
  req.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
  check_ignored(body);
  req.reasoning_tokens = messages_thinking_tokens(body, max, config.reasoning.tokens);

  const json* messages = field(body, "messages");
  if (messages == nullptr) invalid("messages: Field required", "messages");
  if (!messages->is_array()) invalid("messages: Input should be a valid list", "messages");
  if (messages->empty()) invalid("messages: at least one message is required", "messages");
  json chat = json::array();
  if (const json* system = field(body, "system")) {
    chat.push_back({{"role", "system"}, {"content", chat_content(*system, "system", "system")}});
  }
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    if (!m.is_object()) invalid(fmt::format("messages.{}: Input should be a valid dictionary", i), "messages");
    const json* role = field(m, "role");
    if (role == nullptr) invalid(fmt::format("messages.{}.role: Field required", i), "messages");
    if (!role->is_string() || (*role != "user" && *role != "assistant")) {
      invalid(fmt::format("messages.{}.role: Input should be 'user' or 'assistant'", i), "messages");
    }
    const json* content = field(m, "content");
    if (content == nullptr) invalid(fmt::format("messages.{}.content: Field required", i), "messages");
    chat.push_back({{"role", *role}, {"content", chat_content(*content, fmt::format("messages.{}.content", i),
                                                               "messages")}});
  }
  if (!serves_model(config, req.model)) {  // a --model or a LoRA adapter (lora_modules.hpp)
    throw ApiException(ApiError{404, fmt::format("model: {}", req.model), "model"});
  }
  set_conversation_prompt(req, chat, std::nullopt, config);
  check_lengths(req, config.max_model_len, "messages", "max_tokens");
  req.structured = messages_structured_output(body, req.output_seed);
  return req;
}

}  // namespace llmload::server
