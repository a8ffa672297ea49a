#include "llmload/server/generation_request.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include "llmload/server/json.hpp"

#include "llmload/server/api_error.hpp"
#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/reasoning.hpp"
#include "llmload/server/request_fields.hpp"
#include "llmload/server/token_details.hpp"
#include "llmload/server/tool_request_fields.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

// Sampling knobs the mock accepts and ignores (only their types are checked), and `seed`, which
// changes the generated tokens. The same names serve vLLM's body and SGLang's sampling_params.
std::optional<std::int64_t> check_sampling_fields(const json& body) {
  for (const char* name : {"temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty",
                           "repetition_penalty", "length_penalty"}) {
    (void)get_number(body, name);
  }
  (void)get_int(body, "top_k");
  const auto seed = get_int(body, "seed");
  if (auto n = get_int(body, "n"); n && *n != 1) {
    throw_bad_request(fmt::format("`n` must be 1: the mock generates one choice per request, got {}", *n), "n");
  }
  return seed;
}

/// The generated tokens' seed (GenerationRequest::output_seed): FNV-1a 64 over the prompt's
/// parts, each length-prefixed so that no two prompts share an input, then mixed with the
/// request's seed when it has one.
class PromptSeed {
 public:
  void add(std::string_view bytes) {
    add_u64(bytes.size());
    for (char c : bytes) add_byte(static_cast<unsigned char>(c));
  }
  void add_ids(const std::vector<std::uint32_t>& ids) {
    add_u64(ids.size() | (std::uint64_t{1} << 63));  // never the length prefix of a text
    for (std::uint32_t id : ids) add_u64(id);
  }
  std::uint64_t value(std::optional<std::int64_t> request_seed) const {
    std::uint64_t h = hash_;
    if (request_seed) h ^= finish(static_cast<std::uint64_t>(*request_seed) + 0x5eed5eed5eed5eedULL);
    return finish(h);
  }

 private:
  void add_byte(unsigned char b) {
    hash_ ^= b;
    hash_ *= 0x100000001b3ULL;
  }
  void add_u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) add_byte(static_cast<unsigned char>((v >> (8 * i)) & 0xffU));
  }
  static std::uint64_t finish(std::uint64_t z) {  // SplitMix64's finalizer
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

/// The `function.arguments` of an assistant message's `tool_calls` (an earlier turn's calls sent
/// back), checked: an array of {"function": {"name": string, "arguments": string}}.
std::vector<std::string_view> tool_call_arguments(const json& message, std::size_t index = 0) {
  std::vector<std::string_view> out;
  const auto calls = message.find("tool_calls");
  if (calls == message.end() || calls->is_null()) return out;
  if (!calls->is_array()) {
    throw_bad_request(fmt::format("messages[{}].tool_calls must be an array, got {}", index, type_name(*calls)), "messages");
  }
  for (std::size_t j = 0; j < calls->size(); ++j) {
    const json& call = (*calls)[j];
    const json* function = call.is_object() ? field(call, "function") : nullptr;
    const json* name = function != nullptr && function->is_object() ? field(*function, "name") : nullptr;
    const json* arguments = name != nullptr ? field(*function, "arguments") : nullptr;
    if (name == nullptr || !name->is_string() || arguments == nullptr || !arguments->is_string()) {
      throw_bad_request(fmt::format("messages[{}].tool_calls[{}] must be {{\"function\": {{\"name\": string, "
                                    "\"arguments\": string}}}}",
                                    index, j),
                        "messages");
    }
    out.push_back(arguments->get_ref<const std::string&>());
  }
  return out;
}

/// Chat: every message's role and text parts (message_texts() has validated the shape).
std::uint64_t chat_output_seed(const json& messages, std::optional<std::int64_t> request_seed) {
  PromptSeed seed;
  for (const json& m : messages) {
    seed.add(m.at("role").get_ref<const std::string&>());
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      seed.add_ids({});
    } else if (content->is_string()) {
      seed.add(content->get_ref<const std::string&>());
    } else {
      for (const json& part : *content) seed.add(part.at("text").get_ref<const std::string&>());
    }
    for (std::string_view arguments : tool_call_arguments(m)) seed.add(arguments);
  }
  return seed.value(request_seed);
}

/// The text of the last message whose role is "user" (its text parts joined by newlines).
std::string last_user_text(const json& messages) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->at("role").get_ref<const std::string&>() != "user") continue;
    const auto content = it->find("content");
    if (content == it->end() || content->is_null()) return {};
    if (content->is_string()) return content->get<std::string>();
    std::string text;
    for (const json& part : *content) {
      if (!text.empty()) text += '\n';
      text += part.at("text").get_ref<const std::string&>();
    }
    return text;
  }
  return {};
}

void set_question(GenerationRequest& req, std::string_view text, const ServerConfig& config) {
  if (config.output.answers) req.question = find_arithmetic_question(text);
}

/// The output seed and question of a prompt given as text, or as ids (`text` null).
void set_text_prompt_output(GenerationRequest& req, const std::string* text, std::optional<std::int64_t> request_seed,
                            const ServerConfig& config) {
  PromptSeed seed;
  if (text != nullptr) {
    seed.add(*text);
    set_question(req, *text, config);
  } else {
    seed.add_ids(req.prompt_token_ids);
  }
  req.output_seed = seed.value(request_seed);
}

/// A number of top log probabilities (completions' `logprobs`, chat's `top_logprobs`): an integer
/// in [0, kMaxTopLogprobs] (OpenAI allows 0..5 on completions, 0..20 on chat; vLLM up to its
/// --max-logprobs, 20 by default).
std::optional<std::int64_t> get_logprobs_count(const json& body, const char* name) {
  const auto v = get_int(body, name);
  if (v && (*v < 0 || *v > kMaxTopLogprobs)) {
    throw_bad_request(fmt::format("`{}` must be an integer in [0, {}], got {}", name, kMaxTopLogprobs, *v), name);
  }
  return v;
}

/// Fields common to both endpoints that do not depend on the prompt. Returns the request's seed.
std::optional<std::int64_t> parse_common(const json& body, GenerationRequest& req) {
  if (!body.is_object()) {
    throw_bad_request(fmt::format("The request body must be a JSON object, got {}", type_name(body)));
  }
  const json* model = field(body, "model");
  if (model == nullptr) throw_bad_request("`model` is required", "model");
  if (!model->is_string()) wrong_type("model", "a string", *model);
  req.model = model->get<std::string>();

  req.stream = get_bool(body, "stream").value_or(false);
  if (const json* opts = field(body, "stream_options")) {
    if (!opts->is_object()) wrong_type("stream_options", "an object", *opts);
    if (!req.stream) throw_bad_request("Stream options can only be defined when `stream=True`.", "stream_options");
    auto flag = [&](const char* name) {
      const json* v = field(*opts, name);
      if (v == nullptr) return false;
      if (!v->is_boolean()) {
        throw_bad_request(fmt::format("`stream_options.{}` must be a boolean, got {}", name, type_name(*v)),
                          "stream_options");
      }
      return v->get<bool>();
    };
    req.include_usage = flag("include_usage");
    // As in vLLM: per-chunk usage only when the final usage chunk is asked for too.
    req.continuous_usage = flag("continuous_usage_stats") && req.include_usage;
  }
  req.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
  req.return_token_ids = get_bool(body, "return_token_ids").value_or(false);
  req.min_tokens = get_int(body, "min_tokens").value_or(0);
  if (req.min_tokens < 0) {
    throw_bad_request(fmt::format("min_tokens must be greater than or equal to 0, got {}.", req.min_tokens),
                      "min_tokens");
  }
  return check_sampling_fields(body);
}

/// The prompt of a completions request as token ids: text (a string, or an array of one string)
/// is tokenized; an array of ids, or an array of one array of ids, is taken as it is.
/// Text is encoded with the tokenizer's special tokens (e.g. BOS), as vLLM does.
std::vector<std::uint32_t> completion_prompt_ids(const json& prompt, const ServerTokenizer& tokenizer) {
  if (prompt.is_array() && !prompt.empty() && prompt[0].is_number()) {
    return token_id_array(prompt, "prompt", false, tokenizer);
  }
  if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_array()) {
    return token_id_array(prompt[0], "prompt", false, tokenizer);
  }
  std::vector<std::uint32_t> ids;
  for (auto text : prompt_texts(prompt)) tokenizer.append_prompt_ids(text, /*add_special=*/true, ids);
  return ids;
}

void set_prompt(GenerationRequest& req, std::vector<std::uint32_t> ids) {
  req.prompt_token_ids = std::move(ids);
  req.prompt_tokens = static_cast<std::int64_t>(req.prompt_token_ids.size());
}

}  // namespace

/// Context-length and min_tokens checks once the prompt size and output length are known.
/// `max_field` is the field the output length came from (for messages and `param`).
void check_lengths(GenerationRequest& req, std::int64_t max_model_len, const char* prompt_field,
                   const char* max_field) {
  if (req.prompt_tokens >= max_model_len) {
    throw_bad_request(fmt::format("This model's maximum context length is {} tokens. However, your request has {} "
                                  "input tokens. Please reduce the length of the input messages.",
                                  max_model_len, req.prompt_tokens),
                      prompt_field);
  }
  // An empty prompt still occupies one position (a real model always has a BOS token; the engine
  // simulator schedules it as one token), so the room is computed from at least one.
  const std::int64_t room = max_model_len - std::max<std::int64_t>(1, req.prompt_tokens);  // >= 0; no overflow
  if (req.max_tokens > room) {
    throw_bad_request(fmt::format("'max_tokens' or 'max_completion_tokens' is too large: {}. This model's maximum "
                                  "context length is {} tokens and your request has {} input tokens ({} > {} - {}).",
                                  req.max_tokens, max_model_len, req.prompt_tokens, req.max_tokens, max_model_len,
                                  req.prompt_tokens),
                      max_field);
  }
  if (req.min_tokens > req.max_tokens) {
    throw_bad_request(fmt::format("min_tokens must be less than or equal to max_tokens={}, got {}.", req.max_tokens,
                                  req.min_tokens),
                      "min_tokens");
  }
}

std::vector<std::uint32_t> token_id_array(const json& ids, const char* param, bool allow_empty) {
  return token_id_array(ids, param, allow_empty, server_tokenizer_or_mock(nullptr));
}

std::vector<std::uint32_t> token_id_array(const json& ids, const char* param, bool allow_empty,
                                          const ServerTokenizer& tokenizer) {
  const std::uint64_t vocab_size = tokenizer.vocab_size();
  if (!ids.is_array() || (!allow_empty && ids.empty())) {
    throw_bad_request(fmt::format("`{}` must be a non-empty array of token ids, got {}", param,
                                  ids.is_array() ? std::string_view("an empty array") : type_name(ids)),
                      param);
  }
  std::vector<std::uint32_t> out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const json& v = ids[i];
    if (!v.is_number_integer()) {
      throw_bad_request(
          fmt::format("`{}` must be an array of token ids (integers), got {} at index {}", param, type_name(v), i),
          param);
    }
    const bool in_range = v.is_number_unsigned() ? v.get<std::uint64_t>() < vocab_size
                                                 : v.get<std::int64_t>() >= 0 &&
                                                       static_cast<std::uint64_t>(v.get<std::int64_t>()) < vocab_size;
    if (!in_range) throw_bad_request(tokenizer.out_of_vocabulary_message(v.dump()), param);
    out.push_back(static_cast<std::uint32_t>(v.get<std::uint64_t>()));
  }
  return out;
}

std::vector<std::uint32_t> tokenize_texts(const std::vector<std::string_view>& texts) {
  std::vector<std::uint32_t> ids;
  for (auto t : texts) append_token_ids(t, ids);
  return ids;
}

std::vector<std::uint32_t> message_token_ids(const std::vector<std::string_view>& texts,
                                             const ServerTokenizer& tokenizer) {
  std::vector<std::uint32_t> ids;
  for (auto t : texts) tokenizer.append_message_ids(t, ids);
  return ids;
}

std::vector<std::string_view> prompt_texts(const json& prompt) {
  if (prompt.is_string()) return {prompt.get_ref<const std::string&>()};
  if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
    return {prompt[0].get_ref<const std::string&>()};
  }
  if (prompt.is_array() && prompt.size() > 1) {
    throw_bad_request("`prompt` must be a string or an array of exactly one string: batched prompts are not "
                      "supported by the mock yet",
                      "prompt");
  }
  throw_bad_request(
      fmt::format("`prompt` must be a string or an array of exactly one string, got {}",
                  prompt.is_array() ? (prompt.empty() ? std::string_view("an empty array") : "an array of non-strings")
                                    : type_name(prompt)),
      "prompt");
}

std::vector<std::string_view> message_texts(const json& messages) {
  if (!messages.is_array() || messages.empty()) {
    throw_bad_request(fmt::format("`messages` must be a non-empty array of messages, got {}",
                                  messages.is_array() ? std::string_view("an empty array") : type_name(messages)),
                      "messages");
  }
  std::vector<std::string_view> texts;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (!m.is_object()) {
      throw_bad_request(fmt::format("messages[{}] must be an object, got {}", i, type_name(m)), "messages");
    }
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      throw_bad_request(fmt::format("messages[{}].role must be a string", i), "messages");
    }
    for (std::string_view arguments : tool_call_arguments(m, i)) texts.push_back(arguments);
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) continue;
    if (content->is_string()) {
      texts.push_back(content->get_ref<const std::string&>());
      continue;
    }
    if (!content->is_array()) {
      throw_bad_request(fmt::format("messages[{}].content must be a string or an array of content parts, got {}", i,
                                    type_name(*content)),
                        "messages");
    }
    for (std::size_t j = 0; j < content->size(); ++j) {
      const json& part = (*content)[j];
      auto type = part.is_object() ? part.find("type") : part.end();
      if (!part.is_object() || type == part.end() || !type->is_string()) {
        throw_bad_request(fmt::format("messages[{}].content[{}] must be an object with a string `type`", i, j),
                          "messages");
      }
      if (type->get_ref<const std::string&>() != "text") {
        throw_bad_request(fmt::format("messages[{}].content[{}]: content part type `{}` is not supported by the mock "
                                      "(text only)",
                                      i, j, type->get_ref<const std::string&>()),
                          "messages");
      }
      auto text = part.find("text");
      if (text == part.end() || !text->is_string()) {
        throw_bad_request(fmt::format("messages[{}].content[{}].text must be a string", i, j), "messages");
      }
      texts.push_back(text->get_ref<const std::string&>());
    }
  }
  return texts;
}

std::int64_t count_prompt_tokens(const std::vector<std::string_view>& texts) {
  std::int64_t n = 0;
  for (auto t : texts) n += count_words(t);
  return n;
}

void check_model_served(std::string_view model, const ServerConfig& config) {
  if (!serves_model(config, model)) {  // a --model or a LoRA adapter (lora_modules.hpp)
    throw ApiException(ApiError{404, fmt::format("The model `{}` does not exist.", model), "model"});
  }
}

GenerationRequest parse_completion_request(const json& body, const ServerConfig& config) {
  GenerationRequest req;
  req.endpoint = Endpoint::kCompletions;
  const auto request_seed = parse_common(body, req);
  req.max_tokens = get_max_tokens(body, "max_tokens").value_or(16);
  if (get_bool(body, "echo").value_or(false)) {
    throw_bad_request("`echo` is not supported by the mock", "echo");
  }
  req.logprobs = get_logprobs_count(body, "logprobs").value_or(-1);
  const json* prompt = field(body, "prompt");
  if (prompt == nullptr) throw_bad_request("`prompt` is required", "prompt");
  auto ids = completion_prompt_ids(*prompt, server_tokenizer_or_mock(config.tokenizer));
  check_model_served(req.model, config);
  set_prompt(req, std::move(ids));
  check_lengths(req, config.max_model_len, "prompt", "max_tokens");
  const json& first = prompt->is_array() ? prompt->front() : *prompt;
  set_text_prompt_output(req, first.is_string() ? &first.get_ref<const std::string&>() : nullptr, request_seed,
                         config);
  req.structured = chat_structured_output(body, req.output_seed, /*chat=*/false);
  return req;
}

GenerationRequest parse_chat_request(const json& body, const ServerConfig& config) {
  GenerationRequest req;
  req.endpoint = Endpoint::kChat;
  const auto request_seed = parse_common(body, req);
  const auto max_completion = get_max_tokens(body, "max_completion_tokens");
  const auto max_tokens = get_max_tokens(body, "max_tokens");
  const char* max_field = max_completion ? "max_completion_tokens" : "max_tokens";
  const bool logprobs = get_bool(body, "logprobs").value_or(false);
  const auto top_logprobs = get_logprobs_count(body, "top_logprobs");
  if (top_logprobs.value_or(0) > 0 && !logprobs) {
    throw_bad_request("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs");
  }
  if (logprobs) req.logprobs = top_logprobs.value_or(0);
  const json* messages = field(body, "messages");
  if (messages == nullptr) throw_bad_request("`messages` is required", "messages");
  const auto texts = message_texts(*messages);
  check_model_served(req.model, config);
  set_prompt(req, message_token_ids(texts, server_tokenizer_or_mock(config.tokenizer)));
  if (max_completion) {
    req.max_tokens = *max_completion;
  } else if (max_tokens) {
    req.max_tokens = *max_tokens;
  } else {
    // vLLM's default: whatever room the context leaves (check_lengths rejects a full prompt).
    req.max_tokens = std::max<std::int64_t>(1, config.max_model_len - std::max<std::int64_t>(1, req.prompt_tokens));
  }
  check_lengths(req, config.max_model_len, "messages", max_field);
  req.output_seed = chat_output_seed(*messages, request_seed);
  if (config.output.answers) set_question(req, last_user_text(*messages), config);
  req.reasoning_tokens = chat_reasoning_tokens(body, config.reasoning.tokens);
  req.structured = chat_structured_output(body, req.output_seed, /*chat=*/true);
  return req;
}

void set_conversation_prompt(GenerationRequest& req, const json& messages, std::optional<std::int64_t> request_seed,
                             const ServerConfig& config) {
  const auto texts = message_texts(messages);
  set_prompt(req, message_token_ids(texts, server_tokenizer_or_mock(config.tokenizer)));
  req.output_seed = chat_output_seed(messages, request_seed);
  if (config.output.answers) set_question(req, last_user_text(messages), config);
}

std::int64_t default_max_tokens(std::int64_t prompt_tokens, const ServerConfig& config) {
  return std::max<std::int64_t>(1, config.max_model_len - std::max<std::int64_t>(1, prompt_tokens));
}

GenerationRequest parse_generate_request(const json& body, const ServerConfig& config) {
  GenerationRequest req;
  req.endpoint = Endpoint::kGenerate;
  if (!body.is_object()) {
    throw_bad_request(fmt::format("The request body must be a JSON object, got {}", type_name(body)));
  }
  req.model = config.models.empty() ? std::string() : config.models.front();
  req.stream = get_bool(body, "stream").value_or(false);
  if (const json* rid = field(body, "rid")) {
    if (!rid->is_string()) {
      wrong_type("rid", rid->is_array() ? "a string (batched requests are not supported by the mock)" : "a string",
                 *rid);
    }
    req.rid = rid->get<std::string>();
  }

  const json* text = field(body, "text");
  const json* input_ids = field(body, "input_ids");
  if ((text == nullptr) == (input_ids == nullptr)) {
    throw_bad_request(text == nullptr ? "Either text or input_ids should be provided."
                                      : "Either text or input_ids should be provided, not both.",
                      "text");
  }
  if (text != nullptr && !text->is_string()) {
    wrong_type("text", text->is_array() ? "a string (batched requests are not supported by the mock)" : "a string",
               *text);
  }
  if (input_ids != nullptr && input_ids->is_array() && !input_ids->empty() && input_ids->front().is_array()) {
    throw_bad_request("`input_ids` must be one array of token ids: batched requests are not supported by the mock",
                      "input_ids");
  }

  // sampling_params: SGLang's names; vLLM's knobs of the same name are type-checked alike.
  static const json kNoParams = json::object();
  const json* params = field(body, "sampling_params");
  if (params != nullptr && !params->is_object()) wrong_type("sampling_params", "an object", *params);
  const json& sp = params != nullptr ? *params : kNoParams;
  const auto request_seed = check_sampling_fields(sp);
  req.ignore_eos = get_bool(sp, "ignore_eos").value_or(false);
  req.max_tokens = get_max_tokens(sp, "max_new_tokens").value_or(128);
  req.min_tokens = get_int(sp, "min_new_tokens").value_or(0);
  if (const json* stop = field(sp, "stop")) {
    const bool ok = stop->is_string() ||
                    (stop->is_array() && std::all_of(stop->begin(), stop->end(), [](const json& s) { return s.is_string(); }));
    if (!ok) wrong_type("stop", "a string or an array of strings", *stop);
  }
  const ServerTokenizer& tokenizer = server_tokenizer_or_mock(config.tokenizer);
  if (const json* stop_ids = field(sp, "stop_token_ids")) {
    (void)token_id_array(*stop_ids, "stop_token_ids", true, tokenizer);
  }

  if (req.min_tokens < 0 || req.min_tokens > req.max_tokens) {
    throw_bad_request(fmt::format("min_new_tokens must be in [0, max_new_tokens], got {}.", req.min_tokens),
                      "min_new_tokens");
  }

  if (text != nullptr) {
    std::vector<std::uint32_t> ids;
    tokenizer.append_prompt_ids(text->get_ref<const std::string&>(), /*add_special=*/true, ids);
    set_prompt(req, std::move(ids));
  } else {
    set_prompt(req, token_id_array(*input_ids, "input_ids", false, tokenizer));
  }
  check_lengths(req, config.max_model_len, text != nullptr ? "text" : "input_ids", "max_new_tokens");
  set_text_prompt_output(req, text != nullptr ? &text->get_ref<const std::string&>() : nullptr, request_seed, config);
  return req;
}

}  // namespace llmload::server
