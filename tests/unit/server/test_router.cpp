#include "llmload/server/router.hpp"

#include <string>

#include <gtest/gtest.h>

#include "llmload/server/json.hpp"
#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/rng.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

Router make_router() {
  ServerConfig c;
  c.models = {"m1", "m2"};
  c.max_model_len = 128;
  return Router(c, 1600000000);
}

HttpReply reply_of(const RouteResult& r) {
  const auto* reply = std::get_if<HttpReply>(&r);
  EXPECT_NE(reply, nullptr) << "expected an immediate reply";
  return reply != nullptr ? *reply : HttpReply{};
}

HttpReply route(const Router& router, std::string_view method, std::string_view target, std::string_view body = "") {
  return reply_of(router.route(method, target, body, RequestContext{1, 1700000000}));
}

/// Checks the OpenAI error shape and returns the inner object.
json expect_error(const HttpReply& reply, int status, const std::string& type) {
  EXPECT_EQ(reply.status, status);
  EXPECT_EQ(reply.content_type, "application/json");
  const json body = json::parse(reply.body);
  const json& e = body.at("error");
  EXPECT_EQ(e.at("type"), type);
  EXPECT_EQ(e.at("code"), status);
  EXPECT_TRUE(e.at("message").is_string());
  EXPECT_TRUE(e.contains("param"));
  return e;
}

TEST(Router, HealthIsEmpty200AndIgnoresTheQuery) {
  const Router r = make_router();
  for (const char* target : {"/health", "/health?probe=1"}) {
    const HttpReply reply = route(r, "GET", target);
    EXPECT_EQ(reply.status, 200);
    EXPECT_TRUE(reply.body.empty());
  }
}

TEST(Router, ModelsListsEveryServedModel) {
  const HttpReply reply = route(make_router(), "GET", "/v1/models");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, "application/json");
  const json body = json::parse(reply.body);
  EXPECT_EQ(body.at("object"), "list");
  ASSERT_EQ(body.at("data").size(), 2u);
  const json& m = body["data"][0];
  EXPECT_EQ(m.at("id"), "m1");
  EXPECT_EQ(m.at("object"), "model");
  EXPECT_EQ(m.at("created"), 1600000000);
  EXPECT_EQ(m.at("owned_by"), "llmload");
  EXPECT_EQ(m.at("root"), "m1");
  EXPECT_TRUE(m.at("parent").is_null());
  EXPECT_EQ(m.at("max_model_len"), 128);
  EXPECT_EQ(m.at("permission"), json::array());
  EXPECT_EQ(body["data"][1].at("id"), "m2");
}

TEST(Router, UnknownPathIs404) {
  const json e = expect_error(route(make_router(), "GET", "/v2/nothing"), 404, "NotFoundError");
  EXPECT_TRUE(e.at("param").is_null());
}

TEST(Router, WrongMethodIs405WithAllow) {
  const HttpReply reply = route(make_router(), "GET", "/v1/completions");
  expect_error(reply, 405, "MethodNotAllowedError");
  ASSERT_EQ(reply.headers.size(), 1u);
  EXPECT_EQ(reply.headers[0].first, "Allow");
  EXPECT_EQ(reply.headers[0].second, "POST");
  expect_error(route(make_router(), "POST", "/v1/models"), 405, "MethodNotAllowedError");
  expect_error(route(make_router(), "DELETE", "/health"), 405, "MethodNotAllowedError");
}

TEST(Router, BadJsonIs400) {
  for (const char* body : {"", "{", "{\"model\":", "not json", "{\"a\":1}}"}) {
    SCOPED_TRACE(body);
    const json e = expect_error(route(make_router(), "POST", "/v1/completions", body), 400, "BadRequestError");
    EXPECT_TRUE(e.at("param").is_null());
  }
}

TEST(Router, ValidationErrorsKeepTheirParam) {
  const json e = expect_error(
      route(make_router(), "POST", "/v1/chat/completions", R"({"model":"m1","messages":[],"max_tokens":1})"), 400,
      "BadRequestError");
  EXPECT_EQ(e.at("param"), "messages");
  const json nf = expect_error(route(make_router(), "POST", "/v1/completions", R"({"model":"zz","prompt":"a"})"), 404,
                               "NotFoundError");
  EXPECT_EQ(nf.at("message"), "The model `zz` does not exist.");
}

TEST(Router, GenerationRequestsBecomeJobs) {
  const Router r = make_router();
  const RouteResult res = r.route("POST", "/v1/chat/completions",
                                  R"({"model":"m2","messages":[{"role":"user","content":"a b"}],"max_tokens":3})",
                                  RequestContext{7, 1700000123});
  const auto* job = std::get_if<GenerationJob>(&res);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->request.endpoint, Endpoint::kChat);
  EXPECT_EQ(job->request.model, "m2");
  EXPECT_EQ(job->request.prompt_tokens, 2);
  EXPECT_EQ(job->created_unix, 1700000123);
  EXPECT_EQ(job->id, make_response_id(Endpoint::kChat, 0, 7));

  const RouteResult cmpl =
      r.route("POST", "/v1/completions", R"({"model":"m1","prompt":"x","max_tokens":2})", RequestContext{8, 1});
  ASSERT_TRUE(std::holds_alternative<GenerationJob>(cmpl));
  EXPECT_EQ(std::get<GenerationJob>(cmpl).request.endpoint, Endpoint::kCompletions);
}

TEST(Router, ResponseIdsAreUniqueAndShaped) {
  const std::string a = make_response_id(Endpoint::kCompletions, 0, 1);
  const std::string b = make_response_id(Endpoint::kCompletions, 0, 2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 5u + 32u);
  EXPECT_EQ(make_response_id(Endpoint::kChat, 3, 1).rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a, make_response_id(Endpoint::kCompletions, 0, 1));
}

TEST(Router, TokenizePromptAndMessages) {
  const Router r = make_router();
  HttpReply reply = route(r, "POST", "/tokenize", R"({"prompt":"hello big world"})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  json body = json::parse(reply.body);
  EXPECT_EQ(body.at("count"), 3);
  EXPECT_EQ(body.at("max_model_len"), 128);
  EXPECT_EQ(body.at("tokens"), json::array({token_id("hello"), token_id("big"), token_id("world")}));
  EXPECT_FALSE(body.contains("token_strs"));

  reply = route(r, "POST", "/tokenize",
                R"({"model":"m1","return_token_strs":true,"messages":[{"role":"system","content":"a b"},
                    {"role":"user","content":[{"type":"text","text":"c"}]}]})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  body = json::parse(reply.body);
  EXPECT_EQ(body.at("count"), 3);
  EXPECT_EQ(body.at("token_strs"), json::array({"a", "b", "c"}));
}

TEST(Router, TokenizeErrors) {
  const Router r = make_router();
  EXPECT_EQ(expect_error(route(r, "POST", "/tokenize", R"({})"), 400, "BadRequestError").at("param"), "prompt");
  expect_error(route(r, "POST", "/tokenize", R"({"model":"nope","prompt":"a"})"), 404, "NotFoundError");
  expect_error(route(r, "POST", "/tokenize", R"({"prompt":7})"), 400, "BadRequestError");
  expect_error(route(r, "POST", "/tokenize", R"([])"), 400, "BadRequestError");
}

TEST(Router, NeverThrowsOnGarbage) {
  const Router r = make_router();
  Rng rng(99);
  std::string alphabet = "{}[]\":,0123456789.eE-+ truefalsnul\\uabc";
  alphabet += '\xff';
  alphabet += '\0';
  for (int i = 0; i < 3000; ++i) {
    std::string body;
    const auto len = rng.next_u64() % 40;
    for (std::uint64_t j = 0; j < len; ++j) body += alphabet[rng.next_u64() % alphabet.size()];
    for (const char* target : {"/v1/completions", "/v1/chat/completions", "/tokenize"}) {
      const RouteResult res = r.route("POST", target, body, RequestContext{});
      if (const auto* reply = std::get_if<HttpReply>(&res)) {
        EXPECT_TRUE(json::accept(reply->body)) << reply->body;
        EXPECT_GE(reply->status, 400);
        EXPECT_LT(reply->status, 500) << reply->body;
      }
    }
  }
  // Deep nesting must not overflow the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(route(r, "POST", "/v1/completions", deep).status, 400);
  const std::string deep_prompt = R"({"model":"m1","prompt":)" + deep + "}";
  EXPECT_EQ(route(r, "POST", "/v1/completions", deep_prompt).status, 400);
}

TEST(ApiError, BodyShapeAndTypes) {
  const json body = json::parse(error_body(ApiError{413, "too big", std::nullopt}));
  EXPECT_EQ(body, json::parse(
                      R"({"error":{"message":"too big","type":"RequestEntityTooLargeError","param":null,"code":413}})"));
  EXPECT_EQ(json::parse(error_body(ApiError{400, "x", "max_tokens"}))["error"]["param"], "max_tokens");
  EXPECT_EQ(error_type_for_status(400), "BadRequestError");
  EXPECT_EQ(error_type_for_status(404), "NotFoundError");
  EXPECT_EQ(error_type_for_status(431), "RequestHeaderFieldsTooLargeError");
  EXPECT_EQ(error_type_for_status(500), "InternalServerError");
  EXPECT_EQ(error_type_for_status(503), "InternalServerError");
  // Invalid UTF-8 in a message (e.g. echoed client bytes) still gives valid JSON.
  EXPECT_TRUE(json::accept(error_body(ApiError{400, "bad \xff\xfe bytes", std::nullopt})));
}

}  // namespace
}  // namespace llmload::server
