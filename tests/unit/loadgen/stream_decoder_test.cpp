#include "decode_event.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

#include <gtest/gtest.h>

namespace llmload {
namespace {

using K = StreamUpdate::Kind;

using testing::dec;

TEST(StreamDecoder, ChatRoleOnlyChunkIsNotOutput) {
  OpenAiStreamDecoder d(ApiKind::kChat);
  EXPECT_EQ(dec(d, R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})").kind, K::kNoOutput);
  auto u = dec(d, R"({"choices":[{"index":0,"delta":{"content":" hi"},"finish_reason":null}]})");
  EXPECT_EQ(u.kind, K::kOutput);
  EXPECT_EQ(u.tokens, 1);
  auto last = dec(d, R"({"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"length"}]})");
  EXPECT_EQ(last.finish_reason, "length");
}

TEST(StreamDecoder, ReasoningContentCountsAsOutput) {
  OpenAiStreamDecoder d(ApiKind::kChat);
  EXPECT_EQ(dec(d, R"({"choices":[{"delta":{"reasoning_content":"think"}}]})").kind, K::kOutput);
}

TEST(StreamDecoder, ReasoningTextIsCapturedApartFromTheAnswer) {
  OpenAiStreamDecoder d(ApiKind::kChat, /*capture_text=*/true);
  auto a = dec(d, R"({"choices":[{"delta":{"reasoning_content":"Let me think."}}]})");
  EXPECT_EQ(a.reasoning_text, "Let me think.");
  EXPECT_EQ(a.text, "");
  auto b = dec(d, R"({"choices":[{"delta":{"reasoning":" Again."}}]})");  // vLLM's newer field name
  EXPECT_EQ(b.reasoning_text, " Again.");
  auto c = dec(d, R"({"choices":[{"delta":{"content":"42"}}]})");
  EXPECT_EQ(c.text, "42");
  EXPECT_EQ(c.reasoning_text, "");
  const auto whole = decode_whole_response(
      R"({"choices":[{"message":{"role":"assistant","reasoning_content":"Hmm.","content":"Yes."},"finish_reason":"stop"}]})",
      ApiKind::kChat);
  EXPECT_EQ(whole.text, "Yes.");
  EXPECT_EQ(whole.reasoning_text, "Hmm.");
  OpenAiStreamDecoder completions(ApiKind::kCompletions, /*capture_text=*/true);
  EXPECT_EQ(dec(completions, R"({"choices":[{"text":" a","reasoning_content":"x"}]})").reasoning_text, "")
      << "completions have no reasoning channel";
}

TEST(StreamDecoder, CompletionsText) {
  OpenAiStreamDecoder d(ApiKind::kCompletions);
  EXPECT_EQ(dec(d, R"({"choices":[{"text":""}]})").kind, K::kNoOutput);
  EXPECT_EQ(dec(d, R"({"choices":[{"text":" a"}]})").kind, K::kOutput);
}

TEST(StreamDecoder, UsageChunkDoneErrorMalformed) {
  OpenAiStreamDecoder d(ApiKind::kCompletions);
  auto u = dec(d, R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":2}}})");
  EXPECT_EQ(u.kind, K::kNoOutput);
  ASSERT_TRUE(u.usage);
  EXPECT_EQ(u.usage->prompt_tokens, 5);
  EXPECT_EQ(u.usage->completion_tokens, 9);
  EXPECT_EQ(u.usage->cached_tokens, 2);
  EXPECT_EQ(dec(d, "[DONE]").kind, K::kDone);
  auto e = dec(d, R"({"error":{"message":"boom","type":"InternalServerError","code":500}})");
  EXPECT_EQ(e.kind, K::kError);
  EXPECT_EQ(e.message, "boom (InternalServerError)");
  EXPECT_EQ(dec(d, "{not json").kind, K::kMalformed);
  EXPECT_EQ(dec(d, "[1,2]").kind, K::kMalformed);
  EXPECT_EQ(dec(d, R"({"id":"x"})").kind, K::kMalformed);
  EXPECT_EQ(dec(d, "\xff\xfe").kind, K::kMalformed);
}

TEST(StreamDecoder, PerChunkUsageGivesTokensPerEvent) {
  OpenAiStreamDecoder d(ApiKind::kCompletions);
  EXPECT_EQ(dec(d, R"({"choices":[{"text":"ab"}],"usage":{"prompt_tokens":5,"completion_tokens":2}})").tokens, 2);
  EXPECT_EQ(dec(d, R"({"choices":[{"text":"c"}],"usage":{"prompt_tokens":5,"completion_tokens":3}})").tokens, 1);
  EXPECT_EQ(dec(d, R"({"choices":[{"text":"defg"}],"usage":{"prompt_tokens":5,"completion_tokens":7}})").tokens, 4);
}

TEST(StreamDecoder, OutOfRangeUsageIsIgnoredNotTrusted) {
  // Found by fuzzing: negative or absurd counts made n_out negative and overflowed n_k.
  OpenAiStreamDecoder d(ApiKind::kCompletions);
  auto neg = dec(d, R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":-3}})");
  EXPECT_FALSE(neg.usage);
  auto huge = dec(d, R"({"choices":[{"text":"a"}],"usage":{"prompt_tokens":1,"completion_tokens":9223372036854775807}})");
  EXPECT_FALSE(huge.usage);
  EXPECT_EQ(huge.tokens, 1);
}

TEST(StreamDecoder, DeeplyNestedJsonIsMalformedNotAStackOverflow) {
  // Found by fuzzing: {"error": [[[[...]]]]} made the error-message dump recurse 20k levels.
  OpenAiStreamDecoder d(ApiKind::kChat);
  const std::string deep = R"({"error":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(dec(d, deep).kind, K::kMalformed);
  const std::string ok = R"({"choices":[{"delta":{"content":"x"}}],"x":)" + std::string(10, '[') + std::string(10, ']') + "}";
  EXPECT_EQ(dec(d, ok).kind, K::kOutput);
  EXPECT_FALSE(decode_whole_response(deep, ApiKind::kChat).ok);
}

TEST(StreamDecoder, WholeResponse) {
  auto r = decode_whole_response(
      R"({"choices":[{"message":{"role":"assistant","content":"hi there"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}})",
      ApiKind::kChat);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.has_output);
  EXPECT_EQ(r.usage->completion_tokens, 2);
  EXPECT_FALSE(decode_whole_response("<html>", ApiKind::kChat).ok);
}

TEST(StreamDecoder, ErrorMessageFromBody) {
  EXPECT_EQ(error_message_from_body(R"({"error":{"message":"The model `x` does not exist.","code":404}})"),
            "The model `x` does not exist.");
  EXPECT_EQ(error_message_from_body(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(error_message_from_body("plain\ntext"), "plain text");
  EXPECT_EQ(error_message_from_body(std::string(500, 'a'), 10), "aaaaaaaaaa...");
}

}  // namespace
}  // namespace llmload
