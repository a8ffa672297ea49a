// Per-token information (token_details.hpp): completions' `logprobs`, chat's `logprobs` /
// `top_logprobs`, vLLM's `return_token_ids`: validation, the log-probability model, and the
// shapes the encoder writes, streamed and not; and that without them nothing changes.
#include "llmload/server/token_details.hpp"

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/response_encoder.hpp"
#include "api_test_support.hpp"

// A named namespace: these helpers' names cannot clash with other tests' in a unity build.
namespace llmload::server::token_details_test {
namespace {

using nlohmann::json;

// ---- a tokenizer whose tokens need escaping and are not ASCII -----------------------------------

/// Three generator tokens: a quote, a newline and multi-byte characters (2 and 3 bytes each).
class OddTokenizer final : public ServerTokenizer {
 public:
  std::string description() const override { return "odd"; }
  std::uint64_t vocab_size() const override { return 100; }
  void append_prompt_ids(std::string_view text, bool, std::vector<std::uint32_t>& ids) const override {
    ids.push_back(static_cast<std::uint32_t>(text.size() % 100));
  }
  void append_message_ids(std::string_view text, std::vector<std::uint32_t>& ids) const override {
    append_prompt_ids(text, false, ids);
  }
  void tokenize(std::string_view text, bool, std::vector<std::uint32_t>& ids,
                std::vector<std::string>*) const override {
    append_prompt_ids(text, false, ids);
  }
  std::string detokenize(const std::vector<std::uint32_t>&) const override { return {}; }
  std::size_t generator_size() const override { return kTexts.size(); }
  std::uint32_t generator_id(std::size_t i) const override { return static_cast<std::uint32_t>(40 + i); }
  std::string_view generator_text(std::size_t i, bool) const override { return kTexts[i]; }
  void encode_answer(std::string_view, std::vector<std::uint32_t>&, std::vector<std::string>&) const override {}
  std::string out_of_vocabulary_message(std::string_view id) const override { return std::string(id); }

 private:
  static inline const std::vector<std::string> kTexts = {" \"q\"", "\n\xc3\xa9", " \xe6\x97\xa5\xe6\x9c\xac"};
};

// ---- helpers ------------------------------------------------------------------------------------

GenerationJob make_job(Endpoint endpoint, std::int64_t max_tokens, std::int64_t logprobs, bool token_ids,
                       bool stream = true) {
  GenerationJob job;
  job.request.endpoint = endpoint;
  job.request.model = "llmload-mock";
  job.request.prompt_token_ids = {7, 0, 12};
  job.request.prompt_tokens = 3;
  job.request.max_tokens = max_tokens;
  job.request.stream = stream;
  job.request.output_seed = 0x1234;
  job.request.logprobs = logprobs;
  job.request.return_token_ids = token_ids;
  job.id = endpoint == Endpoint::kChat ? "chatcmpl-abc" : "cmpl-abc";
  job.created_unix = 1700000000;
  return job;
}

std::vector<std::string> payloads(const std::string& sse) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    const auto end = sse.find("\n\n", pos);
    if (end == std::string::npos) break;
    out.push_back(sse.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

using test::played;

/// The events of a whole stream as written ([DONE] dropped), each token's asked for in order.
std::vector<std::string> stream_text(const GenerationJob& job) {
  const ResponseEncoder enc(job, played(job));
  std::string sse;
  for (std::int64_t k = 0; k < job.request.max_tokens; ++k) enc.append_token_events(k, sse, Framing::kNone);
  std::vector<std::string> out;
  for (const auto& p : payloads(sse)) {
    if (p != "[DONE]") out.push_back(p);
  }
  return out;
}

std::vector<json> stream(const GenerationJob& job) {
  std::vector<json> out;
  for (const auto& p : stream_text(job)) out.push_back(json::parse(p));
  return out;
}

std::string text_of(const GenerationJob& job) {
  std::string text;
  played(job)->append_text(text, job.request.max_tokens);
  return text;
}

std::vector<int> utf8_bytes(const std::string& s) {
  std::vector<int> out;
  for (char c : s) out.push_back(static_cast<unsigned char>(c));
  return out;
}

// ---- the log-probability model ------------------------------------------------------------------

TEST(TokenLogprobs, DeterministicFiniteAtMostMinusOneThousandth) {
  std::set<double> seen;
  for (std::int64_t k = 0; k < 2000; ++k) {
    const double lp = token_logprob(42, k, 7);
    EXPECT_EQ(lp, token_logprob(42, k, 7));
    EXPECT_TRUE(std::isfinite(lp));
    EXPECT_LE(lp, -0.001);
    EXPECT_GE(lp, -1.0);
    seen.insert(lp);
  }
  EXPECT_GT(seen.size(), 500u) << "spread over the 1000 values";
  int differ = 0;
  for (std::int64_t k = 0; k < 100; ++k) differ += token_logprob(42, k, 7) != token_logprob(43, k, 7) ? 1 : 0;
  EXPECT_GT(differ, 90) << "another seed, other values";
}

TEST(TokenLogprobs, TopLogprobsSampledFirstThenDecreasingDistinctSummingBelowOne) {
  const ServerTokenizer& mock = server_tokenizer_or_mock(nullptr);
  for (std::int64_t k = 0; k < 200; ++k) {
    const auto top = top_logprobs(9, k, 3, " which", mock, 20);
    ASSERT_EQ(top.size(), 20u);
    EXPECT_EQ(top[0].text, " which");
    EXPECT_EQ(top[0].logprob, token_logprob(9, k, 3));
    std::set<std::string_view> texts;
    double p = 0;
    for (std::size_t i = 0; i < top.size(); ++i) {
      EXPECT_TRUE(std::isfinite(top[i].logprob));
      if (i > 0) {
        EXPECT_LT(top[i].logprob, top[i - 1].logprob) << "k " << k << " i " << i;
      }
      texts.insert(top[i].text);
      p += std::exp(top[i].logprob);
    }
    EXPECT_EQ(texts.size(), top.size()) << "distinct tokens (completions' dict keys)";
    EXPECT_LT(p, 1.0);
    EXPECT_EQ(top_logprobs(9, k, 3, " which", mock, 20)[5].text, top[5].text) << "deterministic";
  }
  EXPECT_TRUE(top_logprobs(9, 0, 3, " which", mock, 0).empty());
  EXPECT_EQ(top_logprobs(9, 0, 3, " which", mock, 1).size(), 1u);
  // A vocabulary smaller than asked for: every other token once.
  const OddTokenizer odd;
  EXPECT_EQ(top_logprobs(9, 0, 40, " \"q\"", odd, 20).size(), 3u);
}

TEST(TokenLogprobs, Utf8LengthCountsCharacters) {
  EXPECT_EQ(utf8_length(""), 0);
  EXPECT_EQ(utf8_length(" the"), 4);
  EXPECT_EQ(utf8_length("\n\xc3\xa9"), 2);
  EXPECT_EQ(utf8_length(" \xe6\x97\xa5\xe6\x9c\xac"), 3);
  EXPECT_EQ(utf8_length("\xf0\x9f\x98\x80"), 1);
}

// ---- validation ---------------------------------------------------------------------------------

ServerConfig config() {
  ServerConfig c;
  c.models = {"llmload-mock"};
  return c;
}

ApiError error_of(GenerationRequest (*parse)(const json&, const ServerConfig&), const std::string& body) {
  try {
    parse(json::parse(body), config());
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "no error for " << body;
  return {};
}

TEST(TokenDetailsRequest, CompletionLogprobsIsAnIntegerFromZeroToTwenty) {
  const std::string base = R"({"model":"llmload-mock","prompt":"a b")";
  EXPECT_EQ(parse_completion_request(json::parse(base + "}"), config()).logprobs, -1);
  EXPECT_EQ(parse_completion_request(json::parse(base + R"(,"logprobs":null})"), config()).logprobs, -1);
  EXPECT_EQ(parse_completion_request(json::parse(base + R"(,"logprobs":0})"), config()).logprobs, 0);
  EXPECT_EQ(parse_completion_request(json::parse(base + R"(,"logprobs":20})"), config()).logprobs, 20);
  for (const char* bad : {"-1", "21", "1000000000000", "true", "\"5\"", "2.5", "[1]"}) {
    const ApiError e = error_of(parse_completion_request, base + R"(,"logprobs":)" + bad + "}");
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.param, std::optional<std::string>("logprobs")) << bad;
    EXPECT_NE(e.message.find("`logprobs`"), std::string::npos) << e.message;
  }
  // A type error comes before the unknown model (vLLM's order).
  EXPECT_EQ(error_of(parse_completion_request, R"({"model":"nope","prompt":"a","logprobs":-3})").status, 400);
}

TEST(TokenDetailsRequest, ChatLogprobsIsABooleanWithTopLogprobsUpToTwenty) {
  const std::string base = R"({"model":"llmload-mock","messages":[{"role":"user","content":"hi"}])";
  EXPECT_EQ(parse_chat_request(json::parse(base + "}"), config()).logprobs, -1);
  EXPECT_EQ(parse_chat_request(json::parse(base + R"(,"logprobs":false})"), config()).logprobs, -1);
  EXPECT_EQ(parse_chat_request(json::parse(base + R"(,"logprobs":true})"), config()).logprobs, 0);
  EXPECT_EQ(parse_chat_request(json::parse(base + R"(,"logprobs":true,"top_logprobs":20})"), config()).logprobs, 20);
  EXPECT_EQ(parse_chat_request(json::parse(base + R"(,"top_logprobs":0})"), config()).logprobs, -1);
  const ApiError not_bool = error_of(parse_chat_request, base + R"(,"logprobs":1})");
  EXPECT_EQ(not_bool.param, std::optional<std::string>("logprobs"));
  for (const char* bad : {"-1", "21", "\"3\"", "1.5"}) {
    const ApiError e = error_of(parse_chat_request, base + R"(,"logprobs":true,"top_logprobs":)" + bad + "}");
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.param, std::optional<std::string>("top_logprobs")) << bad;
  }
  const ApiError without = error_of(parse_chat_request, base + R"(,"top_logprobs":2})");
  EXPECT_EQ(without.param, std::optional<std::string>("top_logprobs"));
  EXPECT_EQ(without.message, "when using `top_logprobs`, `logprobs` must be set to true.");
}

TEST(TokenDetailsRequest, ReturnTokenIdsIsABooleanOnBothEndpoints) {
  EXPECT_TRUE(parse_completion_request(
                  json::parse(R"({"model":"llmload-mock","prompt":"a","return_token_ids":true})"), config())
                  .return_token_ids);
  EXPECT_FALSE(parse_completion_request(json::parse(R"({"model":"llmload-mock","prompt":"a"})"), config())
                   .return_token_ids);
  EXPECT_TRUE(parse_chat_request(json::parse(R"({"model":"llmload-mock","messages":[{"role":"user","content":"a"}],
                                                 "return_token_ids":true})"),
                                 config())
                  .return_token_ids);
  const ApiError e =
      error_of(parse_completion_request, R"({"model":"llmload-mock","prompt":"a","return_token_ids":"yes"})");
  EXPECT_EQ(e.param, std::optional<std::string>("return_token_ids"));
}

// ---- without them: the bytes of before --------------------------------------------------------

TEST(TokenDetailsEncoder, WithoutThemTheChunksAreTheOldBytes) {
  const GenerationJob cmpl = make_job(Endpoint::kCompletions, 2, -1, false);
  EXPECT_FALSE(TokenDetails::for_job(cmpl));
  const auto out = played(cmpl);
  std::string sse;
  ResponseEncoder(cmpl, out).append_token_events(0, sse, Framing::kNone);
  EXPECT_EQ(sse, R"(data: {"id":"cmpl-abc","object":"text_completion","created":1700000000,"model":"llmload-mock",)"
                 R"("choices":[{"index":0,"text":")" +
                     std::string(out->token_text(0)) +
                     R"(","logprobs":null,"finish_reason":null,"stop_reason":null}]})"
                     "\n\n");
  const GenerationJob chat = make_job(Endpoint::kChat, 1, -1, false);
  const auto chat_out = played(chat);
  std::string chat_sse;
  ResponseEncoder(chat, chat_out).append_token_events(0, chat_sse, Framing::kNone);
  const std::string prefix = R"({"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1700000000,)"
                             R"("model":"llmload-mock","choices":[)";
  EXPECT_EQ(chat_sse, "data: " + prefix +
                          R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
                          R"("finish_reason":null}]})"
                          "\n\ndata: " +
                          prefix + R"({"index":0,"delta":{"content":")" + std::string(chat_out->token_text(0)) +
                          R"("},"logprobs":null,"finish_reason":"length","stop_reason":null}]})"
                          "\n\ndata: [DONE]\n\n");
  GenerationJob body_job = make_job(Endpoint::kCompletions, 2, -1, false, /*stream=*/false);
  const json body = json::parse(ResponseEncoder(body_job).full_body());
  EXPECT_TRUE(body["choices"][0].at("logprobs").is_null());
  EXPECT_FALSE(body["choices"][0].contains("token_ids"));
  EXPECT_FALSE(body["choices"][0].contains("prompt_token_ids"));
}

// ---- completions --------------------------------------------------------------------------------

TEST(TokenDetailsEncoder, CompletionStreamChunkLogprobsAndTokenIds) {
  const GenerationJob job = make_job(Endpoint::kCompletions, 6, 3, true);
  const auto out = played(job);
  const auto written = stream_text(job);
  const auto events = stream(job);
  ASSERT_EQ(events.size(), 6u);
  std::string text;
  for (std::int64_t k = 0; k < 6; ++k) {
    const json& choice = events[static_cast<std::size_t>(k)]["choices"][0];
    const json& lp = choice.at("logprobs");
    const std::string piece = choice.at("text");
    // vLLM's key order (as written: parsed again keeping it).
    std::vector<std::string> keys;
    const ojson ordered = ojson::parse(written[static_cast<std::size_t>(k)]);
    for (const auto& [key, v] : ordered["choices"][0].items()) keys.push_back(key);
    std::vector<std::string> expected_keys = {"index", "text", "logprobs", "finish_reason", "stop_reason"};
    if (k == 0) expected_keys.push_back("prompt_token_ids");
    expected_keys.push_back("token_ids");
    EXPECT_EQ(keys, expected_keys);
    EXPECT_EQ(lp.at("tokens"), json::array({piece}));
    EXPECT_EQ(lp.at("token_logprobs"), json::array({token_logprob(0x1234, k, out->token_id(k))}));
    ASSERT_EQ(lp.at("top_logprobs").size(), 1u);
    const json& top = lp["top_logprobs"][0];
    EXPECT_EQ(top.size(), 3u);
    EXPECT_EQ(top.at(piece), lp["token_logprobs"][0]) << "the sampled token is among the top";
    for (const auto& [token, v] : top.items()) EXPECT_LE(v.get<double>(), lp["token_logprobs"][0].get<double>());
    EXPECT_EQ(lp.at("text_offset"), json::array({static_cast<std::int64_t>(text.size())}));
    EXPECT_EQ(choice.at("token_ids"), json::array({out->token_id(k)}));
    if (k == 0) {
      EXPECT_EQ(choice.at("prompt_token_ids"), json::parse("[7,0,12]"));
    }
    text += piece;
  }
  EXPECT_EQ(text, text_of(job));
}

TEST(TokenDetailsEncoder, CompletionLogprobsZeroGivesTheSampledTokenOnly) {
  const auto events = stream(make_job(Endpoint::kCompletions, 3, 0, false));
  for (const json& e : events) {
    const json& choice = e["choices"][0];
    const json& top = choice.at("logprobs").at("top_logprobs");
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top[0], (json{{choice.at("text").get<std::string>(), choice["logprobs"]["token_logprobs"][0]}}));
    EXPECT_FALSE(choice.contains("token_ids"));
  }
}

TEST(TokenDetailsEncoder, TokenIdsAloneLeaveLogprobsNull) {
  const auto events = stream(make_job(Endpoint::kCompletions, 2, -1, true));
  EXPECT_TRUE(events[0]["choices"][0].at("logprobs").is_null());
  EXPECT_TRUE(events[0]["choices"][0].contains("token_ids"));
}

TEST(TokenDetailsEncoder, CompletionNonStreamingCoversTheWholeText) {
  const GenerationJob job = make_job(Endpoint::kCompletions, 9, 2, true, /*stream=*/false);
  const auto out = played(job);
  const json body = json::parse(ResponseEncoder(job, out).full_body());
  const json& choice = body["choices"][0];
  const json& lp = choice.at("logprobs");
  ASSERT_EQ(lp.at("tokens").size(), 9u);
  std::string joined;
  std::vector<std::int64_t> offsets;
  for (std::size_t k = 0; k < 9; ++k) {
    offsets.push_back(static_cast<std::int64_t>(joined.size()));
    joined += lp["tokens"][k].get<std::string>();
    EXPECT_EQ(lp["top_logprobs"][k].size(), 2u);
  }
  EXPECT_EQ(joined, choice.at("text"));
  EXPECT_EQ(lp.at("text_offset"), json(offsets));
  EXPECT_EQ(lp.at("token_logprobs").size(), 9u);
  json ids = json::array();
  for (std::int64_t k = 0; k < 9; ++k) ids.push_back(out->token_id(k));
  EXPECT_EQ(choice.at("token_ids"), ids);
  EXPECT_EQ(choice.at("prompt_token_ids"), json::parse("[7,0,12]"));
  EXPECT_FALSE(body.contains("prompt_token_ids"));
}

TEST(TokenDetailsEncoder, TextOffsetsAreTheSameInAnyOrder) {
  const GenerationJob job = make_job(Endpoint::kCompletions, 8, 0, false);
  const auto out = played(job);
  auto offset_of = [&](const ResponseEncoder& enc, std::int64_t k) {
    std::string sse;
    enc.append_token_events(k, sse, Framing::kNone);
    return json::parse(payloads(sse).at(0))["choices"][0]["logprobs"]["text_offset"][0].get<std::int64_t>();
  };
  const ResponseEncoder in_order(job, out);
  std::vector<std::int64_t> expected;
  for (std::int64_t k = 0; k < 8; ++k) expected.push_back(offset_of(in_order, k));
  const ResponseEncoder shuffled(job, out);
  for (std::int64_t k : {5, 2, 7, 0, 3, 4, 1, 6}) {
    EXPECT_EQ(offset_of(shuffled, k), expected[static_cast<std::size_t>(k)]) << "token " << k;
  }
}

// ---- chat ---------------------------------------------------------------------------------------

TEST(TokenDetailsEncoder, ChatStreamContentEntriesAndPromptIdsOnTheRoleChunk) {
  const GenerationJob job = make_job(Endpoint::kChat, 4, 2, true);
  const auto out = played(job);
  const auto events = stream(job);
  ASSERT_EQ(events.size(), 5u);
  const json& role = events[0];
  EXPECT_TRUE(role["choices"][0].at("logprobs").is_null());
  EXPECT_FALSE(role["choices"][0].contains("token_ids"));
  EXPECT_EQ(role.at("prompt_token_ids"), json::parse("[7,0,12]"));
  std::string text;
  for (std::int64_t k = 0; k < 4; ++k) {
    const json& e = events[static_cast<std::size_t>(k) + 1];
    EXPECT_FALSE(e.contains("prompt_token_ids"));
    const json& choice = e["choices"][0];
    const std::string piece = choice.at("delta").at("content");
    const json& content = choice.at("logprobs").at("content");
    ASSERT_EQ(content.size(), 1u);
    EXPECT_EQ(content[0].at("token"), piece);
    EXPECT_EQ(content[0].at("logprob"), token_logprob(0x1234, k, out->token_id(k)));
    EXPECT_EQ(content[0].at("bytes"), json(utf8_bytes(piece)));
    const json& top = content[0].at("top_logprobs");
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].at("token"), piece);
    EXPECT_EQ(top[0].at("logprob"), content[0].at("logprob"));
    EXPECT_LT(top[1].at("logprob").get<double>(), top[0].at("logprob").get<double>());
    EXPECT_EQ(top[1].at("bytes"), json(utf8_bytes(top[1].at("token").get<std::string>())));
    EXPECT_EQ(choice.at("token_ids"), json::array({out->token_id(k)}));
    text += piece;
  }
  EXPECT_EQ(text, text_of(job));
  EXPECT_EQ(events[4]["choices"][0].at("finish_reason"), "length");
}

TEST(TokenDetailsEncoder, ChatWithoutTopLogprobsHasEmptyLists) {
  const auto events = stream(make_job(Endpoint::kChat, 2, 0, false));
  EXPECT_FALSE(events[0].contains("prompt_token_ids"));
  const json& content = events[1]["choices"][0].at("logprobs").at("content");
  EXPECT_EQ(content[0].at("top_logprobs"), json::array());
  EXPECT_FALSE(events[1]["choices"][0].contains("token_ids"));
}

TEST(TokenDetailsEncoder, ChatNonStreamingCoversTheWholeMessage) {
  const GenerationJob job = make_job(Endpoint::kChat, 5, 1, true, /*stream=*/false);
  const auto out = played(job);
  const json body = json::parse(ResponseEncoder(job, out).full_body());
  const json& choice = body["choices"][0];
  std::string joined;
  for (const json& entry : choice.at("logprobs").at("content")) {
    joined += entry.at("token").get<std::string>();
    EXPECT_EQ(entry.at("top_logprobs").size(), 1u);
  }
  EXPECT_EQ(joined, choice.at("message").at("content"));
  EXPECT_EQ(choice.at("token_ids").size(), 5u);
  EXPECT_FALSE(choice.contains("prompt_token_ids"));
  EXPECT_EQ(body.at("prompt_token_ids"), json::parse("[7,0,12]"));
  std::vector<std::string> keys;
  const ojson ordered = ojson::parse(ResponseEncoder(job, out).full_body());
  for (const auto& [key, v] : ordered.items()) keys.push_back(key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"id", "object", "created", "model", "choices", "usage", "prompt_token_ids"}));
}

// ---- tokens that need escaping and are not ASCII ------------------------------------------------

TEST(TokenDetailsEncoder, OddTokensAreEscapedCountedInCharactersAndGivenTheirBytes) {
  GenerationJob job = make_job(Endpoint::kCompletions, 12, 3, true);
  job.tokenizer = std::make_shared<const OddTokenizer>();
  const auto events = stream(job);
  std::string text;
  std::int64_t chars = 0;
  for (const json& e : events) {
    const json& lp = e["choices"][0].at("logprobs");
    const std::string token = lp.at("tokens")[0];
    EXPECT_EQ(lp.at("text_offset")[0], chars);
    EXPECT_EQ(lp.at("top_logprobs")[0].size(), 3u);
    text += token;
    chars += utf8_length(token);
  }
  EXPECT_EQ(text, text_of(job));

  job.request.endpoint = Endpoint::kChat;
  for (const json& e : stream(job)) {
    if (!e["choices"][0].at("logprobs").is_object()) continue;  // the role chunk
    for (const json& entry : e["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) {
      EXPECT_EQ(entry.at("bytes"), json(utf8_bytes(entry.at("token").get<std::string>())));
    }
  }
}

}  // namespace
}  // namespace llmload::server::token_details_test
