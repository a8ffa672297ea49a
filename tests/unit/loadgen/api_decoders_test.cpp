// One definition of "first token" across APIs (issue 19, docs/metrics.md "The first token"):
// which events of chat, the Responses API and the Anthropic Messages API carry output, which of
// them are answer (TTFO) rather than reasoning, and what is structural; usage and finish reasons
// of each; the bodies the two new backends send, with the Anthropic key header.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "decode_event.hpp"
#include "llmload/loadgen/request_builder.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using K = StreamUpdate::Kind;
using testing::dec;

TEST(FirstToken, ChatReasoningToolCallsAndStructuralChunks) {
  OpenAiStreamDecoder d(ApiKind::kChat, /*capture_text=*/true);
  auto u = dec(d, R"({"choices":[{"delta":{"role":"assistant","content":""}}]})");
  EXPECT_EQ(u.kind, K::kNoOutput) << "a role-only chunk is structural";
  u = dec(d, R"({"choices":[{"delta":{"reasoning_content":"Let me think"}}]})");
  EXPECT_EQ(u.kind, K::kOutput);
  EXPECT_FALSE(u.answer) << "reasoning is output, not answer";
  EXPECT_EQ(u.reasoning_text, "Let me think");
  u = dec(d, R"({"choices":[{"delta":{"reasoning":"more"}}]})");
  EXPECT_EQ(u.kind, K::kOutput);
  EXPECT_FALSE(u.answer);
  u = dec(d, R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":""}}]}}]})");
  EXPECT_EQ(u.kind, K::kOutput) << "a tool call's name is generated output";
  EXPECT_TRUE(u.answer);
  u = dec(d, R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]})");
  EXPECT_TRUE(u.answer);
  u = dec(d, R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]})");
  EXPECT_EQ(u.kind, K::kNoOutput) << "an empty argument delta carries nothing";
  u = dec(d, R"({"choices":[{"delta":{"content":"42"}}]})");
  EXPECT_TRUE(u.answer);
  // The fast path (no text captured) tells reasoning from answer too.
  OpenAiStreamDecoder fast(ApiKind::kChat);
  EXPECT_FALSE(dec(fast, R"({"choices":[{"delta":{"reasoning_content":"x"}}]})").answer);
  EXPECT_TRUE(dec(fast, R"({"choices":[{"delta":{"content":"x"}}]})").answer);
}

TEST(FirstToken, ReasoningTokensFromUsage) {
  OpenAiStreamDecoder d(ApiKind::kChat);
  auto u = dec(d,
               R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":30,"completion_tokens_details":{"reasoning_tokens":22}}})");
  ASSERT_TRUE(u.usage);
  EXPECT_EQ(u.usage->completion_tokens, 30);
  EXPECT_EQ(u.usage->reasoning_tokens, 22);
}

TEST(ResponsesApi, StreamEvents) {
  OpenAiStreamDecoder d(ApiKind::kResponses, /*capture_text=*/true);
  for (const char* structural :
       {R"({"type":"response.created","sequence_number":0,"response":{"id":"r1","status":"in_progress","output":[],"error":null}})",
        R"({"type":"response.in_progress","sequence_number":1,"response":{"id":"r1"}})",
        R"({"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}})",
        R"({"type":"response.content_part.added","item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}})",
        R"({"type":"response.output_text.done","item_id":"m","text":"Hello world"})"}) {
    EXPECT_EQ(dec(d, structural).kind, K::kNoOutput) << structural;
  }
  auto u = dec(d, R"({"type":"response.reasoning_text.delta","item_id":"rs","output_index":0,"content_index":0,"delta":"hmm"})");
  EXPECT_EQ(u.kind, K::kOutput);
  EXPECT_FALSE(u.answer);
  EXPECT_EQ(u.reasoning_text, "hmm");
  u = dec(d, R"({"type":"response.output_text.delta","item_id":"m","output_index":1,"content_index":0,"delta":"Hello","sequence_number":5})");
  EXPECT_EQ(u.kind, K::kOutput);
  EXPECT_TRUE(u.answer);
  EXPECT_EQ(u.text, "Hello");
  EXPECT_EQ(dec(d, R"({"type":"response.output_text.delta","delta":""})").kind, K::kNoOutput);
  u = dec(d, R"({"type":"response.function_call_arguments.delta","item_id":"f","delta":"{\"a\""})");
  EXPECT_TRUE(u.answer);
  EXPECT_TRUE(u.text.empty()) << "tool arguments are not answer text";
  u = dec(d,
          R"({"type":"response.completed","response":{"status":"completed","error":null,"usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":4},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":19}}})");
  EXPECT_EQ(u.kind, K::kDone);
  ASSERT_TRUE(u.usage);
  EXPECT_EQ(u.usage->prompt_tokens, 7);
  EXPECT_EQ(u.usage->completion_tokens, 12);
  EXPECT_EQ(u.usage->cached_tokens, 4);
  EXPECT_EQ(u.usage->reasoning_tokens, 3);
  EXPECT_EQ(u.finish_reason, "stop");
  u = dec(d, R"({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}})");
  EXPECT_EQ(u.finish_reason, "length");
  u = dec(d, R"({"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}})");
  EXPECT_EQ(u.kind, K::kError);
  EXPECT_EQ(u.message, "boom");
  u = dec(d, R"({"type":"error","code":"rate_limit","message":"slow down","param":null})");
  EXPECT_EQ(u.kind, K::kError);
  EXPECT_NE(u.message.find("slow down"), std::string::npos);
  EXPECT_EQ(dec(d, R"({"no_type":1})").kind, K::kMalformed);
}

TEST(ResponsesApi, WholeBody) {
  auto w = decode_whole_response(
      R"({"id":"r","object":"response","status":"completed","error":null,"output":[{"type":"reasoning","id":"rs","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":7}})",
      ApiKind::kResponses);
  ASSERT_TRUE(w.ok) << w.message;
  EXPECT_TRUE(w.has_output);
  EXPECT_TRUE(w.has_answer);
  EXPECT_EQ(w.text, "Hi");
  EXPECT_EQ(w.reasoning_text, "think");
  EXPECT_EQ(w.usage->reasoning_tokens, 1);
  EXPECT_EQ(w.finish_reason, "stop");
  EXPECT_FALSE(decode_whole_response(R"({"error":{"message":"bad model"}})", ApiKind::kResponses).ok);
}

TEST(AnthropicApi, StreamEvents) {
  OpenAiStreamDecoder d(ApiKind::kAnthropic, /*capture_text=*/true);
  auto u = dec(d,
               R"({"type":"message_start","message":{"id":"msg","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":6,"output_tokens":1}}})");
  EXPECT_EQ(u.kind, K::kNoOutput);
  EXPECT_EQ(dec(d, R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})").kind,
            K::kNoOutput);
  EXPECT_EQ(dec(d, R"({"type":"ping"})").kind, K::kNoOutput);
  u = dec(d, R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see"}})");
  EXPECT_EQ(u.kind, K::kOutput);
  EXPECT_FALSE(u.answer);
  EXPECT_EQ(u.reasoning_text, "Let me see");
  EXPECT_EQ(dec(d, R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}})").kind,
            K::kNoOutput);
  EXPECT_EQ(dec(d, R"({"type":"content_block_stop","index":0})").kind, K::kNoOutput);
  u = dec(d, R"({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}})");
  EXPECT_TRUE(u.answer);
  EXPECT_EQ(u.text, "Hello");
  u = dec(d, R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"q\":"}})");
  EXPECT_TRUE(u.answer);
  EXPECT_TRUE(u.text.empty());
  u = dec(d, R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":25}})");
  EXPECT_EQ(u.kind, K::kNoOutput);
  EXPECT_EQ(u.finish_reason, "length");
  ASSERT_TRUE(u.usage);
  EXPECT_EQ(u.usage->prompt_tokens, 16) << "input + cache reads";
  EXPECT_EQ(u.usage->cached_tokens, 6);
  EXPECT_EQ(u.usage->completion_tokens, 25);
  EXPECT_EQ(dec(d, R"({"type":"message_stop"})").kind, K::kDone);
  OpenAiStreamDecoder e(ApiKind::kAnthropic);
  u = dec(e, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  EXPECT_EQ(u.kind, K::kError);
  EXPECT_NE(u.message.find("Overloaded"), std::string::npos);
}

TEST(AnthropicApi, WholeBody) {
  auto w = decode_whole_response(
      R"({"id":"m","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Yes"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":5}})",
      ApiKind::kAnthropic);
  ASSERT_TRUE(w.ok) << w.message;
  EXPECT_TRUE(w.has_answer);
  EXPECT_EQ(w.text, "Yes");
  EXPECT_EQ(w.reasoning_text, "hm");
  EXPECT_EQ(w.usage->prompt_tokens, 9);
  EXPECT_EQ(w.usage->completion_tokens, 5);
  EXPECT_EQ(w.finish_reason, "stop");
}

// TTFO and reasoning tokens on the record: reasoning first, then the answer.
TEST(FirstToken, TrackerSetsTtfoAndCountsReasoning) {
  analysis::RequestRecord rec;
  rec.requested_output_tokens = 8;
  TrackerOptions o;
  o.api = ApiKind::kAnthropic;
  o.stream = true;
  RequestTracker t(rec, TimePoint(0s), o);
  t.on_sent(TimePoint(1s));
  t.on_headers(TimePoint(2s), 200, "text/event-stream");
  t.on_body(TimePoint(3s),
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n"
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"a\"}}\n\n");
  t.on_body(TimePoint(4s),
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"b\"}}\n\n");
  t.on_body(TimePoint(5s),
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"c\"}}\n\n"
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n"
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  t.on_complete(TimePoint(6s), TransportError{});
  const auto& r = t.record();
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.t_first, analysis::Nanos(3s));
  EXPECT_EQ(r.t_first_output, analysis::Nanos(5s));
  EXPECT_EQ(r.reasoning_tokens, 2);
  EXPECT_EQ(r.reasoning_tokens_source, "events");
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.input_tokens, 4);
  EXPECT_EQ(r.finish_reason, "stop");
}

// A 404 on the Responses or Messages route says the server may not serve that API, and names
// the way out; a --header of the key's name replaces llmload's own x-api-key (one per name).
TEST(NewBackends, WrongRouteHintAndKeyHeaderReplacement) {
  analysis::RequestRecord rec;
  rec.requested_output_tokens = 4;
  TrackerOptions o;
  o.api = ApiKind::kResponses;
  o.stream = true;
  RequestTracker t(rec, TimePoint(0s), o);
  t.on_sent(TimePoint(1s));
  t.on_headers(TimePoint(2s), 404, "application/json");
  t.on_body(TimePoint(2s), R"({"detail":"Not Found"})");
  t.on_complete(TimePoint(3s), TransportError{});
  EXPECT_EQ(t.record().error, analysis::ErrorClass::kHttpStatus);
  EXPECT_NE(t.record().error_message.find("no /v1/responses route"), std::string::npos) << t.record().error_message;
  EXPECT_NE(t.record().error_message.find("--backend openai-chat"), std::string::npos) << t.record().error_message;

  KeyFields k = key_fields(parse_backend("anthropic"), "sk-1");
  const HeaderFields merged = merge_fields(k.fields, {{"X-API-Key", "sk-2"}});
  int keys = 0;
  for (const auto& [name, value] : merged) {
    if (same_field_name(name, "x-api-key")) {
      ++keys;
      EXPECT_EQ(value, "sk-2");
    }
  }
  EXPECT_EQ(keys, 1);
  EXPECT_TRUE(k.bearer.empty()) << "no Bearer for the Messages API";
}

json body_for(const std::string& backend, const WorkItem& item) {
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.backend = backend;
  cfg.api_key = "sk-secret";
  RequestBuilder b(cfg, "", "h:1");
  const HttpRequest r = b.build(item);
  bool bearer = false, x_api_key = false;
  for (const auto& [k, v] : r.headers) {
    if (k == "Authorization") bearer = true;
    if (k == "x-api-key") x_api_key = v == "sk-secret";
  }
  EXPECT_EQ(bearer, backend != "anthropic") << backend;
  EXPECT_EQ(x_api_key, backend == "anthropic") << backend;
  EXPECT_EQ(r.target, backend == "anthropic" ? "/v1/messages" : "/v1/responses");
  EXPECT_EQ(r.body, b.dom_body(item)) << "the template path and the DOM path agree";
  return json::parse(r.body);
}

TEST(NewBackends, ResponsesAndMessagesBodies) {
  WorkItem item;
  item.prompt = "What is 2+2?";
  item.output_tokens = 9;
  json j = body_for("openai-responses", item);
  EXPECT_EQ(j["input"], "What is 2+2?");
  EXPECT_EQ(j["max_output_tokens"], 9);
  EXPECT_FALSE(j.contains("ignore_eos")) << "the Responses API takes no vLLM extensions";
  EXPECT_FALSE(j.contains("stream_options"));
  j = body_for("anthropic", item);
  EXPECT_EQ(j["max_tokens"], 9);
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["messages"][0]["content"], "What is 2+2?");
  EXPECT_FALSE(j.contains("ignore_eos"));
  // A row's system message goes to Anthropic's top-level system.
  item.messages = {{"system", "Be brief."}, {"user", "Hi"}};
  j = body_for("anthropic", item);
  EXPECT_EQ(j["system"], "Be brief.");
  ASSERT_EQ(j["messages"].size(), 1u);
  EXPECT_EQ(j["messages"][0]["content"], "Hi");
  j = body_for("openai-responses", item);
  ASSERT_TRUE(j["input"].is_array());
  EXPECT_EQ(j["input"][0]["role"], "system");
  EXPECT_EQ(parse_backend("messages").name, "anthropic");
  EXPECT_EQ(parse_backend("responses").default_path, "/v1/responses");
}

}  // namespace
}  // namespace llmload
