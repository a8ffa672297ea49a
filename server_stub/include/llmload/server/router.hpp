#pragma once
// Maps one HTTP request (method, target, body, context) to either an immediate reply (health,
// models, tokenize, detokenize, every error) or a GenerationJob for the HTTP layer to play out
// over time. const and thread-safe: safe to call from any number of io threads at once (the
// only shared state it touches, the token vocabulary /tokenize fills, is internally locked).
// Never throws for bad input; unexpected internal failures become a 500 reply.
//
// Authentication: with config.api_key set, every request whose path starts with "/v1" (known
// or not, any method but OPTIONS, as vLLM's middleware does) and POST /generate must carry
// `Authorization: Bearer <api_key>` or `x-api-key: <api_key>` (Anthropic's header), else 401
// AuthenticationError (OpenAI shape, with `WWW-Authenticate: Bearer`; on /v1/messages Anthropic's
// authentication_error). /health, /metrics, /tokenize and /detokenize stay open, as in vLLM.
//
// Error bodies: the OpenAI shape {"error":{"message","type","param","code"}} everywhere, except
// that /generate's own errors (bad JSON, validation: 400) use SGLang's {"error":{"message"}}, and
// every error of /v1/messages Anthropic's {"type":"error","error":{"type","message"}}.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "llmload/server/api_error.hpp"
#include "llmload/server/generation_request.hpp"
#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/response_store.hpp"
#include "llmload/server/server_config.hpp"
#include "llmload/server/server_tokenizer.hpp"

namespace llmload::server {

struct HttpReply {
  int status = 200;
  std::string content_type;  ///< empty: no Content-Type header (e.g. /health)
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra, e.g. Allow on 405
};

/// An error reply with the OpenAI body.
HttpReply error_reply(const ApiError& error);

/// An error reply in the shape of the endpoint's API: Anthropic's for kMessages, else OpenAI's.
HttpReply error_reply_for(Endpoint endpoint, const ApiError& error);

/// Facts about the request that come from the server or the request head, not the body.
/// Not an aggregate (so `RequestContext{sequence, arrival}` stays warning-free as fields are added).
struct RequestContext {
  RequestContext() = default;
  RequestContext(std::uint64_t sequence_in, std::int64_t arrival_unix_in,
                 std::optional<std::string_view> authorization_in = std::nullopt,
                 std::optional<std::string_view> x_api_key_in = std::nullopt)
      : sequence(sequence_in), arrival_unix(arrival_unix_in), authorization(authorization_in), x_api_key(x_api_key_in) {}

  std::uint64_t sequence = 0;     ///< unique per request; makes the response id
  std::int64_t arrival_unix = 0;  ///< "created"
  /// The Authorization header's value if the request has one. Views the request: valid for the
  /// duration of route() only.
  std::optional<std::string_view> authorization;
  /// The x-api-key header's value if the request has one (Anthropic's clients send it). Same lifetime.
  std::optional<std::string_view> x_api_key;
};

using RouteResult = std::variant<HttpReply, GenerationJob>;

class Router {
 public:
  /// `started_unix` is reported as the models' "created".
  Router(ServerConfig config, std::int64_t started_unix);

  RouteResult route(std::string_view method, std::string_view target, std::string_view body,
                    const RequestContext& context) const;

  const ServerConfig& config() const { return config_; }

  /// The words /tokenize has seen, which /detokenize spells ids with (shared by copies). Used
  /// by the mock tokenizer only (without --tokenizer).
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

  /// What /tokenize, /detokenize and generation requests use: config.tokenizer, else the mock.
  const ServerTokenizer& tokenizer() const { return *tokenizer_; }

  /// The Responses API's recent responses (previous_response_id): the connections remember a
  /// response here once it completed. Thread-safe; shared by copies of the router.
  ResponseStore& response_store() const { return *responses_; }

 private:
  /// The 401 reply for a request that needs the API key and lacks it, or nullopt.
  std::optional<HttpReply> check_auth(std::string_view method, std::string_view path,
                                      const RequestContext& context) const;
  HttpReply models_reply() const;
  HttpReply tokenize_reply(std::string_view body) const;
  HttpReply detokenize_reply(std::string_view body) const;
  GenerationJob generation_job(Endpoint endpoint, std::string_view body, const RequestContext& context) const;

  ServerConfig config_;
  std::int64_t started_unix_;
  std::shared_ptr<TokenVocabulary> vocabulary_;  ///< thread-safe; mutable through const route()
  std::shared_ptr<const ServerTokenizer> tokenizer_;  ///< never null; thread-safe
  std::shared_ptr<ResponseStore> responses_;          ///< thread-safe; mutable through const route()
};

/// The response id for a request from (seed, sequence): "cmpl-" / "chatcmpl-" / "resp_" / "msg_"
/// + 32 hex digits; for kGenerate 32 hex digits alone (SGLang's rid is a bare uuid hex).
std::string make_response_id(Endpoint endpoint, std::uint64_t seed, std::uint64_t sequence);

/// Remembers a completed Responses request (job.request.responses with store on) as the
/// conversation a follow-up's previous_response_id continues: its input turns and, as the
/// assistant's turn, `answer` (the output without its reasoning, as vLLM keeps it).
void remember_response(ResponseStore& store, const GenerationJob& job, std::string answer);

/// Whether an Authorization header value carries `api_key` as a Bearer token (scheme
/// case-insensitive; the key compared in constant time). False for a missing header.
bool authorization_matches(std::optional<std::string_view> authorization, std::string_view api_key);

}  // namespace llmload::server
