#include "llmload/server/router.hpp"

#include <array>

#include <fmt/format.h>
#include "llmload/server/json.hpp"

#include "llmload/server/messages_request.hpp"
#include "llmload/server/mock_server_tokenizer.hpp"
#include "llmload/server/responses_request.hpp"
#include "llmload/server/rng.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

constexpr std::string_view kJson = "application/json";

struct Route {
  std::string_view path;
  std::string_view method;
};
constexpr std::array<Route, 9> kRoutes = {{{"/health", "GET"},
                                           {"/v1/models", "GET"},
                                           {"/v1/completions", "POST"},
                                           {"/v1/chat/completions", "POST"},
                                           {"/v1/responses", "POST"},
                                           {"/v1/messages", "POST"},
                                           {"/tokenize", "POST"},
                                           {"/detokenize", "POST"},
                                           {"/generate", "POST"}}};

/// 32 hex digits from (seed, stream): ids that are unique per request yet reproducible.
std::string hex128(std::uint64_t seed, std::uint64_t stream) {
  Rng rng = Rng::for_stream(seed, stream);
  const std::uint64_t hi = rng.next_u64();
  const std::uint64_t lo = rng.next_u64();
  return fmt::format("{:016x}{:016x}", hi, lo);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// Equal contents, in time that depends on the lengths only (never on where they differ).
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0U : 1U;
  if (b.empty()) return a.empty();
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i % b.size()]);
  }
  return diff == 0U;
}

/// An optional boolean field of a /tokenize body (type-checked, value unused or returned).
bool optional_bool(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw_bad_request(fmt::format("`{}` must be a boolean", name), name);
  return it->get<bool>();
}

/// Checks the optional `model` of /tokenize and /detokenize.
void check_optional_model(const json& body, const ServerConfig& config) {
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw_bad_request("`model` must be a string", "model");
    check_model_served(it->get_ref<const std::string&>(), config);
  }
}

json parse_body(std::string_view body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    // e.what() starts with "[json.exception.parse_error.101] "; keep only the readable part.
    std::string_view what = e.what();
    if (auto pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    throw_bad_request(fmt::format("Invalid JSON body: {}", what));
  }
}

}  // namespace

HttpReply error_reply(const ApiError& error) {
  return HttpReply{error.status, std::string(kJson), error_body(error), {}};
}

HttpReply error_reply_for(Endpoint endpoint, const ApiError& error) {
  if (endpoint == Endpoint::kMessages) return HttpReply{error.status, std::string(kJson), anthropic_error_body(error), {}};
  return error_reply(error);
}

void remember_response(ResponseStore& store, const GenerationJob& job, std::string answer) {
  const auto& fields = job.request.responses;
  if (!fields || !fields->store) return;
  auto conversation = std::make_shared<StoredConversation>();
  conversation->parent = fields->previous;
  conversation->turns = fields->input;
  conversation->turns.push_back({"assistant", std::move(answer)});
  store.put(job.id, std::move(conversation));
}

std::string make_response_id(Endpoint endpoint, std::uint64_t seed, std::uint64_t sequence) {
  const std::string hex = hex128(seed, sequence);
  switch (endpoint) {
    case Endpoint::kCompletions: return "cmpl-" + hex;
    case Endpoint::kChat: return "chatcmpl-" + hex;
    case Endpoint::kGenerate: return hex;
    case Endpoint::kResponses: return "resp_" + hex;
    case Endpoint::kMessages: return "msg_" + hex;
  }
  return hex;
}

bool authorization_matches(std::optional<std::string_view> authorization, std::string_view api_key) {
  if (!authorization) return false;
  const std::string_view value = trim(*authorization);
  const auto space = value.find(' ');
  if (space == std::string_view::npos || !iequals(value.substr(0, space), "Bearer")) return false;
  return constant_time_equal(trim(value.substr(space + 1)), api_key);
}

Router::Router(ServerConfig config, std::int64_t started_unix)
    : config_(std::move(config)),
      started_unix_(started_unix),
      vocabulary_(std::make_shared<TokenVocabulary>()),
      tokenizer_(config_.tokenizer ? config_.tokenizer
                                   : std::shared_ptr<const ServerTokenizer>(std::make_shared<MockServerTokenizer>(vocabulary_))),
      responses_(std::make_shared<ResponseStore>()) {}

std::optional<HttpReply> Router::check_auth(std::string_view method, std::string_view path,
                                            const RequestContext& context) const {
  if (config_.api_key.empty() || method == "OPTIONS") return std::nullopt;
  const bool guarded = path.substr(0, 3) == "/v1" || path == "/generate";
  if (!guarded || authorization_matches(context.authorization, config_.api_key) ||
      (context.x_api_key && constant_time_equal(trim(*context.x_api_key), config_.api_key))) {
    return std::nullopt;
  }
  // Never echo what was sent: it may be a real key meant for another server.
  const bool sent = context.authorization || context.x_api_key;
  if (path == "/v1/messages") {
    return error_reply_for(Endpoint::kMessages,
                           ApiError{401, sent ? "invalid x-api-key" : "x-api-key header is required", std::nullopt});
  }
  HttpReply reply = error_reply(ApiError{
      401,
      sent ? "Incorrect API key provided: the `Authorization` header must be `Bearer <key>` (or `x-api-key` the key) "
             "with this server's API key (--api-key)."
           : "Missing API key: this server requires an `Authorization: Bearer <key>` header (or `x-api-key`) with its "
             "API key (--api-key).",
      std::nullopt});
  reply.headers.emplace_back("WWW-Authenticate", "Bearer");
  return reply;
}

RouteResult Router::route(std::string_view method, std::string_view target, std::string_view body,
                          const RequestContext& context) const {
  const std::string_view path = target.substr(0, target.find('?'));
  // /v1/messages answers every error in Anthropic's shape.
  const Endpoint shape = path == "/v1/messages" ? Endpoint::kMessages : Endpoint::kChat;
  try {
    if (auto denied = check_auth(method, path, context)) return std::move(*denied);
    const Route* found = nullptr;
    for (const auto& r : kRoutes) {
      if (r.path == path) found = &r;
    }
    if (found == nullptr) {
      throw ApiException(ApiError{404, fmt::format("Not Found: no endpoint at `{}`", path), std::nullopt});
    }
    if (found->method != method) {
      HttpReply reply = error_reply_for(
          shape, ApiError{405, fmt::format("Method Not Allowed: `{}` accepts {} only", path, found->method), std::nullopt});
      reply.headers.emplace_back("Allow", std::string(found->method));
      return reply;
    }
    if (path == "/health") return HttpReply{200, "", "", {}};
    if (path == "/v1/models") return models_reply();
    if (path == "/tokenize") return tokenize_reply(body);
    if (path == "/detokenize") return detokenize_reply(body);
    if (path == "/generate") {
      try {
        return generation_job(Endpoint::kGenerate, body, context);
      } catch (const ApiException& e) {
        return HttpReply{e.error().status, std::string(kJson), sglang_error_body(e.error()), {}};
      }
    }
    const Endpoint endpoint = path == "/v1/completions"  ? Endpoint::kCompletions
                              : path == "/v1/responses" ? Endpoint::kResponses
                              : path == "/v1/messages"  ? Endpoint::kMessages
                                                        : Endpoint::kChat;
    return generation_job(endpoint, body, context);
  } catch (const ApiException& e) {
    return error_reply_for(shape, e.error());
  } catch (const std::exception& e) {
    return error_reply_for(shape, ApiError{500, fmt::format("Internal server error: {}", e.what()), std::nullopt});
  }
}

namespace {

/// vLLM's ModelPermission, with its fixed values; the id is reproducible (seed, card index).
ojson model_permission(std::uint64_t seed, std::size_t index, std::int64_t created) {
  ojson perm;
  perm["id"] = "modelperm-" + hex128(seed ^ 0x6d6f64656c7065ULL, index);
  perm["object"] = "model_permission";
  perm["created"] = created;
  perm["allow_create_engine"] = false;
  perm["allow_sampling"] = true;
  perm["allow_logprobs"] = true;
  perm["allow_search_indices"] = false;
  perm["allow_view"] = true;
  perm["allow_fine_tuning"] = false;
  perm["organization"] = "*";
  perm["group"] = nullptr;
  perm["is_blocking"] = false;
  return perm;
}

}  // namespace

HttpReply Router::models_reply() const {
  ojson data = ojson::array();
  for (std::size_t i = 0; i < config_.models.size(); ++i) {
    const std::string& id = config_.models[i];
    ojson m;
    m["id"] = id;
    m["object"] = "model";
    m["created"] = started_unix_;
    m["owned_by"] = "llmload";
    m["root"] = id;
    m["parent"] = nullptr;
    m["max_model_len"] = config_.max_model_len;
    m["permission"] = ojson::array({model_permission(config_.latency.seed, i, started_unix_)});
    data.push_back(std::move(m));
  }
  // LoRA adapters after the base models, as vLLM lists them: root is the adapter's path, parent
  // its base model, and max_model_len null (vLLM's adapter cards leave it unset).
  for (std::size_t k = 0; k < config_.lora.modules.size(); ++k) {
    const LoraModule& lora = config_.lora.modules[k];
    ojson m;
    m["id"] = lora.name;
    m["object"] = "model";
    m["created"] = started_unix_;
    m["owned_by"] = "llmload";
    m["root"] = lora.path;
    m["parent"] = lora.base_model;
    m["max_model_len"] = nullptr;
    m["permission"] =
        ojson::array({model_permission(config_.latency.seed, config_.models.size() + k, started_unix_)});
    data.push_back(std::move(m));
  }
  ojson body;
  body["object"] = "list";
  body["data"] = std::move(data);
  return HttpReply{200, std::string(kJson), dump(body), {}};
}

HttpReply Router::tokenize_reply(std::string_view body_text) const {
  const json body = parse_body(body_text);
  if (!body.is_object()) throw_bad_request("The request body must be a JSON object");
  check_optional_model(body, config_);
  std::vector<std::string_view> texts;
  bool chat = false;
  if (auto m = body.find("messages"); m != body.end() && !m->is_null()) {
    texts = message_texts(*m);
    chat = true;
  } else if (auto p = body.find("prompt"); p != body.end() && !p->is_null()) {
    texts = prompt_texts(*p);
  } else {
    throw_bad_request("`prompt` or `messages` is required", "prompt");
  }
  // vLLM's flags: type-checked. There is no chat template; messages are counted as chat
  // completions count them (each text part alone, no special tokens), a prompt with the
  // tokenizer's special tokens unless add_special_tokens is false (vLLM's default is true).
  for (const char* flag : {"add_generation_prompt", "continue_final_message"}) (void)optional_bool(body, flag);
  bool add_special = !chat;
  if (auto it = body.find("add_special_tokens"); it != body.end() && !it->is_null()) {
    add_special = optional_bool(body, "add_special_tokens") && !chat;
  }
  const bool with_strs = optional_bool(body, "return_token_strs");
  std::vector<std::uint32_t> ids;
  std::vector<std::string> token_strs;
  for (auto text : texts) tokenizer_->tokenize(text, add_special, ids, with_strs ? &token_strs : nullptr);
  ojson tokens = ojson::array();
  for (auto id : ids) tokens.push_back(id);
  ojson strs = with_strs ? ojson::array() : ojson(nullptr);
  for (auto& s : token_strs) strs.push_back(std::move(s));
  ojson out;
  out["count"] = tokens.size();
  out["max_model_len"] = config_.max_model_len;
  out["tokens"] = std::move(tokens);
  out["token_strs"] = std::move(strs);
  return HttpReply{200, std::string(kJson), dump(out), {}};
}

HttpReply Router::detokenize_reply(std::string_view body_text) const {
  const json body = parse_body(body_text);
  if (!body.is_object()) throw_bad_request("The request body must be a JSON object");
  check_optional_model(body, config_);
  auto tokens = body.find("tokens");
  if (tokens == body.end() || tokens->is_null()) throw_bad_request("`tokens` is required", "tokens");
  const std::vector<std::uint32_t> ids = token_id_array(*tokens, "tokens", /*allow_empty=*/true, *tokenizer_);
  ojson out;
  out["prompt"] = tokenizer_->detokenize(ids);
  return HttpReply{200, std::string(kJson), dump(out), {}};
}

GenerationJob Router::generation_job(Endpoint endpoint, std::string_view body_text,
                                     const RequestContext& context) const {
  const json body = parse_body(body_text);
  GenerationJob job;
  switch (endpoint) {
    case Endpoint::kCompletions: job.request = parse_completion_request(body, config_); break;
    case Endpoint::kChat: job.request = parse_chat_request(body, config_); break;
    case Endpoint::kGenerate: job.request = parse_generate_request(body, config_); break;
    case Endpoint::kResponses: job.request = parse_responses_request(body, config_, *responses_); break;
    case Endpoint::kMessages: job.request = parse_messages_request(body, config_); break;
  }
  job.id = endpoint == Endpoint::kGenerate && !job.request.rid.empty()
               ? job.request.rid
               : make_response_id(endpoint, config_.latency.seed, context.sequence);
  job.created_unix = context.arrival_unix;
  job.tokenizer = tokenizer_;  // the mock's remembers the words of answers for /detokenize
  job.output_model = config_.output;
  job.seed = config_.latency.seed;
  job.reasoning_field = config_.reasoning.field;
  return job;
}

}  // namespace llmload::server
