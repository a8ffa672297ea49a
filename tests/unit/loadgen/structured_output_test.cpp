// Tool calls and structured output on the client (issue 19, docs/workloads.md "Tool calls and
// structured output"): the tool-call pieces each API streams and the tracker joins, the verdict
// on what came back, the request fields each API gets, the seeded ratio, agent turns (tool
// results injected) and previous_response_id, dataset rows, and the run's summary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "decode_event.hpp"
#include "llmload/analysis/structured_output.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/loadgen/structured_check.hpp"
#include "llmload/loadgen/structured_request.hpp"
#include "llmload/loadgen/workload.hpp"

namespace llmload::structured_test {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::dec;

// A tracker fed one body, streamed or whole, with text (and tool calls) captured.
RequestTracker tracked(ApiKind api, bool stream, const std::string& body) {
  analysis::RequestRecord rec;
  rec.requested_output_tokens = 64;
  TrackerOptions o;
  o.api = api;
  o.stream = stream;
  o.capture_text = true;
  RequestTracker t(rec, TimePoint(0s), o);
  t.on_sent(TimePoint(1s));
  t.on_headers(TimePoint(2s), 200, stream ? "text/event-stream" : "application/json");
  t.on_body(TimePoint(3s), body);
  t.on_complete(TimePoint(4s), TransportError{});
  return t;
}
RequestTracker streamed(ApiKind api, const std::string& body) { return tracked(api, true, body); }
RequestTracker whole(ApiKind api, const std::string& body) { return tracked(api, false, body); }

std::string sse(const std::vector<std::string>& datas, bool done = true) {
  std::string out;
  for (const auto& d : datas) out += "data: " + d + "\n\n";
  if (done) out += "data: [DONE]\n\n";
  return out;
}

std::string events(const std::vector<std::pair<std::string, std::string>>& evs) {
  std::string out;
  for (const auto& [name, data] : evs) out += "event: " + name + "\ndata: " + data + "\n\n";
  return out;
}

StructuredSpec weather_spec() {
  StructuredSpec s;
  s.tools = builtin_tools();
  s.tool_choice = "required";
  return s;
}

TEST(StructuredDecode, ChatStreamJoinsPiecesByIndex) {
  const auto t = streamed(ApiKind::kChat,
                          sse({R"({"choices":[{"delta":{"role":"assistant"}}]})",
                               R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]})",
                               R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]})",
                               R"({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"convert_units","arguments":"{}"}}]}}]})",
                               R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}}]})",
                               R"({"choices":[{"delta":{},"finish_reason":"tool_calls"}]})"}));
  ASSERT_TRUE(t.record().ok()) << t.record().error_message;
  ASSERT_EQ(t.tool_calls().size(), 2u);
  EXPECT_EQ(t.tool_calls()[0].id, "call_a");
  EXPECT_EQ(t.tool_calls()[0].name, "get_weather");
  EXPECT_EQ(t.tool_calls()[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(t.tool_calls()[1].name, "convert_units");
  EXPECT_EQ(t.record().finish_reason, "tool_calls");
  EXPECT_TRUE(t.record().t_first_output.has_value()) << "a tool call is output (TTFO)";
}

TEST(StructuredDecode, ChatWholeMessage) {
  const auto t = whole(ApiKind::kChat,
                       R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\",\"unit\":\"celsius\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":9}})");
  ASSERT_TRUE(t.record().ok()) << t.record().error_message;
  ASSERT_EQ(t.tool_calls().size(), 1u);
  EXPECT_EQ(t.tool_calls()[0].arguments, R"({"city":"Rome","unit":"celsius"})");
}

TEST(StructuredDecode, ResponsesStreamAndBody) {
  const auto t = streamed(
      ApiKind::kResponses,
      events({{"response.created", R"({"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}})"},
              {"response.output_item.added",
               R"({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"","status":"in_progress"}})"},
              {"response.function_call_arguments.delta",
               R"({"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"{\"city\":\"Lima\","})"},
              {"response.function_call_arguments.delta",
               R"({"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"\"unit\":\"celsius\"}"})"},
              {"response.completed",
               R"({"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":7}}})"}}));
  ASSERT_TRUE(t.record().ok()) << t.record().error_message;
  EXPECT_EQ(t.response_id(), "resp_1");
  ASSERT_EQ(t.tool_calls().size(), 1u);
  EXPECT_EQ(t.tool_calls()[0].id, "call_1");
  EXPECT_EQ(t.tool_calls()[0].name, "get_weather");
  EXPECT_EQ(t.tool_calls()[0].arguments, R"({"city":"Lima","unit":"celsius"})");

  const auto w = whole(ApiKind::kResponses,
                       R"({"id":"resp_2","status":"completed","output":[{"type":"function_call","id":"fc_2","call_id":"call_2","name":"convert_units","arguments":"{\"value\":1,\"from\":\"m\",\"to\":\"ft\"}"}],"usage":{"input_tokens":1,"output_tokens":5}})");
  ASSERT_TRUE(w.record().ok()) << w.record().error_message;
  EXPECT_EQ(w.response_id(), "resp_2");
  ASSERT_EQ(w.tool_calls().size(), 1u);
  EXPECT_EQ(w.tool_calls()[0].id, "call_2");
}

TEST(StructuredDecode, AnthropicStreamAndBody) {
  const auto t = streamed(
      ApiKind::kAnthropic,
      events({{"message_start", R"({"type":"message_start","message":{"usage":{"input_tokens":4,"output_tokens":1}}})"},
              {"content_block_start",
               R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}})"},
              {"content_block_delta",
               R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Kyiv\""}})"},
              {"content_block_delta",
               R"({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":", \"unit\": \"celsius\"}"}})"},
              {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
              {"message_delta",
               R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9,"output_tokens_details":{"thinking_tokens":0}}})"},
              {"message_stop", R"({"type":"message_stop"})"}}));
  ASSERT_TRUE(t.record().ok()) << t.record().error_message;
  ASSERT_EQ(t.tool_calls().size(), 1u);
  EXPECT_EQ(t.tool_calls()[0].id, "toolu_1");
  EXPECT_EQ(t.tool_calls()[0].arguments, R"({"city": "Kyiv", "unit": "celsius"})");
  EXPECT_EQ(t.record().finish_reason, "tool_calls");

  const auto w = whole(ApiKind::kAnthropic,
                       R"({"content":[{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Baku","unit":"fahrenheit"}}],"stop_reason":"tool_use","usage":{"input_tokens":2,"output_tokens":6}})");
  ASSERT_EQ(w.tool_calls().size(), 1u);
  EXPECT_EQ(json::parse(w.tool_calls()[0].arguments), json({{"city", "Baku"}, {"unit", "fahrenheit"}}));
}

TEST(StructuredDecode, AnthropicThinkingTokensFromUsage) {
  OpenAiStreamDecoder d(ApiKind::kAnthropic);
  const auto u = dec(d, R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40,"output_tokens_details":{"thinking_tokens":31}}})");
  ASSERT_TRUE(u.usage);
  EXPECT_EQ(u.usage->reasoning_tokens, 31) << "thinking deltas carry many tokens: the usage count is the one to trust";
}

TEST(StructuredJudge, EveryVerdict) {
  const StructuredSpec spec = weather_spec();
  EXPECT_EQ(judge_structured(spec, {{"c", "get_weather", R"({"city":"Oslo","unit":"celsius"})"}}, "").verdict, "valid");
  auto j = judge_structured(spec, {{"c", "get_weather", R"({"city":"Oslo","unit":"kelvin"})"}}, "");
  EXPECT_EQ(j.verdict, "schema_violation");
  EXPECT_NE(j.error.find("/unit"), std::string::npos) << j.error;
  EXPECT_EQ(judge_structured(spec, {{"c", "get_weather", R"({"city":"Oslo")"}}, "").verdict, "invalid_json")
      << "arguments cut by max_tokens do not parse";
  EXPECT_EQ(judge_structured(spec, {{"c", "get_weather", R"({"unit":"celsius"})"}}, "").verdict, "schema_violation")
      << "a required property is missing";
  EXPECT_EQ(judge_structured(spec, {{"c", "launch_rocket", "{}"}}, "").verdict, "unknown_tool");
  EXPECT_EQ(judge_structured(spec, {}, "It is sunny.").verdict, "no_tool_call");
  StructuredSpec autoc = spec;
  autoc.tool_choice = "auto";
  const auto text = judge_structured(autoc, {}, "It is sunny.");
  EXPECT_EQ(text.verdict, "text_answer");
  EXPECT_FALSE(text.invalid()) << "tool_choice auto may answer in text";
  // One bad call of two makes the response invalid.
  EXPECT_TRUE(judge_structured(spec, {{"a", "get_weather", R"({"city":"A","unit":"celsius"})"}, {"b", "get_weather", "{"}}, "")
                  .invalid());

  StructuredSpec fmt;
  fmt.schema = builtin_schema();
  const std::string good =
      R"({"name":"Pen","category":"toy","rating":4,"price":{"amount":2.5,"currency":"EUR"},"tags":["blue"],"in_stock":true})";
  EXPECT_EQ(judge_structured(fmt, {}, good).verdict, "valid");
  EXPECT_EQ(judge_structured(fmt, {}, "```json\n" + good + "\n```").verdict, "invalid_json")
      << "a fenced answer is not structured output";
  EXPECT_EQ(judge_structured(fmt, {}, R"({"name":"Pen"})").verdict, "schema_violation");
  StructuredSpec object;
  object.json_object = true;
  EXPECT_EQ(judge_structured(object, {}, "[1,2]").verdict, "schema_violation");
  EXPECT_EQ(judge_structured(object, {}, R"({"a":1})").verdict, "valid");
}

json body_for(const std::string& backend, const WorkItem& item, const std::vector<Turn>& history = {},
              const std::string& state = "history") {
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.backend = backend;
  cfg.conversation_state = state;
  RequestBuilder b(cfg, "", "h:1");
  return json::parse(b.build(item, history).body);
}

TEST(StructuredRequest, FieldsPerApi) {
  auto spec = std::make_shared<StructuredSpec>(weather_spec());
  spec->tool_choice = "get_weather";
  spec->schema = builtin_schema();
  WorkItem item;
  item.prompt = "Weather in Oslo?";
  item.output_tokens = 32;
  item.structured = spec;

  json chat = body_for("openai-chat", item);
  ASSERT_EQ(chat["tools"].size(), 4u);
  EXPECT_EQ(chat["tools"][0]["type"], "function");
  EXPECT_EQ(chat["tools"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(chat["tools"][0]["function"]["parameters"]["required"], json({"city", "unit"}));
  EXPECT_EQ(chat["tool_choice"], json({{"type", "function"}, {"function", {{"name", "get_weather"}}}}));
  EXPECT_EQ(chat["response_format"]["type"], "json_schema");
  EXPECT_EQ(chat["response_format"]["json_schema"]["schema"], builtin_schema());

  json resp = body_for("openai-responses", item);
  EXPECT_EQ(resp["tools"][0]["name"], "get_weather");
  EXPECT_TRUE(resp["tools"][0].contains("parameters"));
  EXPECT_EQ(resp["tool_choice"], json({{"type", "function"}, {"name", "get_weather"}}));
  EXPECT_EQ(resp["text"]["format"]["type"], "json_schema");
  EXPECT_EQ(resp["text"]["format"]["schema"], builtin_schema());

  json anth = body_for("anthropic", item);
  EXPECT_EQ(anth["tools"][0]["name"], "get_weather");
  EXPECT_TRUE(anth["tools"][0].contains("input_schema"));
  EXPECT_EQ(anth["tool_choice"], json({{"type", "tool"}, {"name", "get_weather"}}));
  EXPECT_EQ(anth["output_config"]["format"]["schema"], builtin_schema());

  spec->tool_choice = "required";
  EXPECT_EQ(body_for("anthropic", item)["tool_choice"], json({{"type", "any"}}));
  EXPECT_EQ(body_for("openai-chat", item)["tool_choice"], "required");

  // Completions carry a schema (vLLM's response_format) but no tools.
  auto format_only = std::make_shared<StructuredSpec>();
  format_only->schema = builtin_schema();
  item.structured = format_only;
  EXPECT_EQ(body_for("openai-completions", item)["response_format"]["type"], "json_schema");
  item.structured = spec;
  EXPECT_THROW(body_for("openai-completions", item), ConfigError);
  // A plain request's body is unchanged (and keeps the template's fast path).
  item.structured = nullptr;
  EXPECT_FALSE(body_for("openai-chat", item).contains("tools"));
}

TEST(StructuredRequest, AgentTurnSendsToolResultsNotANewPrompt) {
  WorkItem item;
  item.prompt = "next question";
  item.output_tokens = 8;
  std::vector<Turn> history = {
      Turn{"Weather in Oslo?", "", {ToolCall{"call_1", "get_weather", R"({"city":"Oslo","unit":"celsius"})"}}, "resp_1"}};
  ASSERT_TRUE(continues_tool_calls(history));

  json chat = body_for("openai-chat", item, history)["messages"];
  ASSERT_EQ(chat.size(), 3u) << chat.dump();
  EXPECT_EQ(chat[0]["role"], "user");
  EXPECT_EQ(chat[1]["role"], "assistant");
  EXPECT_TRUE(chat[1]["content"].is_null());
  EXPECT_EQ(chat[1]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(chat[1]["tool_calls"][0]["function"]["arguments"], R"({"city":"Oslo","unit":"celsius"})");
  EXPECT_EQ(chat[2]["role"], "tool");
  EXPECT_EQ(chat[2]["tool_call_id"], "call_1");
  EXPECT_EQ(json::parse(chat[2]["content"].get<std::string>())["tool"], "get_weather");

  json anth = body_for("anthropic", item, history)["messages"];
  ASSERT_EQ(anth.size(), 3u) << anth.dump();
  EXPECT_EQ(anth[1]["content"][0]["type"], "tool_use");
  EXPECT_EQ(anth[1]["content"][0]["input"]["city"], "Oslo");
  EXPECT_EQ(anth[2]["role"], "user");
  EXPECT_EQ(anth[2]["content"][0]["type"], "tool_result");
  EXPECT_EQ(anth[2]["content"][0]["tool_use_id"], "call_1");

  json resp = body_for("openai-responses", item, history);
  EXPECT_FALSE(resp.contains("previous_response_id"));
  ASSERT_EQ(resp["input"].size(), 3u) << resp.dump();
  EXPECT_EQ(resp["input"][1]["type"], "function_call");
  EXPECT_EQ(resp["input"][2]["type"], "function_call_output");
  EXPECT_EQ(resp["input"][2]["call_id"], "call_1");

  // The server holds the conversation: only the tool's output travels, after previous_response_id.
  json held = body_for("openai-responses", item, history, "server");
  EXPECT_EQ(held["previous_response_id"], "resp_1");
  ASSERT_EQ(held["input"].size(), 1u) << held.dump();
  EXPECT_EQ(held["input"][0]["type"], "function_call_output");

  // After a text answer the next turn is the new prompt.
  std::vector<Turn> plain = {Turn{"Hi", "Hello!", {}, "resp_9"}};
  json next = body_for("openai-responses", item, plain, "server");
  EXPECT_EQ(next["previous_response_id"], "resp_9");
  ASSERT_EQ(next["input"].size(), 1u);
  EXPECT_EQ(next["input"][0]["content"], "next question");
}

TEST(StructuredMixTest, RatioIsSeededAndIndependent) {
  StructuredConfig cfg;
  cfg.tools = "builtin";
  cfg.tool_ratio = 0.3;
  cfg.json_schema = "builtin";
  cfg.structured_ratio = 0.5;
  const StructuredMix a(cfg, 7), b(cfg, 7), c(cfg, 8);
  int tools = 0, format = 0, both = 0, differ = 0;
  constexpr int kN = 4000;
  for (int i = 0; i < kN; ++i) {
    const auto s = a.pick(static_cast<std::uint64_t>(i));
    const auto kind = [](const auto& p) { return p ? structured_kind(*p) : std::string(); };
    EXPECT_EQ(kind(s), kind(b.pick(static_cast<std::uint64_t>(i)))) << "same seed, same pick";
    if ((s == nullptr) != (c.pick(static_cast<std::uint64_t>(i)) == nullptr)) ++differ;
    if (s && s->has_tools()) ++tools;
    if (s && s->has_format()) ++format;
    if (s && s->has_tools() && s->has_format()) ++both;
  }
  EXPECT_NEAR(tools / double(kN), 0.3, 0.03);
  EXPECT_NEAR(format / double(kN), 0.5, 0.03);
  EXPECT_NEAR(both / double(kN), 0.15, 0.03) << "the two draws are independent";
  EXPECT_GT(differ, 0) << "another seed deals differently";
  EXPECT_EQ(a.describe()["tools"]["names"].size(), 4u);
}

TEST(StructuredMixTest, BadInputNamesTheFix) {
  StructuredConfig cfg;
  cfg.tools = "builtin";
  cfg.tool_choice = "fly";
  try {
    StructuredMix m(cfg, 0);
    FAIL() << "a tool choice naming no tool is refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("get_weather"), std::string::npos) << e.what();
  }
  cfg.tool_choice = "auto";
  cfg.tools = "/nonexistent/tools.json";
  EXPECT_THROW(StructuredMix(cfg, 0), ConfigError);
  EXPECT_THROW(parse_tools(json::parse(R"([{"type":"function","function":{"parameters":{}}}])"), "x"), ConfigError)
      << "a tool without a name";
  EXPECT_THROW(parse_tools(json::parse(R"([{"name":"a"},{"name":"a"}])"), "x"), ConfigError) << "duplicate names";
  EXPECT_THROW(parse_tools(json::parse(R"([{"type":"web_search"}])"), "x"), ConfigError) << "not a function tool";
  EXPECT_THROW(parse_tools(json::parse(R"([{"name":"a","parameters":{"type":"object","properties":{"s":{"type":"string","pattern":"(["}}}}])"), "x"),
               ConfigError)
      << "a pattern that does not compile is refused at start, not blamed on every response";
  // Each API's own form of a tool reads the same.
  const auto t = parse_tools(json::parse(R"([{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},
                                             {"type":"function","name":"b","parameters":{"type":"object"}},
                                             {"name":"c","input_schema":{"type":"object"}}])"),
                             "x");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[2].parameters, json({{"type", "object"}}));
}

TEST(StructuredWorkload, CustomRowsCarryTheirOwnTools) {
  const auto dir = std::filesystem::temp_directory_path() / ("llmload_structured_rows_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "rows.jsonl";
  {
    std::ofstream f(path);
    f << R"({"prompt":"weather?","tools":[{"type":"function","function":{"name":"w","parameters":{"type":"object","properties":{"c":{"type":"string"}},"required":["c"]}}}],"tool_choice":"auto"})"
      << "\n"
      << R"({"prompt":"a record","response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object","required":["x"]}}}})"
      << "\n"
      << R"({"prompt":"plain"})" << "\n";
  }
  WorkloadConfig wc;
  wc.dataset = "custom";
  wc.dataset_path = path.string();
  const auto w = make_workload(wc, 16, 8, std::nullopt, 0, TokenModel::builtin());
  const WorkItem a = w->item(0), b = w->item(1), c = w->item(2);
  ASSERT_TRUE(a.structured);
  EXPECT_EQ(a.structured->tool_choice, "auto");
  EXPECT_EQ(a.structured->tools.at(0).name, "w");
  ASSERT_TRUE(b.structured);
  EXPECT_EQ(b.structured->schema_name, "r");
  EXPECT_FALSE(c.structured);
  {
    std::ofstream f(path);
    f << R"({"prompt":"x","tool_choice":"auto"})" << "\n";
  }
  EXPECT_THROW(make_workload(wc, 16, 8, std::nullopt, 0, TokenModel::builtin()), ConfigError);
  std::filesystem::remove_all(dir);
}

TEST(StructuredSummary, CountsVerdictsOfMeasuredRequests) {
  std::vector<analysis::RequestRecord> recs(6);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    recs[i].index = i;
    recs[i].in_window = true;
    recs[i].structured = "tools";
  }
  recs[0].structured_verdict = "valid";
  recs[0].tool_call_names = {"a"};
  recs[1].structured_verdict = "valid";
  recs[1].tool_call_names = {"a", "b"};
  recs[2].structured_verdict = "invalid_json";
  recs[2].structured_error = "a arguments is not JSON";
  recs[3].structured_verdict = "text_answer";
  recs[4].error = analysis::ErrorClass::kHttpStatus;  // failed: asked, not judged
  recs[5].structured_verdict = "schema_violation";
  recs[5].warmup = true;  // warmup: not counted
  const auto s = analysis::summarize_structured_output(recs);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->requests, 5);
  EXPECT_EQ(s->judged, 4);
  EXPECT_EQ(s->valid, 2);
  EXPECT_EQ(s->invalid, 1);
  EXPECT_EQ(s->text_answers, 1);
  EXPECT_EQ(s->tool_calls, 3);
  ASSERT_TRUE(s->invalid_rate());
  EXPECT_DOUBLE_EQ(*s->invalid_rate(), 1.0 / 3.0);
  const json j = analysis::structured_output_json(s);
  EXPECT_EQ(j["by_verdict"]["invalid_json"], 1);
  EXPECT_EQ(j["examples"][0], "request 2: invalid_json: a arguments is not JSON");
  EXPECT_NE(analysis::structured_output_console(s).find("1 of 3 judged invalid"), std::string::npos);
  std::vector<analysis::RequestRecord> plain(2);
  EXPECT_FALSE(analysis::summarize_structured_output(plain)) << "no request asked: no section";
}

}  // namespace llmload::structured_test
