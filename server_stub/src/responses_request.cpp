#include "llmload/server/responses_request.hpp"

#include <fmt/format.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/reasoning.hpp"
#include "llmload/server/request_fields.hpp"
#include "llmload/server/tool_request_fields.hpp"

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

/// An agent turn sent back: a function_call item (an earlier output: its arguments are the
/// assistant's text) or a function_call_output (the tool's result: a "tool" turn).
void add_function_turn(const json& item, const std::string& kind, std::size_t i, std::vector<ConversationTurn>& turns) {
  auto string_field = [&](const char* name) -> const std::string& {
    const json* v = field(item, name);
    if (v == nullptr || !v->is_string()) {
      throw_bad_request(fmt::format("input[{}].{} is required (a string) in a `{}` item", i, name, kind), "input");
    }
    return v->get_ref<const std::string&>();
  };
  (void)string_field("call_id");
  if (kind == "function_call") {
    (void)string_field("name");
    turns.push_back({"assistant", string_field("arguments")});
    return;
  }
  const json* output = field(item, "output");
  if (output != nullptr && output->is_array()) {  // content parts: input_text (images and files refused)
    add_content_turns(*output, "tool", i, turns);
    return;
  }
  turns.push_back({"tool", string_field("output")});
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
    if (kind == "function_call" || kind == "function_call_output") {
      add_function_turn(item, kind, i, turns);
      continue;
    }
    if (kind != "message") {
      unsupported(fmt::format("input[{}]: item type `{}` (messages, reasoning, function_call and "
                              "function_call_output items only)",
                              i, kind),
                  "input");
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
  if (get_bool(body, "background").value_or(false)) unsupported("`background: true`", "background");
  if (const json* metadata = field(body, "metadata"); metadata != nullptr && !metadata->is_object()) {
    wrong_type("metadata", "an object", *metadata);
  }
  (void)get_int(body, "top_logprobs");
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
  auto echo = std::make_shared<ResponsesToolEcho>();
  req.structured = responses_structured_output(body, req.output_seed, *echo);
  fields->tool_echo = std::move(echo);
  req.responses = std::move(fields);
  return req;
}

}  // namespace llmload::server
