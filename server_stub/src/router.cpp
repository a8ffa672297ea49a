#include "llmload/server/router.hpp"

#include <array>

#include <fmt/format.h>
#include "llmload/server/json.hpp"

#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/rng.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::string_view kJson = "application/json";

struct Route {
  std::string_view path;
  std::string_view method;
};
constexpr std::array<Route, 5> kRoutes = {{{"/health", "GET"},
                                           {"/v1/models", "GET"},
                                           {"/v1/completions", "POST"},
                                           {"/v1/chat/completions", "POST"},
                                           {"/tokenize", "POST"}}};

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

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

std::string make_response_id(Endpoint endpoint, std::uint64_t seed, std::uint64_t sequence) {
  Rng rng = Rng::for_stream(seed, sequence);
  const std::uint64_t hi = rng.next_u64();
  const std::uint64_t lo = rng.next_u64();
  return fmt::format("{}-{:016x}{:016x}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl", hi, lo);
}

Router::Router(ServerConfig config, std::int64_t started_unix)
    : config_(std::move(config)), started_unix_(started_unix) {}

RouteResult Router::route(std::string_view method, std::string_view target, std::string_view body,
                          const RequestContext& context) const {
  try {
    const std::string_view path = target.substr(0, target.find('?'));
    const Route* found = nullptr;
    for (const auto& r : kRoutes) {
      if (r.path == path) found = &r;
    }
    if (found == nullptr) {
      throw ApiException(ApiError{404, fmt::format("Not Found: no endpoint at `{}`", path), std::nullopt});
    }
    if (found->method != method) {
      HttpReply reply = error_reply(ApiError{
          405, fmt::format("Method Not Allowed: `{}` accepts {} only", path, found->method), std::nullopt});
      reply.headers.emplace_back("Allow", std::string(found->method));
      return reply;
    }
    if (path == "/health") return HttpReply{200, "", "", {}};
    if (path == "/v1/models") return models_reply();
    if (path == "/tokenize") return tokenize_reply(body);
    return generation_job(path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChat, body, context);
  } catch (const ApiException& e) {
    return error_reply(e.error());
  } catch (const std::exception& e) {
    return error_reply(ApiError{500, fmt::format("Internal server error: {}", e.what()), std::nullopt});
  }
}

HttpReply Router::models_reply() const {
  ojson data = ojson::array();
  for (const auto& id : config_.models) {
    ojson m;
    m["id"] = id;
    m["object"] = "model";
    m["created"] = started_unix_;
    m["owned_by"] = "llmload";
    m["root"] = id;
    m["parent"] = nullptr;
    m["max_model_len"] = config_.max_model_len;
    m["permission"] = ojson::array();
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
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw_bad_request("`model` must be a string", "model");
    check_model_served(it->get_ref<const std::string&>(), config_);
  }
  std::vector<std::string_view> texts;
  if (auto m = body.find("messages"); m != body.end() && !m->is_null()) {
    texts = message_texts(*m);
  } else if (auto p = body.find("prompt"); p != body.end() && !p->is_null()) {
    texts = prompt_texts(*p);
  } else {
    throw_bad_request("`prompt` or `messages` is required", "prompt");
  }
  bool with_strs = false;
  if (auto s = body.find("return_token_strs"); s != body.end() && !s->is_null()) {
    if (!s->is_boolean()) throw_bad_request("`return_token_strs` must be a boolean", "return_token_strs");
    with_strs = s->get<bool>();
  }
  ojson tokens = ojson::array();
  ojson strs = ojson::array();
  for (auto text : texts) {
    for (auto word : split_words(text)) {
      tokens.push_back(token_id(word));
      if (with_strs) strs.push_back(word);
    }
  }
  ojson out;
  out["count"] = tokens.size();
  out["max_model_len"] = config_.max_model_len;
  out["tokens"] = std::move(tokens);
  if (with_strs) out["token_strs"] = std::move(strs);
  return HttpReply{200, std::string(kJson), dump(out), {}};
}

GenerationJob Router::generation_job(Endpoint endpoint, std::string_view body_text,
                                     const RequestContext& context) const {
  const json body = parse_body(body_text);
  GenerationJob job;
  job.request = endpoint == Endpoint::kChat ? parse_chat_request(body, config_) : parse_completion_request(body, config_);
  job.id = make_response_id(endpoint, config_.latency.seed, context.sequence);
  job.created_unix = context.arrival_unix;
  return job;
}

}  // namespace llmload::server
