#include "llmload/server/router.hpp"

#include <optional>
#include <string>
#include <utility>

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
  ASSERT_EQ(m.at("permission").size(), 1u) << "vLLM's one ModelPermission entry";
  const json& perm = m["permission"][0];
  EXPECT_EQ(perm.at("id").get<std::string>().rfind("modelperm-", 0), 0u);
  EXPECT_EQ(perm.at("object"), "model_permission");
  EXPECT_EQ(perm.at("created"), 1600000000);
  EXPECT_EQ(perm.at("allow_sampling"), true);
  EXPECT_EQ(perm.at("allow_create_engine"), false);
  EXPECT_EQ(perm.at("organization"), "*");
  EXPECT_TRUE(perm.at("group").is_null());
  EXPECT_EQ(perm.at("is_blocking"), false);
  EXPECT_EQ(body["data"][1].at("id"), "m2");
  EXPECT_NE(body["data"][1]["permission"][0].at("id"), perm.at("id"));
  EXPECT_EQ(route(make_router(), "GET", "/v1/models").body, reply.body) << "reproducible";
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
  EXPECT_TRUE(body.at("token_strs").is_null()) << "vLLM sends null when not asked";

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
  EXPECT_EQ(expect_error(route(r, "POST", "/tokenize", R"({"prompt":"a","return_token_strs":"yes"})"), 400,
                         "BadRequestError")
                .at("param"),
            "return_token_strs");
  expect_error(route(r, "POST", "/tokenize", R"({"prompt":"a","add_special_tokens":1})"), 400, "BadRequestError");
}

TEST(Router, TokenizeAcceptsVllmFlags) {
  const HttpReply reply = route(make_router(), "POST", "/tokenize",
                                R"({"prompt":"a b","add_special_tokens":true,"return_token_strs":false})");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(json::parse(reply.body).at("count"), 2);
  const HttpReply chat = route(make_router(), "POST", "/tokenize",
                               R"({"messages":[{"role":"user","content":"x"}],"add_generation_prompt":true,
                                   "continue_final_message":false})");
  EXPECT_EQ(chat.status, 200) << chat.body;
}

TEST(Router, DetokenizeOfTokenizeGivesBackTheWords) {
  const Router r = make_router();
  const std::string text = "  Hello,  brave\tnew\nworld of the <|5|> future ";
  const HttpReply tok = route(r, "POST", "/tokenize", json{{"prompt", text}}.dump());
  ASSERT_EQ(tok.status, 200) << tok.body;
  const json ids = json::parse(tok.body).at("tokens");
  const HttpReply detok = route(r, "POST", "/detokenize", json{{"model", "m1"}, {"tokens", ids}}.dump());
  ASSERT_EQ(detok.status, 200) << detok.body;
  EXPECT_EQ(detok.content_type, "application/json");
  EXPECT_EQ(json::parse(detok.body), json::parse(R"({"prompt":"Hello, brave new world of the a future"})"))
      << "words come back joined by single spaces; <|5|> is id 5, the generator word \"a\"";

  // Ids this process never tokenized come back as escapes that tokenize to the same ids.
  const Router fresh = make_router();
  const HttpReply unknown = route(fresh, "POST", "/detokenize", json{{"tokens", ids}}.dump());
  ASSERT_EQ(unknown.status, 200);
  const std::string spelled = json::parse(unknown.body).at("prompt");
  EXPECT_NE(spelled.find("<|"), std::string::npos);
  const HttpReply again = route(fresh, "POST", "/tokenize", json{{"prompt", spelled}}.dump());
  EXPECT_EQ(json::parse(again.body).at("tokens"), ids);
}

TEST(Router, TokenizeIdsAreTheGenerationRequestIds) {
  const Router r = make_router();
  const std::string prompt = "one two the three";
  const json ids = json::parse(route(r, "POST", "/tokenize", json{{"prompt", prompt}}.dump()).body).at("tokens");
  const RouteResult job = r.route("POST", "/v1/completions", json{{"model", "m1"}, {"prompt", prompt}, {"max_tokens", 1}}.dump(),
                                  RequestContext{1, 1});
  ASSERT_TRUE(std::holds_alternative<GenerationJob>(job));
  EXPECT_EQ(json(std::get<GenerationJob>(job).request.prompt_token_ids), ids);
  const RouteResult gen =
      r.route("POST", "/generate", json{{"text", prompt}, {"sampling_params", {{"max_new_tokens", 1}}}}.dump(),
              RequestContext{2, 1});
  ASSERT_TRUE(std::holds_alternative<GenerationJob>(gen));
  EXPECT_EQ(json(std::get<GenerationJob>(gen).request.prompt_token_ids), ids);
}

TEST(Router, DetokenizeErrors) {
  const Router r = make_router();
  EXPECT_EQ(expect_error(route(r, "POST", "/detokenize", R"({})"), 400, "BadRequestError").at("param"), "tokens");
  EXPECT_EQ(expect_error(route(r, "POST", "/detokenize", R"({"tokens":"1 2"})"), 400, "BadRequestError").at("param"),
            "tokens");
  expect_error(route(r, "POST", "/detokenize", R"({"tokens":[1,-1]})"), 400, "BadRequestError");
  expect_error(route(r, "POST", "/detokenize", R"({"tokens":[2147483648]})"), 400, "BadRequestError");
  expect_error(route(r, "POST", "/detokenize", R"({"model":"nope","tokens":[1]})"), 404, "NotFoundError");
  expect_error(route(r, "GET", "/detokenize"), 405, "MethodNotAllowedError");
  EXPECT_EQ(json::parse(route(r, "POST", "/detokenize", R"({"tokens":[]})").body), json::parse(R"({"prompt":""})"));
}

// ---- SGLang /generate ---------------------------------------------------------------------------

TEST(Router, GenerateBecomesAJobWithTheRidAsId) {
  const Router r = make_router();
  const RouteResult res = r.route("POST", "/generate",
                                  R"({"text":"a b c","rid":"my-rid","stream":true,"sampling_params":{"max_new_tokens":5}})",
                                  RequestContext{7, 1700000123});
  const auto* job = std::get_if<GenerationJob>(&res);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->request.endpoint, Endpoint::kGenerate);
  EXPECT_EQ(job->id, "my-rid");
  EXPECT_EQ(job->request.model, "m1");
  EXPECT_EQ(job->request.max_tokens, 5);
  EXPECT_TRUE(job->request.stream);
  EXPECT_EQ(job->created_unix, 1700000123);

  const RouteResult anon = r.route("POST", "/generate", R"({"input_ids":[1,2],"sampling_params":{"max_new_tokens":2}})",
                                   RequestContext{8, 1});
  ASSERT_TRUE(std::holds_alternative<GenerationJob>(anon));
  const std::string& id = std::get<GenerationJob>(anon).id;
  EXPECT_EQ(id, make_response_id(Endpoint::kGenerate, 0, 8));
  EXPECT_EQ(id.size(), 32u) << "a bare hex id, like SGLang's uuid hex";
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Router, GenerateErrorsUseSglangShape) {
  const Router r = make_router();
  for (const char* body : {"not json", R"({})", R"({"text":"a","sampling_params":{"max_new_tokens":0}})",
                           R"({"text":"1 2 3","sampling_params":{"max_new_tokens":200}})"}) {
    SCOPED_TRACE(body);
    const HttpReply reply = route(r, "POST", "/generate", body);
    EXPECT_EQ(reply.status, 400);
    EXPECT_EQ(reply.content_type, "application/json");
    const json j = json::parse(reply.body);
    ASSERT_TRUE(j.at("error").at("message").is_string());
    EXPECT_EQ(j.at("error").size(), 1u) << "SGLang's {\"error\":{\"message\":...}}: " << reply.body;
  }
  const json too_long = json::parse(route(r, "POST", "/generate",
                                          R"({"text":"1 2 3","sampling_params":{"max_new_tokens":200}})").body);
  EXPECT_EQ(too_long["error"]["message"],
            "'max_tokens' or 'max_completion_tokens' is too large: 200. This model's maximum context length is 128 "
            "tokens and your request has 3 input tokens (200 > 128 - 3).");
  expect_error(route(r, "GET", "/generate"), 405, "MethodNotAllowedError");
}

// ---- API key ------------------------------------------------------------------------------------

Router make_keyed_router() {
  ServerConfig c;
  c.models = {"m1"};
  c.max_model_len = 128;
  c.api_key = "s3cret-key";
  return Router(c, 1600000000);
}

HttpReply route_auth(const Router& router, std::string_view method, std::string_view target, std::string_view body,
                     std::optional<std::string_view> authorization) {
  return reply_of(router.route(method, target, body, RequestContext{1, 1700000000, authorization}));
}

TEST(RouterAuth, GuardedPathsNeedTheBearerKey) {
  const Router r = make_keyed_router();
  const std::string cmpl = R"({"model":"m1","prompt":"a","max_tokens":1})";
  struct Case {
    const char* method;
    const char* target;
    std::string body;
  };
  const Case guarded[] = {{"GET", "/v1/models", ""},
                          {"POST", "/v1/completions", cmpl},
                          {"POST", "/v1/chat/completions", "{}"},
                          {"POST", "/generate", R"({"text":"a"})"},
                          {"GET", "/v1/unknown", ""},
                          {"DELETE", "/v1/models", ""}};
  for (const auto& c : guarded) {
    SCOPED_TRACE(c.target);
    for (std::optional<std::string_view> auth :
         {std::optional<std::string_view>(), std::optional<std::string_view>("Bearer wrong"),
          std::optional<std::string_view>("s3cret-key"), std::optional<std::string_view>("Basic s3cret-key"),
          std::optional<std::string_view>("Bearer s3cret-key-and-more"), std::optional<std::string_view>("Bearer "),
          std::optional<std::string_view>("")}) {
      const HttpReply reply = route_auth(r, c.method, c.target, c.body, auth);
      const json e = expect_error(reply, 401, "AuthenticationError");
      EXPECT_TRUE(e.at("param").is_null());
      const std::string message = e.at("message");
      EXPECT_NE(message.find(auth ? "Incorrect API key" : "Missing API key"), std::string::npos) << message;
      EXPECT_EQ(reply.body.find("s3cret"), std::string::npos) << "never echoes a key";
      EXPECT_EQ(reply.body.find("wrong"), std::string::npos) << "never echoes what was sent";
      ASSERT_EQ(reply.headers.size(), 1u);
      EXPECT_EQ(reply.headers[0], (std::pair<std::string, std::string>{"WWW-Authenticate", "Bearer"}));
    }
  }
}

TEST(RouterAuth, TheRightKeyPasses) {
  const Router r = make_keyed_router();
  for (std::string_view auth : {"Bearer s3cret-key", "bearer s3cret-key", "BEARER   s3cret-key ", " Bearer s3cret-key"}) {
    SCOPED_TRACE(auth);
    EXPECT_EQ(route_auth(r, "GET", "/v1/models", "", auth).status, 200);
    const RouteResult job = r.route("POST", "/v1/completions", R"({"model":"m1","prompt":"a","max_tokens":1})",
                                    RequestContext{1, 1, auth});
    EXPECT_TRUE(std::holds_alternative<GenerationJob>(job));
    EXPECT_TRUE(std::holds_alternative<GenerationJob>(
        r.route("POST", "/generate", R"({"text":"a","sampling_params":{"max_new_tokens":1}})", RequestContext{1, 1, auth})));
  }
  // With the key, the usual errors come back (after auth).
  expect_error(route_auth(r, "GET", "/v1/unknown", "", "Bearer s3cret-key"), 404, "NotFoundError");
}

TEST(RouterAuth, OpenPathsStayOpen) {
  const Router r = make_keyed_router();
  EXPECT_EQ(route_auth(r, "GET", "/health", "", std::nullopt).status, 200);
  EXPECT_EQ(route_auth(r, "POST", "/tokenize", R"({"prompt":"a"})", std::nullopt).status, 200);
  EXPECT_EQ(route_auth(r, "POST", "/detokenize", R"({"tokens":[1]})", std::nullopt).status, 200);
  // Not a /v1 path: a 404, not a 401 (e.g. /metrics when the HTTP layer does not serve it).
  expect_error(route_auth(r, "GET", "/nothing", "", std::nullopt), 404, "NotFoundError");
  // CORS preflight is never challenged (vLLM's middleware lets OPTIONS through).
  expect_error(route_auth(r, "OPTIONS", "/v1/models", "", std::nullopt), 405, "MethodNotAllowedError");
}

TEST(RouterAuth, NoKeyConfiguredMeansNoAuth) {
  EXPECT_EQ(route(make_router(), "GET", "/v1/models").status, 200);
  EXPECT_EQ(route_auth(make_router(), "GET", "/v1/models", "", "Bearer anything").status, 200);
}

TEST(RouterAuth, AuthorizationMatches) {
  EXPECT_TRUE(authorization_matches("Bearer k", "k"));
  EXPECT_FALSE(authorization_matches(std::nullopt, "k"));
  EXPECT_FALSE(authorization_matches("Bearer", "k"));
  EXPECT_FALSE(authorization_matches("Bearer kk", "k"));
  EXPECT_FALSE(authorization_matches("Bearer ", "k"));
  EXPECT_FALSE(authorization_matches("Bearerk k", "k"));
  EXPECT_FALSE(authorization_matches("Token k", "k"));
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
    for (const char* target : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize", "/generate"}) {
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
  EXPECT_EQ(error_type_for_status(401), "AuthenticationError");
  EXPECT_EQ(error_type_for_status(405), "MethodNotAllowedError");
  EXPECT_EQ(error_type_for_status(408), "RequestTimeoutError");
  EXPECT_EQ(error_type_for_status(413), "RequestEntityTooLargeError");
  EXPECT_EQ(error_type_for_status(429), "RateLimitError");
  EXPECT_EQ(error_type_for_status(500), "InternalServerError");
  EXPECT_EQ(error_type_for_status(503), "InternalServerError");
  EXPECT_EQ(json::parse(sglang_error_body(ApiError{400, "bad \xff", "text"})).at("error").size(), 1u);
  // Invalid UTF-8 in a message (e.g. echoed client bytes) still gives valid JSON.
  EXPECT_TRUE(json::accept(error_body(ApiError{400, "bad \xff\xfe bytes", std::nullopt})));
}

}  // namespace
}  // namespace llmload::server
