// POST /v1/responses: validation (responses_request.hpp), the store of recent responses
// (response_store.hpp) and the events and body (responses_encoder.cpp).
#include "llmload/server/responses_request.hpp"

#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "llmload/server/api_error.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::responses_api_test {

using nlohmann::json;
using test::job_of;
using test::reply_of;
using test::test_config;
using test::whole_stream;

GenerationRequest parse(const json& body, std::int64_t reasoning = 0, const ResponseStore& store = ResponseStore()) {
  return parse_responses_request(body, test_config(reasoning), store);
}

ApiError parse_error(const json& body, const ResponseStore& store = ResponseStore()) {
  try {
    (void)parse(body, 0, store);
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "accepted " << body.dump();
  return {};
}

GenerationJob job_for(const json& body, std::int64_t reasoning) {
  GenerationJob job;
  job.request = parse(body, reasoning);
  job.id = "resp_abc";
  job.created_unix = 1700000000;
  job.seed = 7;
  return job;
}

TEST(ResponsesRequest, StringInputIsOneUserTurn) {
  const auto req = parse({{"model", "llmload-mock"}, {"input", "hello there world"}, {"max_output_tokens", 5}});
  EXPECT_EQ(req.endpoint, Endpoint::kResponses);
  EXPECT_EQ(req.prompt_tokens, 3);
  EXPECT_EQ(req.max_tokens, 5);
  EXPECT_FALSE(req.stream);
  ASSERT_TRUE(req.responses);
  EXPECT_TRUE(req.responses->store);
  ASSERT_EQ(req.responses->input.size(), 1u);
  EXPECT_EQ(req.responses->input[0].role, "user");
  // The same conversation as chat: the same prompt ids and the same output seed.
  const auto chat = parse_chat_request(
      {{"model", "llmload-mock"}, {"messages", {{{"role", "user"}, {"content", "hello there world"}}}}, {"max_tokens", 5}},
      test_config());
  EXPECT_EQ(req.prompt_token_ids, chat.prompt_token_ids);
  EXPECT_EQ(req.output_seed, chat.output_seed);
}

TEST(ResponsesRequest, MessageItemsInstructionsAndDefaults) {
  const json body = {{"model", "llmload-mock"},
                     {"instructions", "be brief"},
                     {"input",
                      {{{"role", "user"}, {"content", "a b"}},
                       {{"type", "message"}, {"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "c"}}}}},
                       {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array()}},
                       {{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "d e f"}}}}}}},
                     {"stream", true},
                     {"store", false},
                     {"temperature", 0.5}};
  const auto req = parse(body);
  EXPECT_EQ(req.prompt_tokens, 2 + 2 + 1 + 3);  // instructions + the three texts
  EXPECT_EQ(req.max_tokens, 4096 - 8);          // the room the context leaves, as chat
  EXPECT_TRUE(req.stream);
  EXPECT_FALSE(req.responses->store);
  EXPECT_EQ(req.responses->instructions, "be brief");
  EXPECT_EQ(req.responses->temperature, 0.5);
  EXPECT_EQ(req.responses->input.size(), 3u);  // the reasoning item is skipped
}

TEST(ResponsesRequest, Reasoning) {
  const json base = {{"model", "llmload-mock"}, {"input", "x"}, {"max_output_tokens", 600}};
  EXPECT_EQ(parse(base, 0).reasoning_tokens, 0);
  EXPECT_EQ(parse(base, 10).reasoning_tokens, 10);
  json high = base;
  high["reasoning"] = {{"effort", "high"}, {"summary", "auto"}};
  const auto req = parse(high, 10);
  EXPECT_EQ(req.reasoning_tokens, 20);
  EXPECT_EQ(req.responses->effort, "high");
  EXPECT_EQ(req.responses->summary, "auto");
  EXPECT_EQ(parse(high, 0).reasoning_tokens, 256);
  json empty = base;
  empty["reasoning"] = json::object();
  EXPECT_EQ(parse(empty, 0).reasoning_tokens, 64);  // effort unset: medium
  json none = base;
  none["reasoning"] = {{"effort", "none"}};
  EXPECT_EQ(parse(none, 10).reasoning_tokens, 0);
}

TEST(ResponsesRequest, Errors) {
  struct Case {
    json body;
    int status;
    std::string param;
  };
  const json ok = {{"model", "llmload-mock"}, {"input", "x"}};
  auto with = [&](const char* key, json value) {
    json b = ok;
    b[key] = std::move(value);
    return b;
  };
  json no_input = ok;
  no_input.erase("input");
  json no_model = ok;
  no_model.erase("model");
  const std::vector<Case> cases = {
      {no_input, 400, "input"},
      {no_model, 400, "model"},
      {with("input", 3), 400, "input"},
      {with("input", json::array({{{"role", "tool"}, {"content", "x"}}})), 400, "input"},
      {with("input", json::array({{{"type", "computer_call"}, {"call_id", "c"}}})), 400, "input"},
      {with("input", json::array({{{"type", "function_call_output"}, {"output", "o"}}})), 400, "input"},  // no call_id
      {with("input", json::array({{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "u"}}}}}})), 400,
       "input"},
      {with("max_output_tokens", 0), 400, "max_output_tokens"},
      {with("max_output_tokens", "5"), 400, "max_output_tokens"},
      {with("max_output_tokens", 5000), 400, "max_output_tokens"},
      {with("tools", json::array({{{"type", "web_search"}}})), 400, "tools"},  // function tools only
      {with("tools", json::array({{{"type", "function"}}})), 400, "tools"},    // no name
      {with("text", {{"format", {{"type", "json_schema"}}}}), 400, "text"},
      {with("background", true), 400, "background"},
      {with("reasoning", {{"effort", "max"}}), 400, "reasoning.effort"},
      {with("stream", "yes"), 400, "stream"},
      {with("model", "other"), 404, "model"},
      {with("previous_response_id", "resp_unknown"), 400, "previous_response_id"},
  };
  for (const auto& c : cases) {
    const ApiError e = parse_error(c.body);
    EXPECT_EQ(e.status, c.status) << c.body.dump() << ": " << e.message;
    EXPECT_EQ(e.param.value_or(""), c.param) << c.body.dump() << ": " << e.message;
  }
  EXPECT_EQ(parse_error(with("previous_response_id", "resp_unknown")).message,
            "Previous response with id 'resp_unknown' not found.");
}

TEST(ResponseStore, RemembersAndForgetsTheOldestFirst) {
  ResponseStore store(2);
  auto conv = [](std::string text) {
    auto c = std::make_shared<StoredConversation>();
    c->turns.push_back({"user", std::move(text)});
    return c;
  };
  store.put("a", conv("1"));
  store.put("b", conv("2"));
  store.put("c", conv("3"));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.get("a"), nullptr);
  ASSERT_NE(store.get("b"), nullptr);
  EXPECT_EQ(store.get("c")->turns[0].text, "3");
}

TEST(ResponseStore, FollowUpsChainTheirTurns) {
  ResponseStore store;
  GenerationJob first;
  first.request = parse({{"model", "llmload-mock"}, {"input", "one two"}, {"instructions", "sys"}});
  first.id = "resp_1";
  remember_response(store, first, " three");
  const auto second = parse({{"model", "llmload-mock"}, {"input", "four"}, {"previous_response_id", "resp_1"}}, 0, store);
  // The earlier input and output, then the new input (the earlier instructions are not carried).
  EXPECT_EQ(second.prompt_tokens, 2 + 1 + 1);
  GenerationJob second_job;
  second_job.request = second;
  second_job.id = "resp_2";
  remember_response(store, second_job, " five six");
  const auto turns = conversation_turns(*store.get("resp_2"));
  ASSERT_EQ(turns.size(), 4u);
  EXPECT_EQ(turns[0]->text, "one two");
  EXPECT_EQ(turns[1]->role, "assistant");
  EXPECT_EQ(turns[1]->text, " three");
  EXPECT_EQ(turns[2]->text, "four");
  EXPECT_EQ(turns[3]->text, " five six");
  // store: false is not remembered.
  GenerationJob unstored;
  unstored.request = parse({{"model", "llmload-mock"}, {"input", "x"}, {"store", false}});
  unstored.id = "resp_3";
  remember_response(store, unstored, " y");
  EXPECT_EQ(store.get("resp_3"), nullptr);
}

TEST(ResponseStore, ALongChainIsReleasedWithoutRecursion) {
  std::shared_ptr<const StoredConversation> tail;
  for (int i = 0; i < 200000; ++i) {
    auto c = std::make_shared<StoredConversation>();
    c->parent = std::move(tail);
    c->turns.push_back({"user", "x"});
    tail = std::move(c);
  }
  release_conversation(tail);
  EXPECT_EQ(tail, nullptr);
}

void expect_sequence_numbers(const std::vector<test::NamedEvent>& events) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].name, events[i].data["type"]) << i;
    EXPECT_EQ(events[i].data["sequence_number"], i) << events[i].name;
  }
}

TEST(ResponsesEncoder, StreamWithoutReasoning) {
  const GenerationJob job = job_for({{"model", "llmload-mock"}, {"input", "hello"}, {"max_output_tokens", 3}, {"stream", true}}, 0);
  RequestOutcome outcome;
  outcome.cached_tokens = 0;
  const auto events = whole_stream(job, &outcome);
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  const std::vector<std::string> expected = {
      "response.created",           "response.in_progress",       "response.output_item.added",
      "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.delta",  "response.output_text.done",  "response.content_part.done",
      "response.output_item.done",   "response.incomplete"};  // max_output_tokens cut it
  EXPECT_EQ(names, expected);
  expect_sequence_numbers(events);
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_TRUE(events[0].data["response"]["usage"].is_null());
  EXPECT_EQ(events[0].data["response"]["id"], "resp_abc");
  const std::string item_id = events[2].data["item"]["id"];
  EXPECT_EQ(item_id.rfind("msg_", 0), 0u);
  std::string text;
  for (std::size_t i = 4; i < 7; ++i) {
    EXPECT_EQ(events[i].data["item_id"], item_id);
    EXPECT_EQ(events[i].data["output_index"], 0);
    EXPECT_EQ(events[i].data["content_index"], 0);
    text += events[i].data["delta"].get<std::string>();
  }
  EXPECT_EQ(events[7].data["text"], text);
  const json& done = events.back().data["response"];
  EXPECT_EQ(done["status"], "incomplete");
  EXPECT_EQ(done["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  EXPECT_EQ(done["output"].size(), 1u);
  EXPECT_EQ(done["output"][0]["status"], "incomplete");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], text);
  EXPECT_EQ(done["usage"], json({{"input_tokens", 1},
                                 {"input_tokens_details", {{"cached_tokens", 0}}},
                                 {"output_tokens", 3},
                                 {"output_tokens_details", {{"reasoning_tokens", 0}}},
                                 {"total_tokens", 4}}));
  EXPECT_TRUE(done.contains("llmload"));
}

TEST(ResponsesEncoder, StreamWithReasoningThenAnswer) {
  const GenerationJob job = job_for({{"model", "llmload-mock"}, {"input", "hello"}, {"max_output_tokens", 5}, {"stream", true}}, 2);
  const auto events = whole_stream(job);
  expect_sequence_numbers(events);
  ASSERT_EQ(events.size(), 2u + 2 + 2 + 3 + 2 + 3 + 3 + 1);
  EXPECT_EQ(events[2].data["item"]["type"], "reasoning");
  EXPECT_EQ(events[3].data["part"], json({{"type", "reasoning_text"}, {"text", ""}}));
  EXPECT_EQ(events[4].name, "response.reasoning_text.delta");
  EXPECT_EQ(events[5].name, "response.reasoning_text.delta");
  EXPECT_EQ(events[6].name, "response.reasoning_text.done");
  EXPECT_EQ(events[8].name, "response.output_item.done");
  EXPECT_EQ(events[8].data["item"]["status"], "completed");
  EXPECT_EQ(events[9].name, "response.output_item.added");
  EXPECT_EQ(events[9].data["output_index"], 1);
  for (std::size_t i = 11; i < 14; ++i) {
    EXPECT_EQ(events[i].name, "response.output_text.delta");
    EXPECT_EQ(events[i].data["output_index"], 1);
  }
  const json& done = events.back().data["response"];
  ASSERT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][0]["type"], "reasoning");
  EXPECT_EQ(done["output"][0]["content"][0]["text"],
            events[4].data["delta"].get<std::string>() + events[5].data["delta"].get<std::string>());
  EXPECT_EQ(done["usage"]["output_tokens"], 5);
  EXPECT_EQ(done["usage"]["output_tokens_details"]["reasoning_tokens"], 2);
}

TEST(ResponsesEncoder, AllReasoningEndsAfterTheReasoningItem) {
  const GenerationJob job = job_for({{"model", "llmload-mock"}, {"input", "hello"}, {"max_output_tokens", 2}, {"stream", true}}, 8);
  const auto events = whole_stream(job);
  expect_sequence_numbers(events);
  ASSERT_EQ(events.size(), 2u + 2 + 2 + 3 + 1);
  EXPECT_EQ(events[8].name, "response.output_item.done");
  EXPECT_EQ(events[8].data["item"]["status"], "incomplete");
  EXPECT_EQ(events[9].name, "response.incomplete");
  EXPECT_EQ(events[9].data["response"]["output"].size(), 1u);
}

TEST(ResponsesEncoder, BodyAndErrorEvent) {
  const GenerationJob job = job_for({{"model", "llmload-mock"}, {"input", "hello"}, {"max_output_tokens", 4},
                                     {"reasoning", {{"effort", "low"}}}, {"instructions", "sys"}},
                                    4);
  RequestOutcome outcome;
  outcome.cached_tokens = 1;
  const json body = json::parse(ResponseEncoder(job).full_body(outcome));
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["status"], "incomplete");  // max_output_tokens 4 cut the answer
  EXPECT_EQ(body["instructions"], "sys");
  EXPECT_EQ(body["max_output_tokens"], 4);
  EXPECT_EQ(body["reasoning"]["effort"], "low");
  EXPECT_EQ(body["output"].size(), 2u);  // 2 reasoning (low of 4), 2 answer
  EXPECT_EQ(body["usage"]["input_tokens_details"]["cached_tokens"], 1);
  EXPECT_EQ(body["usage"]["output_tokens_details"]["reasoning_tokens"], 2);
  EXPECT_TRUE(body.contains("llmload"));

  std::string sse;
  ResponseEncoder(job).append_error_event(sse, ApiError{503, "engine down", std::nullopt}, Framing::kNone, 3);
  const auto events = test::parse_events(sse);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "error");
  EXPECT_EQ(events[0].data, json({{"type", "error"}, {"code", "server_error"}, {"message", "engine down"},
                                  {"param", nullptr}, {"sequence_number", 12}}));
}

TEST(ResponsesRouter, RouteAndIds) {
  const Router router(test_config(), 1700000000);
  const auto job = job_of(router.route("POST", "/v1/responses", R"({"model":"llmload-mock","input":"x"})",
                                       RequestContext{3, 1700000001}));
  EXPECT_EQ(job.id.rfind("resp_", 0), 0u);
  EXPECT_EQ(job.id.size(), 5u + 32u);
  const HttpReply bad = reply_of(router.route("POST", "/v1/responses", R"({"model":"llmload-mock"})", RequestContext{4, 1}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["param"], "input");  // the OpenAI shape
  EXPECT_EQ(reply_of(router.route("GET", "/v1/responses", "", RequestContext{5, 1})).status, 405);
}

}  // namespace llmload::server::responses_api_test
