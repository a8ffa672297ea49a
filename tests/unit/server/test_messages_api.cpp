// POST /v1/messages: validation (messages_request.hpp), the events and body (messages_encoder.cpp),
// Anthropic's error shape and x-api-key (router.hpp).
#include "llmload/server/messages_request.hpp"

#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "llmload/server/api_error.hpp"
#include "llmload/server/fault.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::messages_api_test {

using nlohmann::json;
using test::job_of;
using test::reply_of;
using test::test_config;
using test::whole_stream;

json body_with(json extra = json::object()) {
  json body = {{"model", "llmload-mock"},
               {"max_tokens", 6},
               {"messages", {{{"role", "user"}, {"content", "hello world"}}}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

GenerationJob job_for(const json& body, std::int64_t reasoning = 0) {
  GenerationJob job;
  job.request = parse_messages_request(body, test_config(reasoning));
  job.id = "msg_abc";
  job.created_unix = 1700000000;
  return job;
}

TEST(MessagesRequest, Fields) {
  const auto req = parse_messages_request(
      body_with({{"system", "be brief"},
                 {"messages",
                  {{{"role", "user"}, {"content", "a b c"}},
                   {{"role", "assistant"},
                    {"content", {{{"type", "thinking"}, {"thinking", "hmm"}, {"signature", "s"}},
                                 {{"type", "text"}, {"text", "d"}}}}},
                   {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "e f"}}}}}}},
                 {"stream", true},
                 {"temperature", 0.2},
                 {"stop_sequences", {"x"}},
                 {"metadata", {{"user_id", "u"}}}}),
      test_config());
  EXPECT_EQ(req.endpoint, Endpoint::kMessages);
  EXPECT_EQ(req.prompt_tokens, 2 + 3 + 1 + 2);  // system + texts; the thinking block is not prompt text
  EXPECT_EQ(req.max_tokens, 6);
  EXPECT_TRUE(req.stream);
  EXPECT_EQ(req.reasoning_tokens, 0);  // no `thinking`: none, whatever --reasoning-tokens says
  // The same conversation as chat: the same output seed.
  const auto chat = parse_chat_request(
      {{"model", "llmload-mock"}, {"messages", {{{"role", "user"}, {"content", "hello world"}}}}, {"max_tokens", 6}},
      test_config());
  EXPECT_EQ(parse_messages_request(body_with(), test_config()).output_seed, chat.output_seed);
}

TEST(MessagesRequest, Thinking) {
  auto tokens = [](json thinking, std::int64_t configured, std::int64_t max_tokens = 600) {
    return parse_messages_request(body_with({{"thinking", thinking}, {"max_tokens", max_tokens}}), test_config(configured))
        .reasoning_tokens;
  };
  EXPECT_EQ(tokens({{"type", "enabled"}, {"budget_tokens", 500}}, 0), 64);
  EXPECT_EQ(tokens({{"type", "enabled"}, {"budget_tokens", 10}}, 0), 10);  // the budget caps it
  EXPECT_EQ(tokens({{"type", "enabled"}, {"budget_tokens", 500}}, 100), 100);
  EXPECT_EQ(tokens({{"type", "adaptive"}}, 100), 100);
  EXPECT_EQ(tokens({{"type", "disabled"}}, 100), 0);
  EXPECT_EQ(tokens(nullptr, 100), 0);
  for (const json& bad : {json{{"type", "enabled"}}, json{{"type", "enabled"}, {"budget_tokens", 600}},
                          json{{"type", "enabled"}, {"budget_tokens", 0}}, json{{"type", "sometimes"}}, json("on")}) {
    EXPECT_THROW((void)tokens(bad, 0), ApiException) << bad.dump();
  }
}

TEST(MessagesRequest, Errors) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json{{"model", "llmload-mock"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, "max_tokens: Field required"},
      {json{{"max_tokens", 3}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, "model: Field required"},
      {json{{"model", "llmload-mock"}, {"max_tokens", 3}}, "messages: Field required"},
      {body_with({{"messages", json::array()}}), "messages: at least one message is required"},
      {body_with({{"messages", {{{"role", "system"}, {"content", "x"}}}}}), "messages.0.role: Input should be 'user' or 'assistant'"},
      {body_with({{"max_tokens", 0}}), "max_tokens: Input should be greater than or equal to 1, got 0"},
      {body_with({{"max_tokens", "6"}}), "max_tokens: Input should be a valid integer"},
      {body_with({{"stream", 1}}), "stream: Input should be a valid boolean"},
  };
  for (const auto& [body, message] : cases) {
    try {
      (void)parse_messages_request(body, test_config());
      ADD_FAILURE() << "accepted " << body.dump();
    } catch (const ApiException& e) {
      EXPECT_EQ(e.error().status, 400);
      EXPECT_EQ(e.error().message, message);
    }
  }
  for (const json& body : {body_with({{"tools", {{{"name", "f"}}}}}),
                           body_with({{"messages", {{{"role", "user"}, {"content", {{{"type", "image"}}}}}}}})}) {
    EXPECT_THROW((void)parse_messages_request(body, test_config()), ApiException) << body.dump();
  }
  try {
    (void)parse_messages_request(body_with({{"model", "claude-nope"}}), test_config());
    ADD_FAILURE();
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().status, 404);
    EXPECT_EQ(e.error().message, "model: claude-nope");
  }
}

TEST(MessagesEncoder, StreamWithoutThinking) {
  RequestOutcome outcome;
  const auto events = whole_stream(job_for(body_with({{"stream", true}, {"max_tokens", 3}})), &outcome);
  std::vector<std::string> names;
  for (const auto& e : events) {
    names.push_back(e.name);
    EXPECT_EQ(e.name, e.data["type"]);
  }
  const std::vector<std::string> expected = {"message_start",       "ping",          "content_block_start",
                                             "content_block_delta", "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "message_delta", "message_stop"};
  EXPECT_EQ(names, expected);
  const json& message = events[0].data["message"];
  EXPECT_EQ(message["id"], "msg_abc");
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["content"], json::array());
  EXPECT_TRUE(message["stop_reason"].is_null());
  EXPECT_EQ(message["usage"]["input_tokens"], 2);
  EXPECT_EQ(events[2].data["content_block"], json({{"type", "text"}, {"text", ""}}));
  EXPECT_EQ(events[3].data["delta"]["type"], "text_delta");
  EXPECT_EQ(events[3].data["index"], 0);
  const json& delta = events[7].data;
  EXPECT_EQ(delta["delta"], json({{"stop_reason", "max_tokens"}, {"stop_sequence", nullptr}}));
  EXPECT_EQ(delta["usage"]["output_tokens"], 3);
  EXPECT_FALSE(delta["usage"].contains("output_tokens_details"));
  EXPECT_TRUE(delta.contains("llmload"));
}

TEST(MessagesEncoder, StreamWithThinking) {
  const auto events = whole_stream(
      job_for(body_with({{"stream", true}, {"max_tokens", 5}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 2}}}})));
  ASSERT_EQ(events.size(), 2u + 1 + 2 + 2 + 1 + 3 + 1 + 2);
  EXPECT_EQ(events[2].data["content_block"], json({{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}));
  EXPECT_EQ(events[3].data["delta"]["type"], "thinking_delta");
  EXPECT_EQ(events[4].data["delta"]["type"], "thinking_delta");
  EXPECT_EQ(events[5].data["delta"]["type"], "signature_delta");
  EXPECT_FALSE(events[5].data["delta"]["signature"].get<std::string>().empty());
  EXPECT_EQ(events[6].data, json({{"type", "content_block_stop"}, {"index", 0}}));
  EXPECT_EQ(events[7].data["index"], 1);
  EXPECT_EQ(events[7].data["content_block"]["type"], "text");
  EXPECT_EQ(events[8].data["delta"]["type"], "text_delta");
  EXPECT_EQ(events[11].data, json({{"type", "content_block_stop"}, {"index", 1}}));
  EXPECT_EQ(events[12].data["usage"]["output_tokens"], 5);
  EXPECT_EQ(events[12].data["usage"]["output_tokens_details"], json({{"thinking_tokens", 2}}));
}

TEST(MessagesEncoder, BodyStopReasonAndCache) {
  const GenerationJob answered = job_for(body_with({{"messages", {{{"role", "user"}, {"content", "What is 2 + 3?"}}}},
                                                    {"max_tokens", 64},
                                                    {"thinking", {{"type", "enabled"}, {"budget_tokens", 3}}}}));
  RequestOutcome outcome;
  outcome.cached_tokens = 2;
  const json body = json::parse(ResponseEncoder(answered).full_body(outcome));
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["stop_reason"], "end_turn");
  ASSERT_EQ(body["content"].size(), 2u);
  EXPECT_EQ(body["content"][0]["type"], "thinking");
  EXPECT_EQ(body["content"][1]["type"], "text");
  EXPECT_NE(body["content"][1]["text"].get<std::string>().find("5"), std::string::npos);
  EXPECT_EQ(body["usage"]["input_tokens"], answered.request.prompt_tokens - 2);
  EXPECT_EQ(body["usage"]["cache_read_input_tokens"], 2);
  EXPECT_EQ(body["usage"]["output_tokens_details"]["thinking_tokens"], 3);

  std::string sse;
  ResponseEncoder(answered).append_error_event(sse, ApiError{529, "Overloaded", std::nullopt}, Framing::kNone);
  const auto events = test::parse_events(sse);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "error");
  EXPECT_EQ(events[0].data, json({{"type", "error"}, {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}}));
}

TEST(MessagesRouter, ErrorsAreAnthropicShaped) {
  const Router router(test_config(), 1700000000);
  const auto job = job_of(router.route("POST", "/v1/messages", body_with().dump(), RequestContext{3, 1}));
  EXPECT_EQ(job.id.rfind("msg_", 0), 0u);
  const HttpReply missing = reply_of(router.route("POST", "/v1/messages", R"({"model":"llmload-mock"})", RequestContext{4, 1}));
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(json::parse(missing.body),
            json({{"type", "error"}, {"error", {{"type", "invalid_request_error"}, {"message", "max_tokens: Field required"}}}}));
  EXPECT_EQ(json::parse(reply_of(router.route("POST", "/v1/messages", "{oops", RequestContext{5, 1})).body)["type"], "error");
  const HttpReply method = reply_of(router.route("GET", "/v1/messages", "", RequestContext{6, 1}));
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(json::parse(method.body)["error"]["type"], "invalid_request_error");
  const HttpReply model = reply_of(router.route("POST", "/v1/messages", body_with({{"model", "x"}}).dump(), RequestContext{7, 1}));
  EXPECT_EQ(model.status, 404);
  EXPECT_EQ(json::parse(model.body)["error"]["type"], "not_found_error");
  EXPECT_EQ(error_reply_for(Endpoint::kMessages, ApiError{529, "busy", std::nullopt}).body,
            R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})");
}

TEST(MessagesRouter, ApiKeyByXApiKeyOrBearer) {
  ServerConfig config = test_config();
  config.api_key = "secret";
  const Router router(config, 1700000000);
  const std::string body = body_with().dump();
  const HttpReply none = reply_of(router.route("POST", "/v1/messages", body, RequestContext{1, 1}));
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(json::parse(none.body)["error"]["type"], "authentication_error");
  const HttpReply wrong =
      reply_of(router.route("POST", "/v1/messages", body, RequestContext{2, 1, std::nullopt, std::string_view("nope")}));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body.find("nope"), std::string::npos);
  (void)job_of(router.route("POST", "/v1/messages", body, RequestContext{3, 1, std::nullopt, std::string_view("secret")}));
  (void)job_of(router.route("POST", "/v1/messages", body, RequestContext{4, 1, std::string_view("Bearer secret")}));
  // x-api-key works on the OpenAI routes too; their 401 keeps the OpenAI shape.
  (void)job_of(router.route("POST", "/v1/responses", R"({"model":"llmload-mock","input":"x"})",
                            RequestContext{5, 1, std::nullopt, std::string_view("secret")}));
  const HttpReply openai = reply_of(router.route("POST", "/v1/responses", R"({"model":"llmload-mock","input":"x"})",
                                                 RequestContext{6, 1}));
  EXPECT_EQ(openai.status, 401);
  EXPECT_EQ(json::parse(openai.body)["error"]["type"], "AuthenticationError");
}

}  // namespace llmload::server::messages_api_test

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::messages_api_test {

TEST(StreamErrorFault, ParsesAndFormats) {
  const Fault f = parse_fault_spec("stream-error=529@3");
  EXPECT_EQ(f.kind, FaultKind::kStreamError);
  EXPECT_EQ(f.status, 529);
  EXPECT_EQ(f.at_token, 3);
  EXPECT_EQ(format_fault_spec(f), "stream-error=529@3");
  EXPECT_EQ(format_fault_spec(parse_fault_spec("STREAM-ERROR")), "stream-error=500@0");
  EXPECT_THROW((void)parse_fault_spec("stream-error=99"), FaultSpecError);
  EXPECT_THROW((void)parse_fault_spec("stream-error=2s"), FaultSpecError);
  EXPECT_EQ(parse_fault_rule("0.5:stream-error@2").fault.kind, FaultKind::kStreamError);
}

}  // namespace llmload::server::messages_api_test
