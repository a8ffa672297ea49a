// Tool calls and structured output on chat and completions (structured_output.hpp,
// tool_request_fields.hpp, response_encoder.cpp): the call, its arguments against the schema,
// determinism, the stream against the body, max_tokens, reasoning first, agent turns, the 400s.
#include <set>

#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "llmload/server/api_error.hpp"
#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/structured_output.hpp"
#include "schema_validator.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::tool_calls_test {

using nlohmann::json;
using schema_test::validate;
using test::parse_events;
using test::test_config;
using test::whole_stream;

const json kWeatherParams = json::parse(
    R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]},
        "days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]})");
const json kSearchParams = json::parse(
    R"({"type":"object","properties":{"query":{"type":"string","minLength":3},"limit":{"type":"integer"}},"required":["query"]})");

json tool(const std::string& name, const json& params) {
  return {{"type", "function"}, {"function", {{"name", name}, {"description", "d"}, {"parameters", params}, {"strict", true}}}};
}

json chat_body(json extra = json::object(), const std::string& prompt = "what is the weather in Paris") {
  json body = {{"model", "llmload-mock"},
               {"messages", {{{"role", "user"}, {"content", prompt}}}},
               {"tools", {tool("get_weather", kWeatherParams), tool("search", kSearchParams)}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

GenerationJob chat_job(const json& body, std::int64_t reasoning = 0) {
  GenerationJob job;
  job.request = parse_chat_request(body, test_config(reasoning));
  job.id = "chatcmpl-abc";
  job.created_unix = 1700000000;
  return job;
}

json body_of(const GenerationJob& job) { return json::parse(ResponseEncoder(job).full_body(RequestOutcome{})); }

const json& params_of(const std::string& name) { return name == "search" ? kSearchParams : kWeatherParams; }

TEST(ChatToolCalls, BodyHasOneCallWhoseArgumentsFitTheSchema) {
  const json body = body_of(chat_job(chat_body()));
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  const std::string name = call["function"]["name"];
  const std::string arguments = call["function"]["arguments"];
  EXPECT_EQ(validate(params_of(name), json::parse(arguments)), "") << arguments;
  // Argument tokens are generated tokens: the mock's one per word.
  EXPECT_EQ(body["usage"]["completion_tokens"], count_words(arguments));
}

TEST(ChatToolCalls, DeterministicPerPromptAndSeed) {
  EXPECT_EQ(body_of(chat_job(chat_body()))["choices"], body_of(chat_job(chat_body()))["choices"]);
  std::set<std::string> tools_called;
  std::set<std::string> arguments;
  for (int seed = 0; seed < 24; ++seed) {
    const json call = body_of(chat_job(chat_body({{"seed", seed}})))["choices"][0]["message"]["tool_calls"][0];
    tools_called.insert(call["function"]["name"].get<std::string>());
    arguments.insert(call["function"]["arguments"].get<std::string>());
    EXPECT_EQ(validate(params_of(call["function"]["name"]), json::parse(call["function"]["arguments"].get<std::string>())), "");
  }
  EXPECT_EQ(tools_called.size(), 2u);  // the seed picks among the tools
  EXPECT_GT(arguments.size(), 8u);
}

TEST(ChatToolCalls, ToolChoice) {
  for (int seed = 0; seed < 8; ++seed) {
    const json named = body_of(chat_job(chat_body({{"seed", seed},
                                                   {"tool_choice", {{"type", "function"}, {"function", {{"name", "search"}}}}}})));
    EXPECT_EQ(named["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "search");
  }
  const json none = body_of(chat_job(chat_body({{"tool_choice", "none"}, {"max_tokens", 4}})));
  EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(count_words(none["choices"][0]["message"]["content"].get<std::string>()), 4);
  for (const char* mode : {"auto", "required"}) {
    EXPECT_TRUE(body_of(chat_job(chat_body({{"tool_choice", mode}})))["choices"][0]["message"].contains("tool_calls"));
  }
  EXPECT_NO_THROW((void)chat_job(chat_body({{"parallel_tool_calls", false}})));
}

TEST(ChatToolCalls, StreamFragmentsConcatenateToTheBodysArguments) {
  json with_usage = chat_body({{"stream", true}, {"stream_options", {{"include_usage", true}}}});
  const GenerationJob job = chat_job(with_usage);
  const auto events = whole_stream(job);
  const json call = body_of(job)["choices"][0]["message"]["tool_calls"][0];
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events[0].data["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(events[1].data["choices"][0]["delta"],
            json({{"tool_calls", {{{"index", 0}, {"id", call["id"]}, {"type", "function"},
                                   {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}}}}}));
  std::string arguments;
  std::int64_t fragments = 0;
  for (std::size_t i = 2; i < events.size(); ++i) {
    const json& d = events[i].data;
    if (d == "[DONE]" || d["choices"].empty()) continue;
    const json& tc = d["choices"][0]["delta"]["tool_calls"][0];
    EXPECT_EQ(tc, json({{"index", 0}, {"function", {{"arguments", tc["function"]["arguments"]}}}}));
    arguments += tc["function"]["arguments"].get<std::string>();
    ++fragments;
    const bool last = i + 3 == events.size();  // then the usage chunk and [DONE]
    EXPECT_EQ(d["choices"][0]["finish_reason"], last ? json("tool_calls") : json(nullptr)) << i;
  }
  EXPECT_EQ(arguments, call["function"]["arguments"]);
  EXPECT_EQ(events[events.size() - 2].data["usage"]["completion_tokens"], fragments);
}

TEST(ChatToolCalls, MaxTokensCutsTheArguments) {
  const json full = body_of(chat_job(chat_body()));
  const std::string arguments = full["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"];
  const std::int64_t n = count_words(arguments);
  ASSERT_GE(n, 3);
  const json cut = body_of(chat_job(chat_body({{"max_tokens", n - 1}})));
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "length");
  const std::string partial = cut["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"];
  EXPECT_EQ(arguments.rfind(partial, 0), 0u);  // a prefix
  EXPECT_LT(partial.size(), arguments.size());
  EXPECT_TRUE(json::parse(partial, nullptr, false).is_discarded());
  EXPECT_EQ(cut["usage"]["completion_tokens"], n - 1);
}

TEST(ChatToolCalls, NeitherIgnoreEosNorMinTokensPad) {
  const json plain = body_of(chat_job(chat_body()));
  const json padded = body_of(chat_job(chat_body({{"ignore_eos", true}, {"min_tokens", 40}, {"max_tokens", 100}})));
  EXPECT_EQ(padded["choices"][0]["message"]["tool_calls"], plain["choices"][0]["message"]["tool_calls"]);
  EXPECT_EQ(padded["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
  EXPECT_EQ(padded["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ChatToolCalls, ReasoningComesFirst) {
  const GenerationJob job = chat_job(chat_body({{"stream", true}}), 3);
  const json body = body_of(job);
  const json& message = body["choices"][0]["message"];
  EXPECT_EQ(count_words(message["reasoning_content"].get<std::string>()), 3);
  const std::string arguments = message["tool_calls"][0]["function"]["arguments"];
  EXPECT_EQ(body["usage"]["completion_tokens"], 3 + count_words(arguments));
  EXPECT_EQ(body["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  const auto events = whole_stream(job);
  for (std::size_t i = 1; i <= 3; ++i) EXPECT_TRUE(events[i].data["choices"][0]["delta"].contains("reasoning_content"));
  EXPECT_EQ(events[4].data["choices"][0]["delta"]["tool_calls"][0]["id"], message["tool_calls"][0]["id"]);
}

TEST(ChatStructuredOutput, ResponseFormats) {
  const json schema = json::parse(R"({"type":"object","properties":{"answer":{"type":"integer"},"why":{"type":"string"}},"required":["answer","why"]})");
  const json no_tools = {{"model", "llmload-mock"}, {"messages", {{{"role", "user"}, {"content", "x y"}}}}};
  json with_schema = no_tools;
  with_schema["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", schema}, {"strict", true}}}};
  const json body = body_of(chat_job(with_schema));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  const std::string content = body["choices"][0]["message"]["content"];
  EXPECT_EQ(validate(schema, json::parse(content)), "") << content;

  json object_format = no_tools;
  object_format["response_format"] = {{"type", "json_object"}};
  const json object = json::parse(body_of(chat_job(object_format))["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(validate(json_object_schema(), object), "");

  json text = no_tools;
  text["response_format"] = {{"type", "text"}};
  text["max_tokens"] = 3;
  EXPECT_EQ(count_words(body_of(chat_job(text))["choices"][0]["message"]["content"].get<std::string>()), 3);

  // Completions take response_format too (vLLM does).
  GenerationJob completion;
  completion.request = parse_completion_request({{"model", "llmload-mock"}, {"prompt", "x y"}, {"max_tokens", 200},
                                                 {"response_format", with_schema["response_format"]}},
                                                test_config());
  completion.id = "cmpl-abc";
  EXPECT_EQ(validate(schema, json::parse(body_of(completion)["choices"][0]["text"].get<std::string>())), "");
}

TEST(ChatToolCalls, AgentTurnsAreAccepted) {
  json body = chat_body();
  body["messages"] = {
      {{"role", "user"}, {"content", "weather in Paris"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                        {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny and warm"}}};
  const GenerationJob job = chat_job(body);
  EXPECT_EQ(job.request.prompt_tokens, 3 + 2 + 3);  // user + the call's arguments + the tool's result
}

TEST(ChatToolCalls, BadShapesAre400sNamingTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {chat_body({{"tools", "get_weather"}}), "tools"},
      {chat_body({{"tools", {{{"type", "function"}, {"function", {{"parameters", kWeatherParams}}}}}}}), "tools"},
      {chat_body({{"tools", {{{"type", "retrieval"}}}}}), "tools"},
      {chat_body({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", "x"}}}}}}}), "tools"},
      {chat_body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}), "tool_choice"},
      {chat_body({{"tool_choice", "sometimes"}}), "tool_choice"},
      {chat_body({{"tools", nullptr}, {"tool_choice", "required"}}), "tool_choice"},
      {chat_body({{"parallel_tool_calls", "yes"}}), "parallel_tool_calls"},
      {chat_body({{"response_format", {{"type", "yaml"}}}}), "response_format"},
      {chat_body({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}}), "response_format"},
      {chat_body({{"response_format", {{"type", "json_schema"}}}}), "response_format"},
      {chat_body({{"messages", {{{"role", "assistant"}, {"tool_calls", {{{"function", {{"name", "f"}}}}}}}}}}), "messages"},
  };
  for (const auto& [body, param] : cases) {
    try {
      (void)parse_chat_request(body, test_config());
      ADD_FAILURE() << "accepted " << body.dump();
    } catch (const ApiException& e) {
      EXPECT_EQ(e.error().status, 400) << body.dump();
      EXPECT_EQ(e.error().param, param) << e.error().message;
    }
  }
  // Through the router: the OpenAI error shape.
  const Router router(test_config(), 0);
  const HttpReply reply =
      test::reply_of(router.route("POST", "/v1/chat/completions", chat_body({{"tools", 3}}).dump(), RequestContext{1, 0}));
  EXPECT_EQ(reply.status, 400);
  EXPECT_EQ(json::parse(reply.body)["error"]["param"], "tools");
}

}  // namespace llmload::server::tool_calls_test
