#include "llmload/server/generation_request.hpp"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/api_error.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/mock_tokenizer.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

ServerConfig config_with(std::int64_t max_model_len = 8192) {
  ServerConfig c;
  c.models = {"llmload-mock", "other"};
  c.max_model_len = max_model_len;
  return c;
}

/// Runs `parse` on `body` and returns the ApiError it throws (fails the test if none).
template <typename Parse>
ApiError error_of(Parse parse, const std::string& body, const ServerConfig& config = config_with()) {
  try {
    parse(json::parse(body), config);
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "no error for " << body;
  return {};
}

ApiError completion_error(const std::string& body, const ServerConfig& config = config_with()) {
  return error_of(parse_completion_request, body, config);
}
ApiError chat_error(const std::string& body, const ServerConfig& config = config_with()) {
  return error_of(parse_chat_request, body, config);
}

void expect_bad_request(const ApiError& e, std::optional<std::string> param) {
  EXPECT_EQ(e.status, 400) << e.message;
  EXPECT_EQ(error_type_for_status(e.status), "BadRequestError");
  EXPECT_EQ(e.param, param) << e.message;
}

// ---- completions ------------------------------------------------------------------------------

TEST(CompletionRequest, MinimalRequestGetsDefaults) {
  const auto r = parse_completion_request(json::parse(R"({"model":"llmload-mock","prompt":"one two  three"})"),
                                          config_with());
  EXPECT_EQ(r.endpoint, Endpoint::kCompletions);
  EXPECT_EQ(r.model, "llmload-mock");
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.min_tokens, 0);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.continuous_usage);
}

TEST(CompletionRequest, AcceptsAndIgnoresSamplingFields) {
  const auto r = parse_completion_request(
      json::parse(R"({"model":"other","prompt":["a b"],"max_tokens":5,"min_tokens":5,"ignore_eos":true,
                     "temperature":0.7,"top_p":1,"seed":3,"top_k":-1,"n":1,"stop":["x"],"user":"u","logprobs":null,
                     "stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}})"),
      config_with());
  EXPECT_EQ(r.model, "other");
  EXPECT_EQ(r.prompt_tokens, 2);
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_EQ(r.min_tokens, 5);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.continuous_usage);
}

TEST(CompletionRequest, NullMeansUnset) {
  const auto r = parse_completion_request(
      json::parse(R"({"model":"llmload-mock","prompt":"a","max_tokens":null,"stream":null,"stream_options":null})"),
      config_with());
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FALSE(r.stream);
}

TEST(CompletionRequest, ContinuousUsageNeedsIncludeUsage) {
  const auto r = parse_completion_request(
      json::parse(R"({"model":"llmload-mock","prompt":"a","stream":true,
                     "stream_options":{"continuous_usage_stats":true}})"),
      config_with());
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.continuous_usage);
}

TEST(CompletionRequest, BodyMustBeAnObject) {
  expect_bad_request(completion_error(R"([1,2])"), std::nullopt);
  expect_bad_request(completion_error(R"("text")"), std::nullopt);
}

TEST(CompletionRequest, ModelIsRequiredAndMustBeAString) {
  expect_bad_request(completion_error(R"({"prompt":"a"})"), "model");
  expect_bad_request(completion_error(R"({"model":7,"prompt":"a"})"), "model");
}

TEST(CompletionRequest, UnknownModelIsNotFound) {
  const ApiError e = completion_error(R"({"model":"gpt-9","prompt":"a"})");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(error_type_for_status(e.status), "NotFoundError");
  EXPECT_EQ(e.message, "The model `gpt-9` does not exist.");
  EXPECT_EQ(e.param, "model");
}

TEST(CompletionRequest, PromptShapes) {
  expect_bad_request(completion_error(R"({"model":"llmload-mock"})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":5})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":["a","b"]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[[1],[2]]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[[]]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[1,"a"]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[1,-2]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[1,2147483648]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":[1.5]})"), "prompt");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":{"text":"a"}})"), "prompt");
  EXPECT_EQ(completion_error(R"({"model":"llmload-mock","prompt":[7,2147483648]})").message,
            "Token id 2147483648 is out of vocabulary: the mock's token ids are in [0, 2147483647]");
}

TEST(CompletionRequest, PromptTokenIdsAreTheTokenizerIds) {
  const auto r = parse_completion_request(json::parse(R"({"model":"llmload-mock","prompt":"Hello the  world"})"),
                                          config_with());
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{token_id("Hello"), 0, token_id("world")}));
  EXPECT_EQ(r.prompt_tokens, 3);
}

TEST(CompletionRequest, TokenIdPromptsAreTakenAsGiven) {
  for (const char* prompt : {"[5, 0, 2147483647]", "[[5, 0, 2147483647]]"}) {
    SCOPED_TRACE(prompt);
    const auto r = parse_completion_request(
        json::parse(std::string(R"({"model":"llmload-mock","max_tokens":2,"prompt":)") + prompt + "}"), config_with());
    EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{5, 0, 2147483647U}));
    EXPECT_EQ(r.prompt_tokens, 3);
  }
  // Token-id prompts count against the context like words.
  const ApiError e = completion_error(R"({"model":"llmload-mock","prompt":[1,2,3],"max_tokens":8})", config_with(10));
  expect_bad_request(e, "max_tokens");
  EXPECT_EQ(e.message,
            "'max_tokens' or 'max_completion_tokens' is too large: 8. This model's maximum context length is 10 tokens "
            "and your request has 3 input tokens (8 > 10 - 3).");
}

TEST(CompletionRequest, MaxTokensMustBeAPositiveInteger) {
  for (const char* bad : {R"("10")", "0", "-1", "10.5", "true", "[10]"}) {
    expect_bad_request(completion_error(std::string(R"({"model":"llmload-mock","prompt":"a","max_tokens":)") + bad + "}"),
                       "max_tokens");
  }
  EXPECT_EQ(completion_error(R"({"model":"llmload-mock","prompt":"a","max_tokens":0})").message,
            "max_tokens must be at least 1, got 0.");
}

TEST(CompletionRequest, MinTokens) {
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","min_tokens":"1"})"), "min_tokens");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","min_tokens":-1})"), "min_tokens");
  const ApiError e = completion_error(R"({"model":"llmload-mock","prompt":"a","max_tokens":4,"min_tokens":5})");
  expect_bad_request(e, "min_tokens");
  EXPECT_EQ(e.message, "min_tokens must be less than or equal to max_tokens=4, got 5.");
}

TEST(CompletionRequest, StreamOptionsRequireStream) {
  for (const char* stream : {"", R"("stream":false,)"}) {
    const ApiError e = completion_error(std::string(R"({"model":"llmload-mock","prompt":"a",)") + stream +
                                        R"("stream_options":{"include_usage":true}})");
    expect_bad_request(e, "stream_options");
    EXPECT_EQ(e.message, "Stream options can only be defined when `stream=True`.");
  }
  expect_bad_request(
      completion_error(R"({"model":"llmload-mock","prompt":"a","stream":true,"stream_options":{"include_usage":1}})"),
      "stream_options");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","stream":true,"stream_options":true})"),
                     "stream_options");
}

TEST(CompletionRequest, WrongTypedFlagsAndKnobs) {
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","stream":"yes"})"), "stream");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","ignore_eos":"true"})"), "ignore_eos");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","temperature":"hot"})"), "temperature");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","top_p":[1]})"), "top_p");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","seed":1.5})"), "seed");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","n":2})"), "n");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","echo":true})"), "echo");
}

TEST(CompletionRequest, ContextLength) {
  const ServerConfig small = config_with(10);
  // 4 prompt tokens + 6 fits exactly; 7 does not.
  EXPECT_EQ(parse_completion_request(json::parse(R"({"model":"llmload-mock","prompt":"a b c d","max_tokens":6})"),
                                     small)
                .max_tokens,
            6);
  const ApiError e = completion_error(R"({"model":"llmload-mock","prompt":"a b c d","max_tokens":7})", small);
  expect_bad_request(e, "max_tokens");
  EXPECT_EQ(e.message,
            "'max_tokens' or 'max_completion_tokens' is too large: 7. This model's maximum context length is 10 tokens "
            "and your request has 4 input tokens (7 > 10 - 4).");
  // The default of 16 does not fit a context of 10 either.
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a"})", small), "max_tokens");
  // A prompt that fills the context.
  const ApiError full =
      completion_error(R"({"model":"llmload-mock","prompt":"1 2 3 4 5 6 7 8 9 10","max_tokens":1})", small);
  expect_bad_request(full, "prompt");
  EXPECT_EQ(full.message,
            "This model's maximum context length is 10 tokens. However, your request has 10 input tokens. Please "
            "reduce the length of the input messages.");
}

TEST(CompletionRequest, HugeMaxTokensIsAContextErrorNotAnOverflow) {
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","max_tokens":18446744073709551615})"),
                     "max_tokens");
  expect_bad_request(completion_error(R"({"model":"llmload-mock","prompt":"a","max_tokens":9223372036854775807})"),
                     "max_tokens");
}

// ---- chat -------------------------------------------------------------------------------------

TEST(ChatRequest, CountsWordsOverAllMessagesAndParts) {
  const auto r = parse_chat_request(json::parse(R"({"model":"llmload-mock","max_tokens":3,"messages":[
      {"role":"system","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"one two"},{"type":"text","text":" three "}]},
      {"role":"assistant","content":null,"tool_calls":[]},
      {"role":"user","content":""}]})"),
                                    config_with());
  EXPECT_EQ(r.endpoint, Endpoint::kChat);
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(r.max_tokens, 3);
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{token_id("be"), token_id("brief"), token_id("one"),
                                                            token_id("two"), token_id("three")}));
}

TEST(ChatRequest, DefaultOutputLengthFillsTheContext) {
  const auto r = parse_chat_request(
      json::parse(R"({"model":"llmload-mock","messages":[{"role":"user","content":"a b c"}]})"), config_with(100));
  EXPECT_EQ(r.max_tokens, 97);
}

TEST(ChatRequest, MaxCompletionTokensWinsOverMaxTokens) {
  const auto r = parse_chat_request(json::parse(R"({"model":"llmload-mock","max_tokens":50,"max_completion_tokens":7,
                                                   "messages":[{"role":"user","content":"hi"}]})"),
                                    config_with());
  EXPECT_EQ(r.max_tokens, 7);
  const ApiError e = chat_error(R"({"model":"llmload-mock","max_completion_tokens":99,
                                   "messages":[{"role":"user","content":"hi"}]})",
                                config_with(10));
  expect_bad_request(e, "max_completion_tokens");
  expect_bad_request(
      chat_error(R"({"model":"llmload-mock","max_completion_tokens":"9","messages":[{"role":"user","content":"hi"}]})"),
      "max_completion_tokens");
}

TEST(ChatRequest, MessageShapes) {
  const char* bad[] = {
      R"({"model":"llmload-mock"})",
      R"({"model":"llmload-mock","messages":[]})",
      R"({"model":"llmload-mock","messages":"hi"})",
      R"({"model":"llmload-mock","messages":["hi"]})",
      R"({"model":"llmload-mock","messages":[{"content":"hi"}]})",
      R"({"model":"llmload-mock","messages":[{"role":1,"content":"hi"}]})",
      R"({"model":"llmload-mock","messages":[{"role":"user","content":5}]})",
      R"({"model":"llmload-mock","messages":[{"role":"user","content":[{"text":"no type"}]}]})",
      R"({"model":"llmload-mock","messages":[{"role":"user","content":[{"type":"text"}]}]})",
      R"({"model":"llmload-mock","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})",
      R"({"model":"llmload-mock","messages":[{"role":"user","content":["text"]}]})",
  };
  for (const char* body : bad) {
    SCOPED_TRACE(body);
    expect_bad_request(chat_error(body), "messages");
  }
}

TEST(ChatRequest, PromptFillingTheContextNamesMessages) {
  const ApiError e = chat_error(R"({"model":"llmload-mock","messages":[{"role":"user","content":"a b c d e"}]})",
                                config_with(5));
  expect_bad_request(e, "messages");
  EXPECT_NE(e.message.find("maximum context length is 5 tokens"), std::string::npos);
}

TEST(ChatRequest, ValidationOrderTypesBeforeModelBeforeContext) {
  // A wrong-typed field wins over an unknown model; an unknown model wins over a context error.
  EXPECT_EQ(chat_error(R"({"model":"nope","max_tokens":"1","messages":[{"role":"user","content":"a"}]})").status, 400);
  EXPECT_EQ(chat_error(R"({"model":"nope","max_tokens":100,"messages":[{"role":"user","content":"a"}]})",
                       config_with(5))
                .status,
            404);
}

// ---- SGLang /generate -------------------------------------------------------------------------

ApiError generate_error(const std::string& body, const ServerConfig& config = config_with()) {
  return error_of(parse_generate_request, body, config);
}

TEST(GenerateRequest, TextWithDefaults) {
  const auto r = parse_generate_request(json::parse(R"({"text":"the quick fox"})"), config_with());
  EXPECT_EQ(r.endpoint, Endpoint::kGenerate);
  EXPECT_EQ(r.model, "llmload-mock") << "no model field: the first served model";
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{0, token_id("quick"), token_id("fox")}));
  EXPECT_EQ(r.max_tokens, 128) << "SGLang's default max_new_tokens";
  EXPECT_EQ(r.min_tokens, 0);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_TRUE(r.rid.empty());
}

TEST(GenerateRequest, InputIdsAndSamplingParams) {
  const auto r = parse_generate_request(
      json::parse(R"({"input_ids":[3,1,4,1,5],"stream":true,"rid":"req-42","model":"ignored",
                     "return_logprob":false,"sampling_params":{"max_new_tokens":7,"min_new_tokens":7,
                     "ignore_eos":true,"temperature":0,"top_p":0.9,"top_k":20,"min_p":0,"stop":["\n"],
                     "stop_token_ids":[2],"repetition_penalty":1.0,"n":1,"skip_special_tokens":true}})"),
      config_with());
  EXPECT_EQ(r.prompt_token_ids, (std::vector<std::uint32_t>{3, 1, 4, 1, 5}));
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.min_tokens, 7);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.rid, "req-42");
  const auto nulls = parse_generate_request(json::parse(R"({"text":"a","sampling_params":null,"rid":null})"),
                                            config_with());
  EXPECT_EQ(nulls.max_tokens, 128);
  EXPECT_TRUE(nulls.rid.empty());
}

TEST(GenerateRequest, ExactlyOneOfTextAndInputIds) {
  expect_bad_request(generate_error(R"({})"), "text");
  expect_bad_request(generate_error(R"({"text":"a","input_ids":[1]})"), "text");
  EXPECT_EQ(generate_error(R"({"sampling_params":{}})").message, "Either text or input_ids should be provided.");
  expect_bad_request(generate_error(R"({"text":["a","b"]})"), "text");
  expect_bad_request(generate_error(R"({"text":5})"), "text");
  expect_bad_request(generate_error(R"({"input_ids":[[1],[2]]})"), "input_ids");
  expect_bad_request(generate_error(R"({"input_ids":[]})"), "input_ids");
  expect_bad_request(generate_error(R"({"input_ids":[1,-1]})"), "input_ids");
  expect_bad_request(generate_error(R"({"input_ids":"1 2"})"), "input_ids");
  expect_bad_request(generate_error(R"([1])"), std::nullopt);
}

TEST(GenerateRequest, SamplingParamsAreChecked) {
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":[]})"), "sampling_params");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"max_new_tokens":0}})"), "max_new_tokens");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"max_new_tokens":"5"}})"), "max_new_tokens");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"min_new_tokens":-1}})"), "min_new_tokens");
  const ApiError e = generate_error(R"({"text":"a","sampling_params":{"max_new_tokens":3,"min_new_tokens":4}})");
  expect_bad_request(e, "min_new_tokens");
  EXPECT_EQ(e.message, "min_new_tokens must be in [0, max_new_tokens], got 4.");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"temperature":"hot"}})"), "temperature");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"ignore_eos":1}})"), "ignore_eos");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"stop":[1]}})"), "stop");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"stop_token_ids":["x"]}})"), "stop_token_ids");
  expect_bad_request(generate_error(R"({"text":"a","sampling_params":{"n":2}})"), "n");
  expect_bad_request(generate_error(R"({"text":"a","stream":"yes"})"), "stream");
  expect_bad_request(generate_error(R"({"text":"a","rid":["a","b"]})"), "rid");
}

TEST(GenerateRequest, ContextLengthUsesVllmMessages) {
  const ServerConfig small = config_with(10);
  EXPECT_EQ(parse_generate_request(json::parse(R"({"text":"a b c d","sampling_params":{"max_new_tokens":6}})"),
                                   small)
                .max_tokens,
            6);
  const ApiError e = generate_error(R"({"text":"a b c d","sampling_params":{"max_new_tokens":7}})", small);
  expect_bad_request(e, "max_new_tokens");
  EXPECT_EQ(e.message,
            "'max_tokens' or 'max_completion_tokens' is too large: 7. This model's maximum context length is 10 tokens "
            "and your request has 4 input tokens (7 > 10 - 4).");
  // The default of 128 does not fit a context of 10.
  expect_bad_request(generate_error(R"({"text":"a"})", small), "max_new_tokens");
  const ApiError full = generate_error(R"({"input_ids":[1,2,3,4,5,6,7,8,9,10],"sampling_params":{"max_new_tokens":1}})",
                                       small);
  expect_bad_request(full, "input_ids");
  EXPECT_EQ(full.message,
            "This model's maximum context length is 10 tokens. However, your request has 10 input tokens. Please "
            "reduce the length of the input messages.");
  expect_bad_request(generate_error(R"({"text":"1 2 3 4 5 6 7 8 9 10 11"})", small), "text");
}

}  // namespace
}  // namespace llmload::server
