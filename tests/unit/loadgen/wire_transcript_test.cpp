// What OpenAI-compatible servers send, decoded as llmload decodes it: every transcript of
// tests/data/wire/transcripts.json (built from the servers' documented formats: vLLM, SGLang, TGI,
// llama.cpp, Ollama, OpenAI, and the deviations llmload accepts, docs/wire.md) is fed to a
// RequestTracker piece by piece, one millisecond apart, and must give its TTFT event, token
// count, finish reason and outcome.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "llmload/loadgen/request_tracker.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json load_transcripts() {
  std::ifstream in(std::string(LLMLOAD_SOURCE_DIR) + "/tests/data/wire/transcripts.json");
  if (!in) return json();
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

TEST(WireTranscripts, EachDecodesToItsTtftTokensAndOutcome) {
  const json all = load_transcripts();
  ASSERT_TRUE(all.is_object()) << "tests/data/wire/transcripts.json is missing or not JSON";
  ASSERT_GE(all["transcripts"].size(), 20u);
  for (const auto& tr : all["transcripts"]) {
    SCOPED_TRACE(tr["name"].get<std::string>());
    analysis::RequestRecord rec;
    rec.requested_output_tokens = 16;
    TrackerOptions o;
    o.api = tr["api"] == "chat" ? ApiKind::kChat : ApiKind::kCompletions;
    o.stream = tr["stream"].get<bool>();
    const TimePoint start(0s);
    RequestTracker t(rec, start, o);
    t.on_sent(start + 1ms);
    t.on_headers(start + 2ms, tr["status"].get<int>(), tr["content_type"].get<std::string>());
    const auto& pieces = tr["pieces"];
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      if (!t.on_body(start + 10ms + k * 1ms, pieces[k].get<std::string>())) break;
    }
    t.on_complete(start + 100ms, TransportError{});
    const auto& r = t.record();
    const json& e = tr["expect"];
    EXPECT_EQ(analysis::to_string(r.error), e["error"].get<std::string>()) << r.error_message;
    if (e.contains("first_token_piece")) {
      ASSERT_TRUE(r.t_first.has_value());
      EXPECT_EQ(*r.t_first, 10ms + e["first_token_piece"].get<int>() * 1ms);
    }
    if (e.contains("output_events")) {
      EXPECT_EQ(r.output_events, e["output_events"].get<std::int64_t>());
    }
    if (e.contains("output_tokens")) {
      EXPECT_EQ(r.output_tokens, e["output_tokens"].get<std::int64_t>());
    }
    if (e.contains("tokens_from_usage")) {
      EXPECT_EQ(r.tokens_from_usage, e["tokens_from_usage"].get<bool>());
    }
    if (e.contains("finish_reason")) {
      ASSERT_TRUE(r.finish_reason.has_value());
      EXPECT_EQ(*r.finish_reason, e["finish_reason"].get<std::string>());
    }
    if (e.contains("message_contains")) {
      EXPECT_NE(r.error_message.find(e["message_contains"].get<std::string>()), std::string::npos) << r.error_message;
    }
  }
}

// The Content-Type rule (docs/wire.md): a reply to a streaming request is a stream unless it is
// JSON; a reply to a non-streaming one only when it says text/event-stream; case-insensitive.
TEST(WireTranscripts, WhichRepliesAreReadAsStreams) {
  EXPECT_TRUE(reads_as_stream(true, "text/event-stream"));
  EXPECT_TRUE(reads_as_stream(true, "TEXT/EVENT-STREAM; charset=utf-8"));
  EXPECT_TRUE(reads_as_stream(true, ""));
  EXPECT_TRUE(reads_as_stream(true, "text/plain"));
  EXPECT_TRUE(reads_as_stream(true, "application/x-ndjson"));
  EXPECT_FALSE(reads_as_stream(true, "application/json"));
  EXPECT_FALSE(reads_as_stream(true, " Application/JSON ; charset=utf-8"));
  EXPECT_TRUE(reads_as_stream(false, "Text/Event-Stream"));
  EXPECT_FALSE(reads_as_stream(false, ""));
  EXPECT_FALSE(reads_as_stream(false, "application/json"));
}

TEST(WireTranscripts, ErrorBodiesInEveryShapeGiveTheirMessage) {
  EXPECT_EQ(error_message_from_body(R"({"error":{"message":"m","type":"invalid_request_error","code":"model_not_found"}})"),
            "m (invalid_request_error, model_not_found)");
  EXPECT_EQ(error_message_from_body(R"({"error":"Bad Request","message":"too long"})"), "Bad Request: too long");
  EXPECT_EQ(error_message_from_body(R"({"error":"Input validation error","error_type":"validation"})"),
            "Input validation error");
  EXPECT_EQ(error_message_from_body(R"({"detail":[{"loc":["body","n"],"msg":"bad"},{"loc":[],"msg":"worse"}]})"),
            "body.n: bad; worse");
  EXPECT_EQ(error_message_from_body(R"({"detail":{"message":"nested"}})"), "nested");
  EXPECT_EQ(error_message_from_body(R"({"object":"error","message":"ctx","type":"BadRequestError","code":400})"), "ctx");
  EXPECT_EQ(error_message_from_body(R"({"status":"x"})"), R"({"status":"x"})");
  EXPECT_EQ(error_message_from_body("<html>\n</html>"), "<html> </html>");
}

}  // namespace
}  // namespace llmload
