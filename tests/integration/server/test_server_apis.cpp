// The real llmload-server speaking the traffic of reasoning models, the OpenAI Responses API and
// the Anthropic Messages API (docs/server-apis.md): the streams' events on the wire and when they
// are written, the bodies, follow-ups by previous_response_id, the errors in each API's shape,
// x-api-key, injected faults, the same text for the same conversation on every endpoint, and the
// vllm:* metrics counting them all.
#include <chrono>
#include <cmath>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server_fixture.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::testing::server_apis_test {

using Clock = std::chrono::steady_clock;

const std::vector<std::string> kFast = {"--latency-model", "fixed", "--ttft", "2ms", "--itl", "1ms"};

struct Event {
  std::string name;
  json data;
};

/// "event: X\ndata: Y\n\n" events (data parsed; a bare data line has an empty name).
std::vector<Event> named_events(const std::string& body) {
  std::vector<Event> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const auto end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event at " << pos;
      break;
    }
    std::string block = body.substr(pos, end - pos);
    pos = end + 2;
    Event e;
    if (block.rfind("event: ", 0) == 0) {
      const auto nl = block.find('\n');
      e.name = block.substr(7, nl - 7);
      block = block.substr(nl + 1);
    }
    EXPECT_EQ(block.rfind("data: ", 0), 0u) << block;
    e.data = json::parse(block.substr(6), nullptr, false);
    out.push_back(std::move(e));
  }
  return out;
}

HttpResponse post(int port, const std::string& target, const json& body, const std::string& headers = "") {
  HttpConnection c(port);
  c.send_request("POST", target, body.dump(), headers);
  return c.read_response();
}

json chat_body(const std::string& content, int max_tokens, json extra = json::object()) {
  json b = {{"model", "llmload-mock"}, {"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", max_tokens}};
  b.update(extra);
  return b;
}

json responses_body(json input, int max_tokens, json extra = json::object()) {
  json b = {{"model", "llmload-mock"}, {"input", std::move(input)}, {"max_output_tokens", max_tokens}};
  b.update(extra);
  return b;
}

json messages_body(const std::string& content, int max_tokens, json extra = json::object()) {
  json b = {{"model", "llmload-mock"}, {"max_tokens", max_tokens}, {"messages", {{{"role", "user"}, {"content", content}}}}};
  b.update(extra);
  return b;
}

double metric(int port, const std::string& name, const std::string& labels = "") {
  const HttpResponse r = http_request(port, "GET", "/metrics");
  std::smatch m;
  if (!std::regex_search(r.body, m, std::regex("\n" + name + R"(\{[^}]*)" + labels + R"([^}]*\} ([0-9.e+]+)\n)"))) return -1;
  return std::stod(m[1]);
}

TEST(ServerApis, ChatReasoningStreamsReasoningThenContentWithTheGroundTruth) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "5ms", "--itl", "20ms", "--reasoning-tokens", "3",
                              "--reasoning-field", "reasoning"});
  const HttpResponse r = post(server.port, "/v1/chat/completions",
                              chat_body("hello there", 5, {{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = named_events(r.body);
  ASSERT_EQ(events.size(), 1u + 5 + 2);
  for (std::size_t k = 0; k < 5; ++k) {
    const json& delta = events[1 + k].data["choices"][0]["delta"];
    EXPECT_TRUE(delta.contains(k < 3 ? "reasoning" : "content")) << delta.dump();
  }
  const json& truth = events[5].data["llmload"];
  // Token 3, the first answer token, is due 5 ms + 3 ITLs after the start and never written
  // earlier; token 0 may be late (a stalled server writes the overdue tokens at once), so the
  // first answer token is only after it, not a fixed gap after it.
  EXPECT_GE(truth["first_output_token_s"].get<double>(), 0.005 + 3 * 0.020 - 0.001);
  EXPECT_GT(truth["first_output_token_s"].get<double>(), truth["first_token_s"].get<double>());
  EXPECT_EQ(events[6].data["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
  EXPECT_EQ(events[6].data["usage"]["completion_tokens"], 5);

  // Per request: off, and by effort.
  const json off = json::parse(post(server.port, "/v1/chat/completions",
                                    chat_body("hello there", 5, {{"chat_template_kwargs", {{"enable_thinking", false}}}}))
                                   .body);
  EXPECT_FALSE(off["choices"][0]["message"].contains("reasoning"));
  EXPECT_EQ(off["llmload"]["first_output_token_s"], off["llmload"]["first_token_s"]);
  const json low = json::parse(post(server.port, "/v1/chat/completions",
                                    chat_body("hello there", 5, {{"reasoning_effort", "low"}})).body);
  EXPECT_EQ(low["usage"]["completion_tokens_details"]["reasoning_tokens"], 1);
  EXPECT_TRUE(low["choices"][0]["message"]["reasoning"].is_string());
  expect_clean_exit(server);
}

TEST(ServerApis, ResponsesStreamWritesStructuralEventsAtOnceThenTokens) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "1s", "--itl", "1ms", "--reasoning-tokens", "2"});
  HttpConnection c(server.port);
  c.send_request("POST", "/v1/responses", responses_body("hello", 4, {{"stream", true}}).dump());
  const HttpResponse head = c.read_head();
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-type"), "text/event-stream");
  const TimedChunk first = c.next_chunk();
  std::string body = first.data;
  std::optional<Clock::time_point> first_delta;  // when the first token's chunk arrived
  for (TimedChunk ch = c.next_chunk(); !ch.data.empty(); ch = c.next_chunk()) {
    if (!first_delta && ch.data.find("delta") != std::string::npos) first_delta = ch.arrived;
    body += ch.data;
  }
  // The structural events at once, the first token after the TTFT (1 s): well apart.
  ASSERT_TRUE(first_delta.has_value()) << body;
  EXPECT_GT(*first_delta - first.arrived, std::chrono::milliseconds(500));
  const auto events = named_events(body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events[0].name, "response.created");
  EXPECT_EQ(events[1].name, "response.in_progress");
  EXPECT_EQ(first.data.find("delta"), std::string::npos) << first.data;
  std::string reasoning;
  std::string text;
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].name, events[i].data["type"]);
    EXPECT_EQ(events[i].data["sequence_number"], i);
    if (events[i].name == "response.reasoning_text.delta") reasoning += events[i].data["delta"].get<std::string>();
    if (events[i].name == "response.output_text.delta") text += events[i].data["delta"].get<std::string>();
  }
  EXPECT_EQ(body.find("[DONE]"), std::string::npos);
  const json& done = events.back().data;
  // max_output_tokens 4 cut the answer: OpenAI ends such a stream with response.incomplete.
  ASSERT_EQ(done["type"], "response.incomplete");
  const json& response = done["response"];
  EXPECT_EQ(response["status"], "incomplete");
  EXPECT_EQ(response["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(response["output"][0]["content"][0]["text"], reasoning);
  EXPECT_EQ(response["output"][1]["content"][0]["text"], text);
  EXPECT_EQ(response["usage"]["output_tokens"], 4);
  EXPECT_EQ(response["usage"]["output_tokens_details"]["reasoning_tokens"], 2);
  EXPECT_GE(response["llmload"]["first_output_token_s"].get<double>(), response["llmload"]["first_token_s"].get<double>());
  expect_clean_exit(server);
}

TEST(ServerApis, ResponsesFollowUpsAndErrors) {
  auto server = start_server(kFast);
  const HttpResponse first = post(server.port, "/v1/responses",
                                  responses_body(json::array({{{"role", "user"}, {"content", "one two three"}}}), 4,
                                                 {{"instructions", "be brief"}}));
  ASSERT_EQ(first.status, 200) << first.body;
  const json r1 = json::parse(first.body);
  EXPECT_EQ(r1["usage"]["input_tokens"], 2 + 3);
  EXPECT_EQ(r1["output"][0]["type"], "message");
  const std::string id = r1["id"];
  EXPECT_EQ(id.rfind("resp_", 0), 0u);

  // The follow-up's prompt holds the earlier turn (input and output, not the instructions).
  const json r2 = json::parse(post(server.port, "/v1/responses",
                                   responses_body("four five", 3, {{"previous_response_id", id}, {"stream", false}}))
                                  .body);
  EXPECT_EQ(r2["usage"]["input_tokens"], 3 + 4 + 2);
  EXPECT_EQ(r2["previous_response_id"], id);
  // Streamed responses are remembered too.
  const HttpResponse streamed = post(server.port, "/v1/responses",
                                     responses_body("six", 2, {{"previous_response_id", r2["id"]}, {"stream", true}}));
  const json r3 = named_events(streamed.body).back().data["response"];
  EXPECT_EQ(r3["usage"]["input_tokens"], 3 + 4 + 2 + 3 + 1);
  const json r4 = json::parse(post(server.port, "/v1/responses",
                                   responses_body("seven", 2, {{"previous_response_id", r3["id"]}})).body);
  EXPECT_EQ(r4["usage"]["input_tokens"], 3 + 4 + 2 + 3 + 1 + 2 + 1);
  // store: false is not remembered.
  const json unstored = json::parse(post(server.port, "/v1/responses", responses_body("x", 2, {{"store", false}})).body);
  const json e = expect_api_error(post(server.port, "/v1/responses",
                                       responses_body("y", 2, {{"previous_response_id", unstored["id"]}})),
                                  400, "BadRequestError");
  EXPECT_EQ(e["param"], "previous_response_id");
  expect_api_error(post(server.port, "/v1/responses", json{{"model", "llmload-mock"}}), 400, "BadRequestError");
  expect_api_error(post(server.port, "/v1/responses", responses_body("x", 2, {{"model", "nope"}})), 404, "NotFoundError");
  expect_api_error(post(server.port, "/v1/responses", responses_body("x", 2, {{"tools", {{{"type", "function"}}}}})), 400,
                   "BadRequestError");
  expect_clean_exit(server);
}

TEST(ServerApis, MessagesStreamWithThinkingAndBody) {
  auto server = start_server({"--profile", "tiny"});
  const HttpResponse r = post(server.port, "/v1/messages",
                              messages_body("hello there", 6,
                                            {{"stream", true}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 2}}}}),
                              "anthropic-version: 2023-06-01\r\n");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto events = named_events(r.body);
  std::vector<std::string> names;
  std::string thinking;
  std::string text;
  for (const auto& e : events) {
    names.push_back(e.name);
    EXPECT_EQ(e.name, e.data["type"]);
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "thinking_delta") thinking += e.data["delta"]["thinking"];
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "text_delta") text += e.data["delta"]["text"];
  }
  const std::vector<std::string> expected = {
      "message_start",       "ping",                "content_block_start", "content_block_delta",
      "content_block_delta", "content_block_delta", "content_block_stop",  "content_block_start",
      "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta",
      "content_block_stop",  "message_delta",       "message_stop"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(events[0].data["message"]["usage"]["input_tokens"], 2);
  const json& delta = events[13].data;
  EXPECT_EQ(delta["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(delta["usage"]["output_tokens"], 6);
  EXPECT_EQ(delta["usage"]["output_tokens_details"]["thinking_tokens"], 2);
  EXPECT_EQ(delta["usage"]["input_tokens"].get<int>() + delta["usage"]["cache_read_input_tokens"].get<int>(), 2);
  EXPECT_TRUE(delta["llmload"]["first_output_token_s"].is_number());

  // Not streamed: the same thinking and text (the same conversation gives the same output).
  const json body = json::parse(post(server.port, "/v1/messages",
                                     messages_body("hello there", 6, {{"thinking", {{"type", "enabled"}, {"budget_tokens", 2}}}}))
                                    .body);
  EXPECT_EQ(body["content"][0]["thinking"], thinking);
  EXPECT_EQ(body["content"][1]["text"], text);
  EXPECT_EQ(body["stop_reason"], "max_tokens");
  // An arithmetic question is answered and ends the turn.
  const json answered = json::parse(post(server.port, "/v1/messages", messages_body("What is 6 * 7?", 64)).body);
  EXPECT_EQ(answered["stop_reason"], "end_turn");
  EXPECT_NE(answered["content"][0]["text"].get<std::string>().find("42"), std::string::npos);
  expect_clean_exit(server);
}

TEST(ServerApis, MessagesErrorsAuthAndFaultsInAnthropicShape) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "2ms", "--itl", "1ms", "--api-key", "sk-test"});
  auto anthropic_error = [](const HttpResponse& r, int status, const std::string& type) {
    EXPECT_EQ(r.status, status) << r.body;
    const json b = json::parse(r.body, nullptr, false);
    EXPECT_EQ(b.value("type", ""), "error") << r.body;
    EXPECT_EQ(b["error"].value("type", ""), type) << r.body;
    return b;
  };
  const json body = messages_body("hi", 3);
  anthropic_error(post(server.port, "/v1/messages", body), 401, "authentication_error");
  const json wrong = anthropic_error(post(server.port, "/v1/messages", body, "x-api-key: nope\r\n"), 401,
                                     "authentication_error");
  EXPECT_EQ(wrong.dump().find("nope"), std::string::npos);
  const std::string key = "x-api-key: sk-test\r\nanthropic-version: 2023-06-01\r\n";
  EXPECT_EQ(post(server.port, "/v1/messages", body, key).status, 200);
  EXPECT_EQ(post(server.port, "/v1/messages", body, "Authorization: Bearer sk-test\r\n").status, 200);
  EXPECT_EQ(post(server.port, "/v1/chat/completions", chat_body("hi", 2), "x-api-key: sk-test\r\n").status, 200);
  anthropic_error(post(server.port, "/v1/messages", json{{"model", "llmload-mock"}, {"messages", json::array()}}, key), 400,
                  "invalid_request_error");
  anthropic_error(post(server.port, "/v1/messages", messages_body("hi", 3, {{"model", "claude-x"}}), key), 404,
                  "not_found_error");
  anthropic_error(post(server.port, "/v1/messages", body, key + "X-Llmload-Fault: error=529\r\n"), 529,
                  "overloaded_error");
  anthropic_error(post(server.port, "/v1/messages", body, key + "X-Llmload-Fault: bogus\r\n"), 400,
                  "invalid_request_error");
  // A malformed event keeps the stream's event name, so an Anthropic client reads (and rejects) it.
  const HttpResponse malformed = post(server.port, "/v1/messages", messages_body("hi", 3, {{"stream", true}}),
                                      key + "X-Llmload-Fault: malformed@1\r\n");
  EXPECT_NE(malformed.body.find("event: content_block_delta\ndata: {\"id\":\"injected-malformed-event\""),
            std::string::npos)
      << malformed.body;
  expect_clean_exit(server);
}

TEST(ServerApis, InjectedStreamErrorsInEachApisShape) {
  auto server = start_server(kFast);
  const std::string fault = "X-Llmload-Fault: stream-error=529@2\r\n";
  // Messages: two text deltas, then `event: error` with Anthropic's overloaded_error; no message_stop.
  const HttpResponse m = post(server.port, "/v1/messages", messages_body("hi", 5, {{"stream", true}}), fault);
  ASSERT_EQ(m.status, 200);
  auto events = named_events(m.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(events.back().data["error"]["type"], "overloaded_error");
  int deltas = 0;
  for (const auto& e : events) deltas += e.name == "content_block_delta" ? 1 : 0;
  EXPECT_EQ(deltas, 2);
  EXPECT_EQ(m.body.find("message_stop"), std::string::npos);
  // Responses: `event: error` whose sequence number follows the events before it.
  const HttpResponse r = post(server.port, "/v1/responses", responses_body("hi", 5, {{"stream", true}}), fault);
  events = named_events(r.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(events.back().data["code"], "server_error");
  EXPECT_EQ(events.back().data["sequence_number"], events.size() - 1);
  // Chat: vLLM's data: {"error":..} then [DONE].
  const HttpResponse c = post(server.port, "/v1/chat/completions", chat_body("hi", 5, {{"stream", true}}), fault);
  const auto payloads = sse_payloads(c.body);
  ASSERT_GE(payloads.size(), 2u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  EXPECT_EQ(json::parse(payloads[payloads.size() - 2])["error"]["code"], 529);
  // Not streamed: the status, in the API's shape.
  const HttpResponse plain = post(server.port, "/v1/messages", messages_body("hi", 5), fault);
  EXPECT_EQ(plain.status, 529);
  EXPECT_EQ(json::parse(plain.body)["error"]["type"], "overloaded_error");
  EXPECT_EQ(metric(server.port, "vllm:request_success_total", R"(finished_reason="abort")"), 3);
  expect_clean_exit(server);
}

TEST(ServerApis, OneConversationOneTextOnEveryEndpointAndTheMetricsCountThemAll) {
  auto server = start_server({"--profile", "tiny", "--reasoning-tokens", "4"});
  const std::string prompt = "Describe the harbour at dawn";
  const json chat = json::parse(post(server.port, "/v1/chat/completions", chat_body(prompt, 10)).body);
  const json resp = json::parse(post(server.port, "/v1/responses", responses_body(prompt, 10)).body);
  const json msg = json::parse(post(server.port, "/v1/messages",
                                    messages_body(prompt, 10, {{"thinking", {{"type", "enabled"}, {"budget_tokens", 8}}}}))
                                   .body);
  const std::string content = chat["choices"][0]["message"]["content"];
  const std::string reasoning = chat["choices"][0]["message"]["reasoning_content"];
  EXPECT_EQ(resp["output"][0]["content"][0]["text"], reasoning);
  EXPECT_EQ(resp["output"][1]["content"][0]["text"], content);
  EXPECT_EQ(msg["content"][0]["thinking"], reasoning);
  EXPECT_EQ(msg["content"][1]["text"], content);
  EXPECT_EQ(metric(server.port, "vllm:request_success_total", R"(finished_reason="length")"), 3);
  EXPECT_EQ(metric(server.port, "vllm:generation_tokens_total"), 30);  // reasoning tokens are generated tokens
  expect_clean_exit(server);
}

}  // namespace llmload::testing::server_apis_test
