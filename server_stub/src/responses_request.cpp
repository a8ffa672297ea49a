#include "llmload/server/responses_request.hpp"

#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/reasoning.hpp"
#include "llmload/server/request_fields.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

[[noreturn]] void unsupported(std::string what, const char* param) {
  throw_bad_request(fmt::format("{} is not supported by the mock (llmload-server)", what), param);
}

/// The text parts of one input message's content: a string, or parts of type input_text or
/// output_text (a previous response's message sent back). Appends one turn per text.
void add_content_turns(const json& content, const std::string& role, std::size_t index,
                       std::vector<ConversationTurn>& turns) {
  if (content.is_string()) {
    turns.push_back({role, content.get<std::string>()});
    return;
  }
  if (!content.is_array()) {
    throw_bad_request(fmt::format("input[{}].content must be a string or an array of content parts, got {}", index,
                                  type_name(content)),
                      "input");
  }
  for (std::size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const json* type = part.is_object() ? field(part, "type") : nullptr;
    if (type == nullptr || !type->is_string()) {
      throw_bad_request(fmt::format("input[{}].content[{}] must be an object with a string `type`", index, j), "input");
    }
    const auto& t = type->get_ref<const std::string&>();
    if (t != "input_text" && t != "output_text") {
      unsupported(fmt::format("input[{}].content[{}]: content type `{}` (text only: input_text, output_text)", index, j,
                              t),
                  "input");
    }
    const json* text = field(part, "text");
    if (text == nullptr || !text->is_string()) {
      throw_bad_request(fmt::format("input[{}].content[{}].text must be a string", index, j), "input");
    }
    turns.push_back({role, text->get<std::string>()});
  }
}

std::vector<ConversationTurn> input_turns(const json& input) {
  std::vector<ConversationTurn> turns;
  if (input.is_string()) {
    turns.push_back({"user", input.get<std::string>()});
    return turns;
  }
  if (!input.is_array()) wrong_type("input", "a string or an array of input items", input);
  for (std::size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    if (!item.is_object()) throw_bad_request(fmt::format("input[{}] must be an object, got {}", i, type_name(item)), "input");
    const json* type = field(item, "type");
    if (type != nullptr && !type->is_string()) throw_bad_request(fmt::format("input[{}].type must be a string", i), "input");
    const std::string kind = type != nullptr ? type->get<std::string>() : "message";
    if (kind == "reasoning") continue;  // a previous output's reasoning, sent back: not part of the prompt (vLLM)
    if (kind != "message") {
      unsupported(fmt::format("input[{}]: item type `{}` (messages only; tool calls come later)", i, kind), "input");
    }
    const json* role = field(item, "role");
    if (role == nullptr || !role->is_string()) {
      throw_bad_request(fmt::format("input[{}].role must be a string", i), "input");
    }
    const auto& r = role->get_ref<const std::string&>();
    if (r != "user" && r != "assistant" && r != "system" && r != "developer") {
      throw_bad_request(fmt::format("input[{}].role must be one of 'user', 'assistant', 'system', 'developer', got '{}'",
                                    i, r),
                        "input");
    }
    const json* content = field(item, "content");
    if (content == nullptr) throw_bad_request(fmt::format("input[{}].content is required", i), "input");
    add_content_turns(*content, r, i, turns);
  }
  return turns;
}

/// The fields the mock cannot honour: refused rather than answered wrongly.
void refuse_unsupported(const json& body) {
  if (const json* tools = field(body, "tools")) {
    if (!tools->is_array()) wrong_type("tools", "an array", *tools);
    if (!tools->empty()) unsupported("`tools`", "tools");
  }
  if (const json* text = field(body, "text")) {
    if (!text->is_object()) wrong_type("text", "an object", *text);
    if (const json* format = field(*text, "format")) {
      const json* type = format->is_object() ? field(*format, "type") : nullptr;
      if (type == nullptr || !type->is_string()) throw_bad_request("text.format.type must be a string", "text");
      if (type->get_ref<const std::string&>() != "text") {
        unsupported(fmt::format("text.format.type `{}` (structured output)", type->get_ref<const std::string&>()),
                    "text");
      }
    }
  }
  if (get_bool(body, "background").value_or(false)) unsupported("`background: true`", "background");
  if (const json* metadata = field(body, "metadata"); metadata != nullptr && !metadata->is_object()) {
    wrong_type("metadata", "an object", *metadata);
  }
  (void)get_int(body, "top_logprobs");
  (void)get_bool(body, "parallel_tool_calls");
  (void)get_string(body, "user");
}

}  // namespace

GenerationRequest parse_responses_request(const json& body, const ServerConfig& config, const ResponseStore& store) {
  if (!body.is_object()) {
    throw_bad_request(fmt::format("The request body must be a JSON object, got {}", type_name(body)));
  }
  GenerationRequest req;
  req.endpoint = Endpoint::kResponses;
  auto fields = std::make_shared<ResponsesFields>();
  const json* model = field(body, "model");
  if (model == nullptr) throw_bad_request("`model` is required", "model");
  if (!model->is_string()) wrong_type("model", "a string", *model);
  req.model = model->get<std::string>();
  req.stream = get_bool(body, "stream").value_or(false);
  fields->store = get_bool(body, "store").value_or(true);
  fields->instructions = get_string(body, "instructions");
  fields->max_output_tokens = get_max_tokens(body, "max_output_tokens");
  fields->previous_response_id = get_string(body, "previous_response_id");
  fields->temperature = get_number(body, "temperature");
  fields->top_p = get_number(body, "top_p");
  req.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
  refuse_unsupported(body);
  req.reasoning_tokens =
      responses_reasoning_tokens(body, config.reasoning.tokens, fields->effort, fields->summary);
  const json* input = field(body, "input");
  if (input == nullptr) throw_bad_request("`input` is required", "input");
  fields->input = input_turns(*input);
  check_model_served(req.model, config);
  if (fields->previous_response_id) {
    fields->previous = store.get(*fields->previous_response_id);
    if (!fields->previous) {
      throw_bad_request(fmt::format("Previous response with id '{}' not found.", *fields->previous_response_id),
                        "previous_response_id");
    }
  }

  // The conversation as chat messages: the prompt is then counted, seeded and answered as chat's.
  json messages = json::array();
  if (fields->instructions) messages.push_back({{"role", "system"}, {"content", *fields->instructions}});
  if (fields->previous) {
    for (const ConversationTurn* t : conversation_turns(*fields->previous)) {
      messages.push_back({{"role", t->role}, {"content", t->text}});
    }
  }
  for (const auto& t : fields->input) messages.push_back({{"role", t.role}, {"content", t.text}});
  if (messages.empty()) throw_bad_request("`input` must not be empty", "input");
  set_conversation_prompt(req, messages, std::nullopt, config);
  req.max_tokens = fields->max_output_tokens.value_or(default_max_tokens(req.prompt_tokens, config));
  check_lengths(req, config.max_model_len, "input", "max_output_tokens");
  req.responses = std::move(fields);
  return req;
}

}  // namespace llmload::server
