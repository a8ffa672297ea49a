#pragma once
// Maps one HTTP request (method, target, body) to either an immediate reply (health, models,
// tokenize, every error) or a GenerationJob for the HTTP layer to play out over time.
// Pure and const: safe to call from any number of io threads at once. Never throws for bad
// input; unexpected internal failures become a 500 reply.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "llmload/server/api_error.hpp"
#include "llmload/server/generation_request.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

struct HttpReply {
  int status = 200;
  std::string content_type;  ///< empty: no Content-Type header (e.g. /health)
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra, e.g. Allow on 405
};

/// An error reply with the OpenAI body.
HttpReply error_reply(const ApiError& error);

/// Facts about the request that come from the server, not the bytes.
struct RequestContext {
  std::uint64_t sequence = 0;     ///< unique per request; makes the response id
  std::int64_t arrival_unix = 0;  ///< "created"
};

using RouteResult = std::variant<HttpReply, GenerationJob>;

class Router {
 public:
  /// `started_unix` is reported as the models' "created".
  Router(ServerConfig config, std::int64_t started_unix);

  RouteResult route(std::string_view method, std::string_view target, std::string_view body,
                    const RequestContext& context) const;

  const ServerConfig& config() const { return config_; }

 private:
  HttpReply models_reply() const;
  HttpReply tokenize_reply(std::string_view body) const;
  GenerationJob generation_job(Endpoint endpoint, std::string_view body, const RequestContext& context) const;

  ServerConfig config_;
  std::int64_t started_unix_;
};

/// The response id for a request: "cmpl-" / "chatcmpl-" + 32 hex digits from (seed, sequence).
std::string make_response_id(Endpoint endpoint, std::uint64_t seed, std::uint64_t sequence);

}  // namespace llmload::server
