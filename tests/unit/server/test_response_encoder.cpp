#include "llmload/server/response_encoder.hpp"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/json.hpp"
#include "llmload/server/mock_tokenizer.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

GenerationJob make_job(Endpoint endpoint, std::int64_t max_tokens, bool include_usage = false,
                       bool continuous = false) {
  GenerationJob job;
  job.request.endpoint = endpoint;
  job.request.model = "llmload-mock";
  job.request.prompt_tokens = 4;
  job.request.max_tokens = max_tokens;
  job.request.stream = true;
  job.request.include_usage = include_usage;
  job.request.continuous_usage = continuous;
  job.id = endpoint == Endpoint::kChat ? "chatcmpl-abc" : "cmpl-abc";
  job.created_unix = 1700000000;
  return job;
}

/// The data payloads of unframed SSE text; fails on anything that is not "data: ...\n\n".
std::vector<std::string> payloads(const std::string& sse) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    const auto end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event";
    if (end == std::string::npos) break;
    const std::string event = sse.substr(pos, end - pos);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

/// The request's output as the encoder makes it without an engine (every token at batch 1).
std::shared_ptr<const OutputSequence> played(const GenerationJob& job) {
  auto out = std::make_shared<OutputSequence>(job, 0);
  out->play_alone();
  return out;
}

std::string text_of(const GenerationJob& job) {
  std::string text;
  played(job)->append_text(text, job.request.max_tokens);
  return text;
}

/// All events of a whole stream, token by token.
std::vector<std::string> stream_payloads(const GenerationJob& job) {
  const ResponseEncoder enc(job);
  std::string sse;
  for (std::int64_t k = 0; k < job.request.max_tokens; ++k) enc.append_token_events(k, sse, Framing::kNone);
  return payloads(sse);
}

void expect_header_fields(const json& chunk, const std::string& object, const std::string& id) {
  EXPECT_EQ(chunk.at("id"), id);
  EXPECT_EQ(chunk.at("object"), object);
  EXPECT_EQ(chunk.at("created"), 1700000000);
  EXPECT_EQ(chunk.at("model"), "llmload-mock");
}

TEST(ResponseEncoder, CompletionStreamOneChunkPerTokenThenDone) {
  const auto events = stream_payloads(make_job(Endpoint::kCompletions, 3));
  ASSERT_EQ(events.size(), 4u);
  for (std::int64_t k = 0; k < 3; ++k) {
    const json c = json::parse(events[static_cast<std::size_t>(k)]);
    expect_header_fields(c, "text_completion", "cmpl-abc");
    ASSERT_EQ(c.at("choices").size(), 1u);
    const json& choice = c["choices"][0];
    EXPECT_EQ(choice.at("index"), 0);
    EXPECT_EQ(choice.at("text"), std::string(played(make_job(Endpoint::kCompletions, 3))->token_text(k)));
    EXPECT_TRUE(choice.at("logprobs").is_null());
    EXPECT_TRUE(choice.at("stop_reason").is_null());
    if (k < 2) {
      EXPECT_TRUE(choice.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(choice.at("finish_reason"), "length");
    }
    EXPECT_FALSE(c.contains("usage"));
  }
  EXPECT_EQ(events[3], "[DONE]");
}

TEST(ResponseEncoder, CompletionUsageChunkHasEmptyChoices) {
  const auto events = stream_payloads(make_job(Endpoint::kCompletions, 2, /*include_usage=*/true));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_FALSE(json::parse(events[0]).contains("usage"));
  const json usage_chunk = json::parse(events[2]);
  expect_header_fields(usage_chunk, "text_completion", "cmpl-abc");
  EXPECT_EQ(usage_chunk.at("choices"), json::array());
  EXPECT_EQ(usage_chunk.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":2,"total_tokens":6})"));
  EXPECT_EQ(events[3], "[DONE]");
}

TEST(ResponseEncoder, ContinuousUsageOnEveryChunk) {
  const auto events = stream_payloads(make_job(Endpoint::kCompletions, 3, true, true));
  ASSERT_EQ(events.size(), 5u);
  for (std::int64_t k = 0; k < 3; ++k) {
    const json u = json::parse(events[static_cast<std::size_t>(k)]).at("usage");
    EXPECT_EQ(u.at("prompt_tokens"), 4);
    EXPECT_EQ(u.at("completion_tokens"), k + 1);
    EXPECT_EQ(u.at("total_tokens"), 4 + k + 1);
  }
  EXPECT_EQ(json::parse(events[3]).at("usage").at("completion_tokens"), 3);
}

TEST(ResponseEncoder, ChatFirstTokenCarriesTheRoleChunk) {
  const GenerationJob job = make_job(Endpoint::kChat, 3);
  const ResponseEncoder enc(job);
  std::string first;
  enc.append_token_events(0, first, Framing::kNone);
  const auto events = payloads(first);
  ASSERT_EQ(events.size(), 2u) << "role chunk and first content chunk travel together";
  const json role = json::parse(events[0]);
  expect_header_fields(role, "chat.completion.chunk", "chatcmpl-abc");
  EXPECT_EQ(role["choices"][0].at("delta"), json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_TRUE(role["choices"][0].at("finish_reason").is_null());
  EXPECT_TRUE(role["choices"][0].at("logprobs").is_null());
  EXPECT_FALSE(role["choices"][0].contains("stop_reason")) << "unset fields are omitted";
  const json content = json::parse(events[1]);
  EXPECT_EQ(content["choices"][0].at("delta"), (json{{"content", played(job)->token_text(0)}}));
}

TEST(ResponseEncoder, ChatStreamExactlyMaxTokensContentDeltasLastHasLength) {
  const auto events = stream_payloads(make_job(Endpoint::kChat, 5));
  ASSERT_EQ(events.size(), 1u + 5u + 1u);
  int content_deltas = 0;
  std::string text;
  for (std::size_t i = 1; i <= 5; ++i) {
    const json c = json::parse(events[i]);
    expect_header_fields(c, "chat.completion.chunk", "chatcmpl-abc");
    const json& choice = c["choices"][0];
    EXPECT_FALSE(choice.at("delta").contains("role"));
    const std::string piece = choice.at("delta").at("content");
    ASSERT_FALSE(piece.empty());
    ++content_deltas;
    text += piece;
    if (i < 5) {
      EXPECT_TRUE(choice.at("finish_reason").is_null());
      EXPECT_FALSE(choice.contains("stop_reason"));
    } else {
      EXPECT_EQ(choice.at("finish_reason"), "length");
      EXPECT_TRUE(choice.at("stop_reason").is_null());
    }
  }
  EXPECT_EQ(content_deltas, 5);
  EXPECT_EQ(count_words(text), 5);
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST(ResponseEncoder, ChatUsageChunkAndContinuousUsageStartAtZero) {
  const auto events = stream_payloads(make_job(Endpoint::kChat, 2, true, true));
  ASSERT_EQ(events.size(), 1u + 2u + 1u + 1u);
  EXPECT_EQ(json::parse(events[0]).at("usage").at("completion_tokens"), 0);
  EXPECT_EQ(json::parse(events[1]).at("usage").at("completion_tokens"), 1);
  EXPECT_EQ(json::parse(events[2]).at("usage").at("completion_tokens"), 2);
  const json usage_chunk = json::parse(events[3]);
  EXPECT_EQ(usage_chunk.at("choices"), json::array());
  EXPECT_EQ(usage_chunk.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":2,"total_tokens":6})"));
  EXPECT_EQ(events[4], "[DONE]");
}

TEST(ResponseEncoder, SingleTokenChatStream) {
  const auto events = stream_payloads(make_job(Endpoint::kChat, 1, true));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(json::parse(events[1])["choices"][0].at("finish_reason"), "length");
  EXPECT_EQ(json::parse(events[2]).at("choices"), json::array());
  EXPECT_EQ(events[3], "[DONE]");
}

TEST(ResponseEncoder, ChunkedFramingPutsEachEventInItsOwnChunk) {
  const GenerationJob job = make_job(Endpoint::kChat, 1, true);
  const ResponseEncoder enc(job);
  std::string wire;
  enc.append_token_events(0, wire, Framing::kChunked);
  std::string unframed;
  enc.append_token_events(0, unframed, Framing::kNone);
  std::vector<std::string> chunks;
  std::size_t pos = 0;
  while (pos < wire.size()) {
    const auto crlf = wire.find("\r\n", pos);
    ASSERT_NE(crlf, std::string::npos);
    const std::size_t size = std::stoul(wire.substr(pos, crlf - pos), nullptr, 16);
    chunks.push_back(wire.substr(crlf + 2, size));
    ASSERT_EQ(wire.substr(crlf + 2 + size, 2), "\r\n");
    pos = crlf + 2 + size + 2;
  }
  ASSERT_EQ(chunks.size(), 4u);
  std::string joined;
  for (const auto& c : chunks) {
    EXPECT_EQ(payloads(c).size(), 1u);
    joined += c;
  }
  EXPECT_EQ(joined, unframed);
}

TEST(ResponseEncoder, EscapesModelAndIdInChunks) {
  GenerationJob job = make_job(Endpoint::kCompletions, 1);
  job.request.model = "we\"ird\\model\n\xc3\xa9";
  const auto events = stream_payloads(job);
  EXPECT_EQ(json::parse(events[0]).at("model"), job.request.model);
}

TEST(ResponseEncoder, NonStreamingCompletionBody) {
  GenerationJob job = make_job(Endpoint::kCompletions, 7);
  job.request.stream = false;
  const json body = json::parse(ResponseEncoder(job).full_body());
  EXPECT_EQ(body.at("id"), "cmpl-abc");
  EXPECT_EQ(body.at("object"), "text_completion");
  EXPECT_EQ(body.at("created"), 1700000000);
  EXPECT_EQ(body.at("model"), "llmload-mock");
  ASSERT_EQ(body.at("choices").size(), 1u);
  const json& choice = body["choices"][0];
  EXPECT_EQ(count_words(choice.at("text").get<std::string>()), 7);
  EXPECT_EQ(choice.at("text"), text_of(job));
  EXPECT_EQ(choice.at("finish_reason"), "length");
  EXPECT_TRUE(choice.at("logprobs").is_null());
  EXPECT_EQ(body.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":7,"total_tokens":11})"));
}

TEST(ResponseEncoder, NonStreamingChatBody) {
  GenerationJob job = make_job(Endpoint::kChat, 3);
  job.request.stream = false;
  const json body = json::parse(ResponseEncoder(job).full_body());
  EXPECT_EQ(body.at("object"), "chat.completion");
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice.at("message"), (json{{"role", "assistant"}, {"content", text_of(job)}}));
  EXPECT_EQ(choice.at("finish_reason"), "length");
  EXPECT_EQ(body.at("usage").at("total_tokens"), 7);
}

// ---- server ground truth ("llmload") and cached tokens ------------------------------------------

RequestOutcome make_outcome(std::int64_t cached = 0) {
  RequestOutcome o;
  o.timing.arrival_unix_ns = 1700000000123456789;
  o.timing.queue_s = 0.25;
  o.timing.first_token_s = 0.5;
  o.timing.first_output_token_s = 0.5;  // no reasoning: the first token is the first output token
  o.timing.last_token_s = 1.75;
  o.cached_tokens = cached;
  o.preemptions = 2;
  return o;
}

void expect_llmload(const json& j) {
  EXPECT_EQ(j, json::parse(R"({"arrival_unix_ns":1700000000123456789,"queue_s":0.25,"first_token_s":0.5,
                               "first_output_token_s":0.5,"last_token_s":1.75,"preemptions":2,"cached_tokens":3})"));
}

/// A whole stream with the outcome given to the last token only (as the HTTP layer does).
std::vector<std::string> stream_with_outcome(const GenerationJob& job, const RequestOutcome& outcome) {
  const ResponseEncoder enc(job);
  std::string sse;
  for (std::int64_t k = 0; k < job.request.max_tokens; ++k) {
    enc.append_token_events(k, sse, Framing::kNone, k + 1 == job.request.max_tokens ? &outcome : nullptr);
  }
  return payloads(sse);
}

TEST(ResponseEncoder, LastCompletionChunkCarriesLlmloadAndUsageChunkCachedTokens) {
  const auto events = stream_with_outcome(make_job(Endpoint::kCompletions, 3, /*include_usage=*/true),
                                          make_outcome(/*cached=*/3));
  ASSERT_EQ(events.size(), 5u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_FALSE(json::parse(events[i]).contains("llmload"));
  const json last = json::parse(events[2]);
  EXPECT_EQ(last["choices"][0].at("finish_reason"), "length");
  expect_llmload(last.at("llmload"));
  const json usage = json::parse(events[3]);
  EXPECT_FALSE(usage.contains("llmload"));
  EXPECT_EQ(usage.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":3,"total_tokens":7,
                                                "prompt_tokens_details":{"cached_tokens":3}})"));
  EXPECT_EQ(events[4], "[DONE]");
}

TEST(ResponseEncoder, NoCachedTokensNoDetails) {
  const auto events = stream_with_outcome(make_job(Endpoint::kChat, 2, true), make_outcome(/*cached=*/0));
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(json::parse(events[2]).at("llmload").at("cached_tokens"), 0);
  EXPECT_FALSE(json::parse(events[3]).at("usage").contains("prompt_tokens_details"));
}

TEST(ResponseEncoder, LastChatChunkCarriesLlmloadAfterContinuousUsage) {
  const auto events = stream_with_outcome(make_job(Endpoint::kChat, 2, true, true), make_outcome(3));
  ASSERT_EQ(events.size(), 1u + 2u + 1u + 1u);
  EXPECT_FALSE(json::parse(events[0]).contains("llmload")) << "not on the role chunk";
  EXPECT_FALSE(json::parse(events[1]).contains("llmload"));
  const json last = json::parse(events[2]);
  EXPECT_EQ(last["choices"][0].at("finish_reason"), "length");
  EXPECT_EQ(last.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":2,"total_tokens":6})"))
      << "per-chunk usage has no details, as in vLLM";
  expect_llmload(last.at("llmload"));
  EXPECT_EQ(json::parse(events[3]).at("usage").at("prompt_tokens_details").at("cached_tokens"), 3);
}

TEST(ResponseEncoder, SingleTokenStreamsTakeTheOutcome) {
  const auto chat = stream_with_outcome(make_job(Endpoint::kChat, 1), make_outcome(3));
  ASSERT_EQ(chat.size(), 3u);
  EXPECT_FALSE(json::parse(chat[0]).contains("llmload"));
  expect_llmload(json::parse(chat[1]).at("llmload"));
  const auto cmpl = stream_with_outcome(make_job(Endpoint::kCompletions, 1), make_outcome(3));
  ASSERT_EQ(cmpl.size(), 2u);
  expect_llmload(json::parse(cmpl[0]).at("llmload"));
}

TEST(ResponseEncoder, WithoutOutcomeTheStreamIsUnchanged) {
  const GenerationJob job = make_job(Endpoint::kChat, 3, true, true);
  const ResponseEncoder enc(job);
  std::string with_null;
  std::string with_default;
  for (std::int64_t k = 0; k < 3; ++k) {
    enc.append_token_events(k, with_null, Framing::kNone, nullptr);
    enc.append_token_events(k, with_default, Framing::kNone);
  }
  EXPECT_EQ(with_null, with_default);
  EXPECT_EQ(with_null.find("\"llmload\":"), std::string::npos);
  EXPECT_EQ(with_null.find("prompt_tokens_details"), std::string::npos);
}

TEST(ResponseEncoder, NonStreamingBodiesCarryOutcome) {
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChat}) {
    GenerationJob job = make_job(endpoint, 3);
    job.request.stream = false;
    const json body = json::parse(ResponseEncoder(job).full_body(make_outcome(3)));
    EXPECT_EQ(body.at("usage"), json::parse(R"({"prompt_tokens":4,"completion_tokens":3,"total_tokens":7,
                                                "prompt_tokens_details":{"cached_tokens":3}})"));
    expect_llmload(body.at("llmload"));
    const json plain = json::parse(ResponseEncoder(job).full_body());
    EXPECT_FALSE(plain.contains("llmload"));
    EXPECT_FALSE(plain.at("usage").contains("prompt_tokens_details"));
    EXPECT_FALSE(json::parse(ResponseEncoder(job).full_body(make_outcome(0))).at("usage").contains(
        "prompt_tokens_details"));
  }
}

TEST(ResponseEncoder, LlmloadJsonNonFiniteIsNull) {
  RequestOutcome o;
  o.timing.queue_s = std::numeric_limits<double>::infinity();
  const json j = json::parse(llmload_json(o));
  EXPECT_TRUE(j.at("queue_s").is_null());
  EXPECT_EQ(j.at("first_token_s"), 0.0);
}

// ---- errors after the stream started ------------------------------------------------------------

TEST(ResponseEncoder, ErrorEventThenDone) {
  const ApiError error{500, "engine failed", std::nullopt};
  std::string sse;
  ResponseEncoder(make_job(Endpoint::kChat, 3)).append_error_event(sse, error, Framing::kNone);
  auto events = payloads(sse);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(json::parse(events[0]), json::parse(R"({"error":{"message":"engine failed","type":"InternalServerError",
                                                             "param":null,"code":500}})"));
  EXPECT_EQ(events[1], "[DONE]");

  GenerationJob gen = make_job(Endpoint::kGenerate, 3);
  std::string sg;
  ResponseEncoder(gen).append_error_event(sg, error, Framing::kChunked);
  EXPECT_EQ(sg.rfind("2d\r\ndata: {\"error\":{\"message\":\"engine failed\"}}\n\n\r\n", 0), 0u) << sg;
  EXPECT_NE(sg.find("data: [DONE]\n\n\r\n"), std::string::npos);
}

// ---- SGLang /generate ---------------------------------------------------------------------------

GenerationJob generate_job(std::int64_t max_tokens, bool stream = true) {
  GenerationJob job = make_job(Endpoint::kGenerate, max_tokens);
  job.request.stream = stream;
  job.id = "rid-\"1\"";
  return job;
}

TEST(ResponseEncoder, GenerateStreamTextIsCumulative) {
  const auto events = stream_payloads(generate_job(4));
  const auto out = played(generate_job(4));
  ASSERT_EQ(events.size(), 5u);
  std::string expected_text;
  for (std::int64_t k = 0; k < 4; ++k) {
    const json e = json::parse(events[static_cast<std::size_t>(k)]);
    expected_text += out->token_text(k);
    EXPECT_EQ(e.at("text"), expected_text) << "text holds every token so far, not a delta";
    ASSERT_EQ(e.at("output_ids").size(), static_cast<std::size_t>(k + 1));
    EXPECT_EQ(e.at("output_ids").back(), out->token_id(k));
    const json& meta = e.at("meta_info");
    EXPECT_EQ(meta.at("id"), "rid-\"1\"");
    EXPECT_EQ(meta.at("prompt_tokens"), 4);
    EXPECT_EQ(meta.at("completion_tokens"), k + 1);
    EXPECT_EQ(meta.at("cached_tokens"), 0);
    if (k < 3) {
      EXPECT_TRUE(meta.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(meta.at("finish_reason"), json::parse(R"({"type":"length","length":4})"));
    }
    EXPECT_FALSE(meta.contains("e2e_latency")) << "only known with the outcome";
    EXPECT_FALSE(e.contains("choices"));
  }
  EXPECT_EQ(events[4], "[DONE]");
}

TEST(ResponseEncoder, GenerateLastEventCarriesLatencyAndLlmload) {
  const auto events = stream_with_outcome(generate_job(2), make_outcome(3));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_FALSE(json::parse(events[0]).at("meta_info").contains("llmload"));
  const json meta = json::parse(events[1]).at("meta_info");
  EXPECT_EQ(meta.at("cached_tokens"), 3);
  EXPECT_EQ(meta.at("e2e_latency"), 1.75);
  expect_llmload(meta.at("llmload"));
  EXPECT_EQ(events[2], "[DONE]");
  // An outcome given earlier supplies that event's cached_tokens, nothing else.
  const ResponseEncoder enc(generate_job(2));
  const RequestOutcome early = make_outcome(3);
  std::string first;
  enc.append_token_events(0, first, Framing::kNone, &early);
  const json m0 = json::parse(payloads(first).at(0)).at("meta_info");
  EXPECT_EQ(m0.at("cached_tokens"), 3);
  EXPECT_FALSE(m0.contains("llmload"));
  EXPECT_TRUE(m0.at("finish_reason").is_null());
}

TEST(ResponseEncoder, GenerateNonStreamingBody) {
  const GenerationJob job = generate_job(3, /*stream=*/false);
  const json body = json::parse(ResponseEncoder(job).full_body(make_outcome(3)));
  const auto out = played(job);
  EXPECT_EQ(body.at("text"), text_of(job));
  EXPECT_EQ(body.at("output_ids"), (json{out->token_id(0), out->token_id(1), out->token_id(2)}));
  const json& meta = body.at("meta_info");
  EXPECT_EQ(meta.at("id"), job.id);
  EXPECT_EQ(meta.at("finish_reason"), json::parse(R"({"type":"length","length":3})"));
  EXPECT_EQ(meta.at("prompt_tokens"), 4);
  EXPECT_EQ(meta.at("completion_tokens"), 3);
  EXPECT_EQ(meta.at("cached_tokens"), 3);
  EXPECT_EQ(meta.at("e2e_latency"), 1.75);
  expect_llmload(meta.at("llmload"));
  EXPECT_FALSE(body.contains("usage"));
  const json plain = json::parse(ResponseEncoder(job).full_body());
  EXPECT_EQ(plain.at("meta_info").at("cached_tokens"), 0);
  EXPECT_FALSE(plain.at("meta_info").contains("llmload"));
}

}  // namespace
}  // namespace llmload::server
