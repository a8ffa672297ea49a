// The server's own tokens of an output (issue 18, consistency): what a request whose output is
// kept asks for (seed, logprobs or return_token_ids), how the decoder reads token_ids and the
// logprobs of completions and chat, and how the tracker keeps them only when every event has them.
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
using From = ServerTokens::From;
using testing::dec;

json body(const ScenarioConfig& cfg) {
  RequestBuilder b(cfg, "", "h:1");
  return json::parse(b.build(0).body);
}

TEST(ServerTokensRequest, KeptOutputsAskForTheSeedAndTheServersTokens) {
  ScenarioConfig cfg;
  cfg.model = "m";
  EXPECT_FALSE(body(cfg).contains("logprobs")) << "a plain run asks for nothing";
  EXPECT_FALSE(body(cfg).contains("seed"));
  cfg.consistency = true;
  json j = body(cfg);
  EXPECT_EQ(j["logprobs"], 0) << "completions: the sampled token's logprob";
  EXPECT_EQ(j["seed"], 0);
  EXPECT_FALSE(j.contains("return_token_ids"));
  cfg.endpoint = ApiKind::kChat;
  cfg.backend = "openai-chat";
  j = body(cfg);
  EXPECT_EQ(j["logprobs"], true) << j.dump();
  cfg.consistency = false;
  cfg.save_outputs = true;  // a saved run is a reference for a later --reference
  cfg.consistency_tokens = "token-ids";
  j = body(cfg);
  EXPECT_EQ(j["return_token_ids"], true);
  EXPECT_FALSE(j.contains("logprobs"));
  cfg.consistency_tokens = "none";
  j = body(cfg);
  EXPECT_FALSE(j.contains("return_token_ids"));
  EXPECT_FALSE(j.contains("logprobs"));
  EXPECT_EQ(j["seed"], 0) << "the same seed in every pass";
}

TEST(ServerTokensRequest, TheTemplatedBodyCarriesTheFieldsToo) {
  ScenarioConfig cfg;
  cfg.model = "m";
  cfg.consistency = true;
  RequestBuilder b(cfg, "", "h:1");
  ASSERT_TRUE(b.templated());
  EXPECT_EQ(b.build(5).body, b.dom_body(b.item(5)));
}

TEST(ServerTokensDecoder, TokenIdsThenLogprobsOfBothApis) {
  OpenAiStreamDecoder completions(ApiKind::kCompletions, /*capture_text=*/true);
  auto u = dec(completions, R"({"choices":[{"text":" a b","token_ids":[11,12],"logprobs":null}]})");
  EXPECT_EQ(u.server_tokens.from, From::kTokenIds);
  EXPECT_EQ(u.server_tokens.tokens, (std::vector<std::string>{"11", "12"}));
  u = dec(completions,
          R"({"choices":[{"text":" c","logprobs":{"tokens":[" c"],"token_logprobs":[-0.1],"top_logprobs":null,"text_offset":[0]}}]})");
  EXPECT_EQ(u.server_tokens.from, From::kLogprobs);
  EXPECT_EQ(u.server_tokens.tokens, (std::vector<std::string>{" c"}));

  OpenAiStreamDecoder chat(ApiKind::kChat, /*capture_text=*/true);
  u = dec(chat,
          R"({"choices":[{"delta":{"content":"Hi there"},"logprobs":{"content":[{"token":"Hi","logprob":-0.2,"bytes":[72,105],"top_logprobs":[]},{"token":" there","logprob":0,"bytes":null,"top_logprobs":[]}]}}]})");
  EXPECT_EQ(u.server_tokens.from, From::kLogprobs);
  EXPECT_EQ(u.server_tokens.tokens, (std::vector<std::string>{"Hi", " there"}));
  // A token of the wrong type makes the list unusable, not a wrong list.
  u = dec(chat, R"({"choices":[{"delta":{"content":"x"},"logprobs":{"content":[{"token":5}]}}]})");
  EXPECT_EQ(u.server_tokens.from, From::kNone);
  EXPECT_TRUE(u.server_tokens.tokens.empty());
  // Without capture_text (the fast path) nothing is read.
  OpenAiStreamDecoder fast(ApiKind::kCompletions);
  EXPECT_EQ(dec(fast, R"({"choices":[{"text":" a","token_ids":[1]}]})").server_tokens.from, From::kNone);
}

TEST(ServerTokensDecoder, WholeResponse) {
  auto w = decode_whole_response(
      R"({"choices":[{"message":{"role":"assistant","content":"a b"},"logprobs":{"content":[{"token":"a","logprob":-1},{"token":" b","logprob":-2}]},"finish_reason":"stop"}]})",
      ApiKind::kChat);
  ASSERT_TRUE(w.ok) << w.message;
  EXPECT_EQ(w.server_tokens.from, From::kLogprobs);
  EXPECT_EQ(w.server_tokens.tokens, (std::vector<std::string>{"a", " b"}));
}

RequestTracker streamed(const std::string& events) {
  analysis::RequestRecord rec;
  rec.requested_output_tokens = 8;
  TrackerOptions o;
  o.api = ApiKind::kCompletions;
  o.stream = true;
  o.capture_text = true;
  RequestTracker t(rec, TimePoint(0s), o);
  t.on_sent(TimePoint(1s));
  t.on_headers(TimePoint(2s), 200, "text/event-stream");
  t.on_body(TimePoint(3s), events + "data: [DONE]\n\n");
  t.on_complete(TimePoint(4s), TransportError{});
  return t;
}

TEST(ServerTokensTracker, KeptOnlyWhenEveryOutputEventHasThem) {
  auto t = streamed(
      "data: {\"choices\":[{\"text\":\" a\",\"token_ids\":[1]}]}\n\n"
      "data: {\"choices\":[{\"text\":\" b c\",\"token_ids\":[2,3]}]}\n\n");
  EXPECT_EQ(t.server_tokens().from, From::kTokenIds);
  EXPECT_EQ(t.server_tokens().tokens, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(t.output_text(), " a b c");
  // One event without them: none kept (a partial list would misplace a divergence).
  t = streamed(
      "data: {\"choices\":[{\"text\":\" a\",\"token_ids\":[1]}]}\n\n"
      "data: {\"choices\":[{\"text\":\" b\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\" c\",\"token_ids\":[3]}]}\n\n");
  EXPECT_EQ(t.server_tokens().from, From::kNone);
  EXPECT_TRUE(t.server_tokens().tokens.empty());
  // Two kinds in one stream: none kept.
  t = streamed(
      "data: {\"choices\":[{\"text\":\" a\",\"token_ids\":[1]}]}\n\n"
      "data: {\"choices\":[{\"text\":\" b\",\"logprobs\":{\"tokens\":[\" b\"]}}]}\n\n");
  EXPECT_EQ(t.server_tokens().from, From::kNone);
}

}  // namespace
}  // namespace llmload
