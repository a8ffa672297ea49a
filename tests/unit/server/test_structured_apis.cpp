// Tool calls and structured output on /v1/responses and /v1/messages (tool_request_fields.hpp,
// responses_encoder.cpp, messages_encoder.cpp), the Responses API's incomplete status, and the
// fault counter (metrics.hpp).
#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "llmload/server/api_error.hpp"
#include "llmload/server/messages_request.hpp"
#include "llmload/server/metrics.hpp"
#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/responses_request.hpp"
#include "llmload/server/structured_output.hpp"
#include "schema_validator.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::structured_apis_test {

using nlohmann::json;
using schema_test::validate;
using test::test_config;
using test::whole_stream;

const json kParams = json::parse(
    R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7},
        "hourly":{"type":"boolean"}},"required":["city","days"]})");

json responses_body(json extra = json::object()) {
  json body = {{"model", "llmload-mock"},
               {"input", "what is the weather in Paris"},
               {"tools", {{{"type", "function"}, {"name", "get_weather"}, {"parameters", kParams}}}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

GenerationJob responses_job(const json& body, std::int64_t reasoning = 0) {
  GenerationJob job;
  job.request = parse_responses_request(body, test_config(reasoning), ResponseStore());
  job.id = "resp_abc";
  job.seed = 7;
  return job;
}

json messages_body(json extra = json::object()) {
  json body = {{"model", "llmload-mock"},
               {"max_tokens", 64},
               {"messages", {{{"role", "user"}, {"content", "what is the weather in Paris"}}}},
               {"tools", {{{"name", "get_weather"}, {"description", "d"}, {"input_schema", kParams}}}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

GenerationJob messages_job(const json& body) {
  GenerationJob job;
  job.request = parse_messages_request(body, test_config());
  job.id = "msg_abc";
  return job;
}

json body_of(const GenerationJob& job) { return json::parse(ResponseEncoder(job).full_body(RequestOutcome{})); }

std::vector<std::string> names(const std::vector<test::NamedEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.name);
  return out;
}

TEST(ResponsesToolCalls, StreamEventsAsOpenAISendsThem) {
  const GenerationJob job = responses_job(responses_body({{"stream", true}}));
  const auto events = whole_stream(job);
  const json body = body_of(job);
  ASSERT_EQ(body["output"].size(), 1u);
  const json& item = body["output"][0];
  const std::string arguments = item["arguments"];
  const auto n = static_cast<std::size_t>(count_words(arguments));
  std::vector<std::string> expected = {"response.created", "response.in_progress", "response.output_item.added"};
  for (std::size_t i = 0; i < n; ++i) expected.push_back("response.function_call_arguments.delta");
  for (const char* e : {"response.function_call_arguments.done", "response.output_item.done", "response.completed"}) {
    expected.push_back(e);
  }
  ASSERT_EQ(names(events), expected);
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);
  EXPECT_EQ(events[2].data["item"], json({{"type", "function_call"}, {"id", item["id"]}, {"call_id", item["call_id"]},
                                          {"name", "get_weather"}, {"arguments", ""}, {"status", "in_progress"}}));
  std::string deltas;
  for (std::size_t i = 3; i < 3 + n; ++i) {
    EXPECT_EQ(events[i].data["item_id"], item["id"]);
    EXPECT_EQ(events[i].data["output_index"], 0);
    deltas += events[i].data["delta"].get<std::string>();
  }
  EXPECT_EQ(deltas, arguments);
  EXPECT_EQ(events[3 + n].data["arguments"], arguments);
  EXPECT_EQ(events[4 + n].data["item"], item);
  EXPECT_EQ(item["status"], "completed");
  EXPECT_EQ(item["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(item["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(validate(kParams, json::parse(arguments)), "");
  EXPECT_EQ(body["status"], "completed");
  EXPECT_EQ(body["tools"][0]["name"], "get_weather");
  EXPECT_EQ(body["tools"][0]["strict"], true);
  EXPECT_EQ(body["usage"]["output_tokens"], n);
}

TEST(ResponsesToolCalls, ReasoningThenCallAndTruncation) {
  const GenerationJob job = responses_job(responses_body({{"reasoning", {{"effort", "low"}}}}), 4);
  const json body = body_of(job);
  ASSERT_EQ(body["output"].size(), 2u);
  EXPECT_EQ(body["output"][0]["type"], "reasoning");
  EXPECT_EQ(body["output"][1]["type"], "function_call");
  const auto events = whole_stream(job);
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);

  const json cut = body_of(responses_job(responses_body({{"max_output_tokens", 1}})));
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(cut["output"][0]["status"], "incomplete");
  EXPECT_TRUE(json::parse(cut["output"][0]["arguments"].get<std::string>(), nullptr, false).is_discarded());
  const auto cut_events = whole_stream(responses_job(responses_body({{"max_output_tokens", 1}, {"stream", true}})));
  EXPECT_EQ(cut_events.back().name, "response.incomplete");
  EXPECT_EQ(cut_events.back().data["response"]["status"], "incomplete");
}

TEST(ResponsesToolCalls, ChoiceFormatsAndAgentTurns) {
  const json none = body_of(responses_job(responses_body({{"tool_choice", "none"}, {"max_output_tokens", 3}})));
  EXPECT_EQ(none["output"][0]["type"], "message");
  EXPECT_EQ(none["tool_choice"], "none");
  const json named = body_of(responses_job(responses_body({{"tool_choice", {{"type", "function"}, {"name", "get_weather"}}}})));
  EXPECT_EQ(named["output"][0]["name"], "get_weather");

  const json schema = json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
  const json format = {{"type", "json_schema"}, {"name", "n"}, {"schema", schema}, {"strict", true}};
  const json structured = body_of(responses_job({{"model", "llmload-mock"}, {"input", "x"}, {"text", {{"format", format}}}}));
  EXPECT_EQ(structured["status"], "completed");
  EXPECT_EQ(structured["text"]["format"], format);
  EXPECT_EQ(validate(schema, json::parse(structured["output"][0]["content"][0]["text"].get<std::string>())), "");
  const json object = body_of(responses_job({{"model", "llmload-mock"}, {"input", "x"},
                                             {"text", {{"format", {{"type", "json_object"}}}}}}));
  EXPECT_EQ(validate(json_object_schema(), json::parse(object["output"][0]["content"][0]["text"].get<std::string>())), "");

  const json turns = {{{"role", "user"}, {"content", "weather in Paris"}},
                      {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "get_weather"},
                       {"arguments", "{\"city\": \"Paris\"}"}},
                      {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny and warm"}}};
  EXPECT_EQ(responses_job(responses_body({{"input", turns}})).request.prompt_tokens, 3 + 2 + 3);
}

TEST(ResponsesToolCalls, BadShapesAre400s) {
  const std::vector<std::pair<json, std::string>> cases = {
      {responses_body({{"tools", {{{"type", "function"}, {"parameters", kParams}}}}}), "tools"},
      {responses_body({{"tools", {{{"type", "file_search"}}}}}), "tools"},
      {responses_body({{"tool_choice", {{"type", "function"}, {"name", "nope"}}}}), "tool_choice"},
      {responses_body({{"tool_choice", {{"type", "file_search"}}}}), "tool_choice"},
      {responses_body({{"text", {{"format", {{"type", "json_schema"}, {"name", "x"}}}}}}), "text"},
      {responses_body({{"text", {{"format", {{"type", "xml"}}}}}}), "text"},
  };
  for (const auto& [body, param] : cases) {
    try {
      (void)parse_responses_request(body, test_config(), ResponseStore());
      ADD_FAILURE() << "accepted " << body.dump();
    } catch (const ApiException& e) {
      EXPECT_EQ(e.error().status, 400);
      EXPECT_EQ(e.error().param.value_or(""), param) << e.error().message;
    }
  }
}

TEST(ResponsesEncoder, CompletedWhenTheOutputEndsAtEos) {
  const json body = body_of(responses_job({{"model", "llmload-mock"}, {"input", "What is 6 * 7?"}}));
  EXPECT_EQ(body["status"], "completed");
  EXPECT_TRUE(body["incomplete_details"].is_null());
  EXPECT_EQ(body["output"][0]["status"], "completed");
}

TEST(MessagesToolUse, StreamAndBody) {
  const GenerationJob job = messages_job(messages_body({{"stream", true}}));
  const json body = body_of(job);
  EXPECT_EQ(body["stop_reason"], "tool_use");
  ASSERT_EQ(body["content"].size(), 1u);
  const json& block = body["content"][0];
  EXPECT_EQ(block["type"], "tool_use");
  EXPECT_EQ(block["name"], "get_weather");
  EXPECT_EQ(block["id"].get<std::string>().rfind("toolu_", 0), 0u);
  EXPECT_EQ(validate(kParams, block["input"]), "");
  const auto events = whole_stream(job);
  ASSERT_GE(events.size(), 6u);
  EXPECT_EQ(events[2].name, "content_block_start");
  EXPECT_EQ(events[2].data["content_block"],
            json({{"type", "tool_use"}, {"id", block["id"]}, {"name", "get_weather"}, {"input", json::object()}}));
  std::string partial;
  std::size_t i = 3;
  for (; events[i].name == "content_block_delta"; ++i) {
    EXPECT_EQ(events[i].data["delta"]["type"], "input_json_delta");
    partial += events[i].data["delta"]["partial_json"].get<std::string>();
  }
  EXPECT_EQ(json::parse(partial), block["input"]);
  EXPECT_EQ(events[i].name, "content_block_stop");
  EXPECT_EQ(events[i + 1].data["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(events[i + 1].data["usage"]["output_tokens"], count_words(partial));
}

TEST(MessagesToolUse, ThinkingFirstChoiceAndCut) {
  const json thinking = body_of(messages_job(messages_body({{"thinking", {{"type", "enabled"}, {"budget_tokens", 3}}}})));
  ASSERT_EQ(thinking["content"].size(), 2u);
  EXPECT_EQ(thinking["content"][0]["type"], "thinking");
  EXPECT_EQ(thinking["content"][1]["type"], "tool_use");
  const json none = body_of(messages_job(messages_body({{"tool_choice", {{"type", "none"}}}, {"max_tokens", 3}})));
  EXPECT_EQ(none["content"][0]["type"], "text");
  EXPECT_EQ(none["stop_reason"], "max_tokens");
  const json any = body_of(messages_job(messages_body({{"tool_choice", {{"type", "any"}}}})));
  EXPECT_EQ(any["content"][0]["type"], "tool_use");
  const json cut = body_of(messages_job(messages_body({{"max_tokens", 1}})));
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
  EXPECT_EQ(cut["content"][0]["input"], json::object());  // not parseable: the mock's {}
}

TEST(MessagesStructuredOutput, OutputConfigAndBetaOutputFormat) {
  const json schema = json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
  for (const json& extra : {json{{"output_config", {{"format", {{"type", "json_schema"}, {"schema", schema}}}}}},
                            json{{"output_format", {{"type", "json_schema"}, {"schema", schema}}}}}) {
    json body = messages_body(extra);
    body.erase("tools");
    const json reply = body_of(messages_job(body));
    EXPECT_EQ(reply["stop_reason"], "end_turn");
    EXPECT_EQ(validate(schema, json::parse(reply["content"][0]["text"].get<std::string>())), "") << reply.dump();
  }
}

TEST(MessagesToolUse, AgentTurnsAndBadShapes) {
  json body = messages_body();
  body["messages"] = {
      {{"role", "user"}, {"content", "weather in Paris"}},
      {{"role", "assistant"},
       {"content", {{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}}}}},
      {{"role", "user"},
       {"content", {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "sunny and warm"}}}}}};
  EXPECT_EQ(messages_job(body).request.prompt_tokens, 3 + 1 + 3);  // {"city":"Paris"} is one word
  const std::vector<json> bad = {
      messages_body({{"tools", {{{"description", "no name"}, {"input_schema", kParams}}}}}),
      messages_body({{"tools", {{{"name", "f"}}}}}),
      messages_body({{"tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}}}),
      messages_body({{"tool_choice", {{"type", "tool"}, {"name", "nope"}}}}),
      messages_body({{"tool_choice", {{"type", "sometimes"}}}}),
      messages_body({{"output_config", {{"format", {{"type", "json_schema"}}}}}}),
      messages_body({{"output_format", {{"type", "regex"}, {"schema", kParams}}}}),
  };
  for (const json& b : bad) EXPECT_THROW((void)parse_messages_request(b, test_config()), ApiException) << b.dump();
  const Router router(test_config(), 0);
  const HttpReply reply = test::reply_of(
      router.route("POST", "/v1/messages", messages_body({{"tools", "x"}}).dump(), RequestContext{1, 0}));
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(json::parse(reply.body)["error"]["type"], "invalid_request_error");
  EXPECT_EQ(json::parse(reply.body)["error"]["message"], "tools: Input should be a valid list");
}

TEST(FaultMetrics, InjectedFaultsAreCountedByKind) {
  ServerMetrics metrics(MetricsLabels{"m"}, 1024, 16, 100);
  EXPECT_EQ(metrics.render().find("llmload:faults_injected_total"), std::string::npos);
  metrics.count_fault("invalid-output");
  metrics.count_fault("invalid-output");
  metrics.count_fault("error");
  const std::string text = metrics.render();
  EXPECT_NE(text.find("llmload:faults_injected_total{engine=\"0\",kind=\"invalid-output\",model_name=\"m\"} 2.0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("llmload:faults_injected_total{engine=\"0\",kind=\"error\",model_name=\"m\"} 1.0"),
            std::string::npos);
}

}  // namespace llmload::server::structured_apis_test
