#include "llmload/loadgen/request_builder.hpp"

#include <algorithm>

#include <cctype>

#include <cstring>

#include <fmt/format.h>

#include "llmload/common/version.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/structured_request.hpp"
#include "conversation.hpp"

namespace llmload {

using nlohmann::json;

BackendInfo parse_backend(std::string_view name) {
  if (name == "openai-completions" || name == "openai" || name == "vllm" || name == "completions") {
    return {ApiKind::kCompletions, "openai-completions", "/v1/completions"};
  }
  if (name == "openai-chat" || name == "chat" || name == "openai-chat-completions") {
    return {ApiKind::kChat, "openai-chat", "/v1/chat/completions"};
  }
  if (name == "sglang" || name == "sglang-generate") return {ApiKind::kSglang, "sglang", "/generate"};
  if (name == "openai-responses" || name == "responses") {
    return {ApiKind::kResponses, "openai-responses", "/v1/responses"};
  }
  if (name == "anthropic" || name == "anthropic-messages" || name == "messages") {
    return {ApiKind::kAnthropic, "anthropic", "/v1/messages"};
  }
  throw ConfigError(fmt::format("unknown backend '{}': use openai-completions (also 'openai', 'vllm'), openai-chat, "
                                "openai-responses (/v1/responses), anthropic (/v1/messages) or sglang (native "
                                "/generate)",
                                name));
}

namespace {
// A conversation as one text (completions, SGLang): each part joined by a single space, so a
// prompt made of single-token words still counts the sum of its parts' tokens.
std::string flatten(const std::vector<Turn>& history, const std::string& prompt) {
  std::string text;
  auto add = [&](const std::string& part) {
    if (part.empty()) return;
    if (!text.empty() && text.back() != ' ' && part.front() != ' ') text.push_back(' ');
    text += part;
  };
  for (const auto& t : history) {
    add(t.user);
    add(t.assistant);
  }
  add(prompt);
  return text;
}
}  // namespace

RequestBuilder::RequestBuilder(const ScenarioConfig& cfg, std::string base_path, std::string host_header,
                               const Workload* workload)
    : cfg_(cfg),
      base_path_(std::move(base_path)),
      host_header_(std::move(host_header)),
      workload_(workload),
      backend_(parse_backend(cfg.backend)),
      data_seed_(data_seed(cfg.seed)),
      builtin_(TokenModel::builtin()) {
  if (!cfg.extra_body.empty()) {
    extra_body_ = json::parse(cfg.extra_body, nullptr, false);
    if (extra_body_.is_discarded() || !extra_body_.is_object()) {
      throw ConfigError(fmt::format("bad --extra-body '{}': give a JSON object, e.g. --extra-body '{{\"top_p\": 0.9}}'",
                                    cfg.extra_body.substr(0, 200)));
    }
  }
  path_ = path();
  make_template();
}

std::string RequestBuilder::path() const {
  return base_path_ + (cfg_.endpoint_path.empty() ? backend_.default_path : cfg_.endpoint_path);
}

WorkItem RequestBuilder::item(std::uint64_t index) const {
  if (workload_ != nullptr) {
    const auto n = workload_->size();
    return workload_->item(n && *n > 0 ? index % *n : index);
  }
  WorkItem w;
  w.prompt = builtin_.synthesize(cfg_.input_tokens, mix_seed(data_seed_ + index));
  w.input_tokens = cfg_.input_tokens;
  w.output_tokens = cfg_.output_tokens;
  return w;
}


KeyFields key_fields(const BackendInfo& backend, const std::string& api_key) {
  KeyFields k;
  if (backend.api == ApiKind::kAnthropic) {
    if (!api_key.empty()) k.fields.emplace_back("x-api-key", api_key);
    k.fields.emplace_back("anthropic-version", kAnthropicVersion);
  } else {
    k.bearer = api_key;
  }
  return k;
}

// The OpenAI Responses API: the prompt as `input` (a string, or the message list when there is
// a conversation), `max_output_tokens`. No vLLM extensions: the API rejects unknown fields.
json RequestBuilder::responses_body(const WorkItem& item, const std::vector<Turn>& history,
                                    const std::string& model) const {
  json body;
  body["model"] = model;
  // --conversation-state server: the server holds the conversation; only the new input travels.
  const bool held = cfg_.conversation_state == "server" && !history.empty() && !history.back().response_id.empty();
  if (history.empty() && item.messages.empty()) {
    body["input"] = item.prompt;
  } else if (held) {
    body["previous_response_id"] = history.back().response_id;
    body["input"] = conversation::responses_input(history, item, history.size());
  } else {
    body["input"] = conversation::responses_input(history, item);
  }
  body["max_output_tokens"] = item.output_tokens;
  body["temperature"] = 0.0;
  body["stream"] = cfg_.stream;
  return body;
}

// The Anthropic Messages API: `messages` (system messages of a row go to the top-level `system`,
// which is where the API takes them), `max_tokens` (required).
json RequestBuilder::anthropic_body(const WorkItem& item, const std::vector<Turn>& history,
                                    const std::string& model) const {
  json body;
  body["model"] = model;
  body["max_tokens"] = item.output_tokens;
  std::string system;
  json messages = conversation::anthropic_messages(history, item, system);
  if (!system.empty()) body["system"] = system;
  body["messages"] = std::move(messages);
  body["temperature"] = 0.0;
  body["stream"] = cfg_.stream;
  return body;
}

json RequestBuilder::make_body(const WorkItem& item, const std::vector<Turn>& history, const std::string& model) const {
  json body;
  const bool exact = cfg_.ignore_eos;
  if (backend_.api == ApiKind::kResponses || backend_.api == ApiKind::kAnthropic) {
    body = backend_.api == ApiKind::kResponses ? responses_body(item, history, model)
                                               : anthropic_body(item, history, model);
  } else if (backend_.api == ApiKind::kSglang) {
    body["text"] = flatten(history, item.prompt);
    json sp = {{"max_new_tokens", item.output_tokens}, {"temperature", 0.0}};
    if (exact) {
      sp["ignore_eos"] = true;
      sp["min_new_tokens"] = item.output_tokens;
    }
    body["sampling_params"] = std::move(sp);
    body["stream"] = cfg_.stream;
  } else {
    body["model"] = model;
    if (backend_.api == ApiKind::kChat) {
      body["messages"] = conversation::chat_messages(history, item);
      body["max_completion_tokens"] = item.output_tokens;
    } else {
      body["prompt"] = flatten(history, item.prompt);
      body["max_tokens"] = item.output_tokens;
    }
    // vLLM/SGLang extensions that make the output length exact.
    if (exact) {
      body["ignore_eos"] = true;
      body["min_tokens"] = item.output_tokens;
    }
    body["temperature"] = 0.0;
    if (cfg_.consistency || cfg_.save_outputs) {
      // Kept outputs are compared (consistency): the same seed in every pass, and the server's
      // own tokens when it gives them (docs/metrics.md "Consistency").
      body["seed"] = 0;
      if (cfg_.consistency_tokens == "logprobs") {
        body["logprobs"] = backend_.api == ApiKind::kChat ? json(true) : json(0);
      } else if (cfg_.consistency_tokens == "token-ids") {
        body["return_token_ids"] = true;
      }
    }
    body["stream"] = cfg_.stream;
    if (cfg_.stream) {
      json so = {{"include_usage", true}};
      // Per-chunk usage lets chunks that carry several tokens (speculative decoding) weigh right.
      if (cfg_.continuous_usage) so["continuous_usage_stats"] = true;
      body["stream_options"] = std::move(so);
    }
  }
  if (item.structured) add_structured_fields(body, backend_.api, *item.structured);
  if (!extra_body_.empty()) body.update(extra_body_);
  return body;
}

namespace {
// The sentinels a body template is made with: never produced by a real request (the prompt
// sentinel is not a word list's output, the token count is over any limit we accept).
constexpr std::string_view kPromptSentinel = "\x01llmload-prompt-slot\x01";
constexpr std::int64_t kTokensSentinel = 7'770'777'077'707;
constexpr std::string_view kModelSentinel = "\x01llmload-model-slot\x01";

// A JSON string literal of `s` as nlohmann dumps it (error_handler replace); the common
// printable-ASCII text is copied straight in.
void append_json_string(std::string& out, const std::string& s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
      out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
      return;
    }
  }
  out += '"';
  out += s;
  out += '"';
}
}  // namespace

// The body of a request without history, as pieces around the prompt and the output-token
// count: made once by dumping make_body() with sentinels, so the bytes are exactly those of the
// DOM path (a unit test compares them). Left empty (no template) when the sentinels do not come
// out as expected, e.g. --extra-body overrides the prompt or the token fields.
void RequestBuilder::make_template() {
  WorkItem probe;
  probe.prompt = std::string(kPromptSentinel);
  probe.output_tokens = kTokensSentinel;
  // Several models (--model a,b,c): the model is a slot too.
  const bool model_slot = !cfg_.models.empty();
  const std::string model = model_slot ? std::string(kModelSentinel) : cfg_.model;
  const std::string dumped = make_body(probe, {}, model).dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string prompt_literal = json(probe.prompt).dump();
  const std::string tokens_literal = std::to_string(kTokensSentinel);
  const std::string model_literal = json(std::string(kModelSentinel)).dump();
  std::vector<BodyPiece> pieces;
  std::size_t pos = 0;
  int prompts = 0;
  int models = 0;
  while (pos < dumped.size()) {
    const std::size_t p = dumped.find(prompt_literal, pos);
    const std::size_t t = dumped.find(tokens_literal, pos);
    const std::size_t m = model_slot ? dumped.find(model_literal, pos) : std::string::npos;
    const std::size_t next = std::min({p, t, m});
    pieces.push_back({dumped.substr(pos, next == std::string::npos ? std::string::npos : next - pos), BodyPiece::kText});
    if (next == std::string::npos) break;
    if (next == p) {
      pieces.push_back({{}, BodyPiece::kPrompt});
      ++prompts;
      pos = p + prompt_literal.size();
    } else if (next == m) {
      pieces.push_back({{}, BodyPiece::kModel});
      ++models;
      pos = m + model_literal.size();
    } else {
      pieces.push_back({{}, BodyPiece::kOutputTokens});
      pos = t + tokens_literal.size();
    }
  }
  if (prompts != 1 || models != (model_slot ? 1 : 0)) return;  // no template: every body takes the DOM path
  body_template_ = std::move(pieces);
}

HttpRequest RequestBuilder::build(const WorkItem& item, const std::vector<Turn>& history, std::string_view model) const {
  HttpRequest req;
  req.method = "POST";
  req.target = path_;
  KeyFields key = key_fields(backend_, cfg_.api_key);
  HeaderFields own = {{"Content-Type", "application/json"},
                      {"Accept", cfg_.stream ? "text/event-stream" : "application/json"},
                      {"User-Agent", std::string("llmload/") + kVersion}};
  own.insert(own.end(), key.fields.begin(), key.fields.end());
  req.set_headers(host_header_, std::move(own), key.bearer, cfg_.headers);
  const bool own_messages = backend_.api != ApiKind::kCompletions && backend_.api != ApiKind::kSglang &&
                            !item.messages.empty();
  if (history.empty() && !body_template_.empty() && !own_messages && !item.structured) {
    req.body.reserve(item.prompt.size() + 512);
    for (const auto& piece : body_template_) {
      switch (piece.kind) {
        case BodyPiece::kText:
          req.body += piece.text;
          break;
        case BodyPiece::kPrompt:
          append_json_string(req.body, item.prompt);
          break;
        case BodyPiece::kOutputTokens:
          fmt::format_to(std::back_inserter(req.body), "{}", item.output_tokens);
          break;
        case BodyPiece::kModel:
          append_json_string(req.body, model.empty() ? cfg_.model : std::string(model));
          break;
      }
    }
  } else {
    req.body = dom_body(item, history, model);
  }
  return req;
}

std::string RequestBuilder::dom_body(const WorkItem& item, const std::vector<Turn>& history, std::string_view model) const {
  return make_body(item, history, model.empty() ? cfg_.model : std::string(model))
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace llmload
