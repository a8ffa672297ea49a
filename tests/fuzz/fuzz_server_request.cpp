// Fuzz target: the mock server's request handling (llmload-server), without sockets.
//
// Input layout: byte 0 method, byte 1 target, byte 2 server configuration (tables below), then
// the request body (when the target slot is "raw", the body's first line is the target).
// Checks:
//  - Router::route never answers 500 (its catch-all for unexpected exceptions), every JSON reply
//    is valid JSON, errors have the OpenAI shape with code == status, 405 carries Allow;
//  - parse_completion_request / parse_chat_request / prompt_texts / message_texts throw only
//    ApiException (anything else escapes and is a crash) and agree with the router;
//  - an accepted request is within the configured limits, and (when short) the stream and
//    body that ResponseEncoder writes for it are accepted by the client's RequestTracker with
//    exactly max_tokens output tokens.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_check.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/server/api_error.hpp"
#include "llmload/server/generation_request.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/response_encoder.hpp"
#include "llmload/server/router.hpp"
#include "tracker_checks.hpp"

namespace {

namespace srv = llmload::server;
using nlohmann::json;

constexpr std::array<std::string_view, 8> kMethods = {"POST", "GET", "PUT", "DELETE", "HEAD", "OPTIONS", "post", ""};
constexpr std::array<std::string_view, 12> kTargets = {"/v1/completions",
                                                       "/v1/chat/completions",
                                                       "/tokenize",
                                                       "/v1/models",
                                                       "/health",
                                                       "/v1/completions?stream=1",
                                                       "/v1/chat/completions?",
                                                       "/",
                                                       "/v1/chat/completions/",
                                                       "*",
                                                       "?",
                                                       ""};  // "": raw (first body line)

srv::ServerConfig make_config(std::uint8_t b) {
  srv::ServerConfig c;
  switch (b % 4) {
    case 0: break;  // defaults: llmload-mock, 8192
    case 1:
      c.models = {"llmload-mock", "m", ""};
      c.max_model_len = 16;
      break;
    case 2: c.max_model_len = 1; break;
    default: c.max_model_len = std::int64_t{1} << 40; break;
  }
  c.latency.seed = b;
  return c;
}

bool served(const std::string& model, const srv::ServerConfig& c) {
  for (const auto& m : c.models) {
    if (m == model) return true;
  }
  return false;
}

void check_error_reply(const srv::HttpReply& reply) {
  FUZZ_CHECK(reply.status >= 400 && reply.status < 600);
  FUZZ_CHECK(reply.content_type == "application/json");
  const json body = json::parse(reply.body, nullptr, false);
  FUZZ_CHECK(!body.is_discarded() && body.is_object());
  const auto e = body.find("error");
  FUZZ_CHECK(e != body.end() && e->is_object());
  FUZZ_CHECK(e->contains("message") && (*e)["message"].is_string());
  FUZZ_CHECK(e->contains("type") && (*e)["type"].is_string());
  FUZZ_CHECK(e->contains("param") && ((*e)["param"].is_null() || (*e)["param"].is_string()));
  FUZZ_CHECK(e->contains("code") && (*e)["code"] == reply.status);
  // What the client makes of it.
  FUZZ_CHECK(!llmload::error_message_from_body(reply.body).empty());
}

void check_request(const srv::GenerationRequest& r, const srv::ServerConfig& c) {
  FUZZ_CHECK(served(r.model, c));
  FUZZ_CHECK(r.prompt_tokens >= 0 && r.prompt_tokens < c.max_model_len);
  FUZZ_CHECK(r.max_tokens >= 1 && r.max_tokens <= c.max_model_len - r.prompt_tokens);
  FUZZ_CHECK(r.min_tokens >= 0 && r.min_tokens <= r.max_tokens);
  if (r.continuous_usage) FUZZ_CHECK(r.include_usage);
  if (r.include_usage) FUZZ_CHECK(r.stream);
}

// Plays the job's response to the client's tracker, as llmload would receive it.
void check_client_accepts(const srv::GenerationJob& job) {
  const srv::GenerationRequest& req = job.request;
  if (req.max_tokens > 48) return;  // keep each input fast
  const srv::ResponseEncoder encoder(job);
  const auto api = req.endpoint == srv::Endpoint::kChat ? llmload::ApiKind::kChat : llmload::ApiKind::kCompletions;
  const llmload::TimePoint start(std::chrono::seconds(1));
  llmload::analysis::RequestRecord record;
  record.requested_input_tokens = req.prompt_tokens;
  record.requested_output_tokens = req.max_tokens;
  llmload::RequestTracker tracker(record, start, api, req.stream);
  tracker.on_sent(start + std::chrono::milliseconds(1));
  llmload::TimePoint t = start + std::chrono::milliseconds(2);
  if (req.stream) {
    tracker.on_headers(t, 200, "text/event-stream");
    for (std::int64_t k = 0; k < req.max_tokens; ++k) {
      std::string events;
      encoder.append_token_events(k, events, srv::Framing::kNone);
      t += std::chrono::milliseconds(1);
      FUZZ_CHECK(tracker.on_body(t, events));
    }
  } else {
    tracker.on_headers(t, 200, "application/json");
    FUZZ_CHECK(tracker.on_body(t, encoder.full_body()));
  }
  tracker.on_complete(t, llmload::TransportError{});
  llmload::fuzz::check_completed_tracker(tracker);
  const auto& rec = tracker.record();
  FUZZ_CHECK(rec.ok());
  if (req.include_usage || !req.stream) {
    FUZZ_CHECK(rec.tokens_from_usage && rec.output_tokens == req.max_tokens && rec.input_tokens == req.prompt_tokens);
  } else {
    FUZZ_CHECK(rec.output_tokens == req.max_tokens);  // one token per event
  }
  if (req.stream) FUZZ_CHECK(rec.output_events == req.max_tokens);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::string_view method = kMethods[data[0] % kMethods.size()];
  std::string_view target = kTargets[data[1] % kTargets.size()];
  const srv::ServerConfig config = make_config(data[2]);
  std::string_view body(reinterpret_cast<const char*>(data) + 3, size - 3);
  if (target.empty()) {
    const std::size_t nl = body.find('\n');
    target = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
  }

  // The router, as the HTTP layer calls it.
  const srv::Router router(config, 1700000000);
  const srv::RequestContext context{size, 1700000001};
  const srv::RouteResult result = router.route(method, target, body, context);
  const std::string_view path = target.substr(0, target.find('?'));
  if (const auto* reply = std::get_if<srv::HttpReply>(&result)) {
    FUZZ_CHECK(reply->status != 500);  // 500: an unexpected exception escaped the validation
    if (reply->status >= 400) {
      check_error_reply(*reply);
      if (reply->status == 405) FUZZ_CHECK(!reply->headers.empty() && reply->headers[0].first == "Allow");
    } else {
      FUZZ_CHECK(reply->status == 200);
      FUZZ_CHECK(path == "/health" || path == "/v1/models" || path == "/tokenize");
      if (!reply->content_type.empty()) {
        const json j = json::parse(reply->body, nullptr, false);
        FUZZ_CHECK(!j.is_discarded() && j.is_object());
      }
    }
  } else {
    const auto& job = std::get<srv::GenerationJob>(result);
    FUZZ_CHECK(method == "POST" && (path == "/v1/completions" || path == "/v1/chat/completions"));
    FUZZ_CHECK(job.id.rfind(job.request.endpoint == srv::Endpoint::kChat ? "chatcmpl-" : "cmpl-", 0) == 0);
    check_request(job.request, config);
    check_client_accepts(job);
  }

  // The validation functions directly: only ApiException may escape them.
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) return 0;
  for (const srv::Endpoint endpoint : {srv::Endpoint::kCompletions, srv::Endpoint::kChat}) {
    try {
      const srv::GenerationRequest r = endpoint == srv::Endpoint::kChat ? srv::parse_chat_request(parsed, config)
                                                                          : srv::parse_completion_request(parsed, config);
      FUZZ_CHECK(r.endpoint == endpoint);
      check_request(r, config);
    } catch (const srv::ApiException& e) {
      FUZZ_CHECK(e.error().status == 400 || e.error().status == 404);
      FUZZ_CHECK(!e.error().message.empty());
    }
  }
  if (parsed.is_object()) {
    if (auto p = parsed.find("prompt"); p != parsed.end()) {
      try {
        (void)srv::count_prompt_tokens(srv::prompt_texts(*p));
      } catch (const srv::ApiException& e) {
        FUZZ_CHECK(e.error().param == "prompt");
      }
    }
    if (auto m = parsed.find("messages"); m != parsed.end()) {
      try {
        (void)srv::count_prompt_tokens(srv::message_texts(*m));
      } catch (const srv::ApiException& e) {
        FUZZ_CHECK(e.error().param == "messages");
      }
    }
  }
  return 0;
}
