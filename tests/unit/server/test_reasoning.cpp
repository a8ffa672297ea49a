// Reasoning phases: how many reasoning tokens a request gets (reasoning.hpp), where they sit in the
// output (OutputSequence), and how chat carries them (ResponseEncoder).
#include "llmload/server/reasoning.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "llmload/server/api_error.hpp"
#include "llmload/server/cli.hpp"
#include "llmload/server/generation_request.hpp"

// A named namespace: these helpers cannot clash with other tests' in a unity build.
namespace llmload::server::reasoning_test {

using nlohmann::json;
using test::parse_events;
using test::played;
using test::test_config;
using test::whole_stream;

GenerationJob chat_job(const json& body, const ServerConfig& config, ReasoningField field = ReasoningField::kReasoningContent) {
  GenerationJob job;
  job.request = parse_chat_request(body, config);
  job.id = "chatcmpl-abc";
  job.created_unix = 1700000000;
  job.output_model = config.output;
  job.reasoning_field = field;
  return job;
}

json chat_body(json extra = json::object()) {
  json body = {{"model", "llmload-mock"}, {"messages", {{{"role", "user"}, {"content", "hello world"}}}}, {"max_tokens", 6}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

std::int64_t chat_tokens(const json& extra, std::int64_t configured) {
  return parse_chat_request(chat_body(extra), test_config(configured)).reasoning_tokens;
}

TEST(Reasoning, EffortTable) {
  EXPECT_EQ(effort_tokens("none", 100), 0);
  EXPECT_EQ(effort_tokens("minimal", 100), 25);
  EXPECT_EQ(effort_tokens("low", 100), 50);
  EXPECT_EQ(effort_tokens("medium", 100), 100);
  EXPECT_EQ(effort_tokens("high", 100), 200);
  EXPECT_EQ(effort_tokens("low", 1), 1);  // never 0 for an effort that asks for some
  EXPECT_EQ(effort_tokens("none", 0), 0);
  EXPECT_EQ(effort_tokens("minimal", 0), 8);
  EXPECT_EQ(effort_tokens("low", 0), 16);
  EXPECT_EQ(effort_tokens("medium", 0), 64);
  EXPECT_EQ(effort_tokens("high", 0), 256);
  EXPECT_EQ(effort_tokens("extreme", 10), std::nullopt);
}

TEST(Reasoning, ChatFields) {
  EXPECT_EQ(chat_tokens({}, 0), 0);    // the default server: no reasoning, as before
  EXPECT_EQ(chat_tokens({}, 12), 12);  // --reasoning-tokens
  EXPECT_EQ(chat_tokens({{"reasoning_effort", "high"}}, 12), 24);
  EXPECT_EQ(chat_tokens({{"reasoning_effort", "low"}}, 0), 16);
  EXPECT_EQ(chat_tokens({{"chat_template_kwargs", {{"enable_thinking", false}}}}, 12), 0);
  EXPECT_EQ(chat_tokens({{"reasoning_effort", "high"}, {"chat_template_kwargs", {{"enable_thinking", false}}}}, 12), 0);
  EXPECT_EQ(chat_tokens({{"chat_template_kwargs", {{"enable_thinking", true}}}}, 0), 64);
  EXPECT_EQ(chat_tokens({{"chat_template_kwargs", {{"enable_thinking", true}}}}, 12), 12);
  EXPECT_EQ(chat_tokens({{"chat_template_kwargs", {{"other", 1}}}}, 12), 12);
  for (const json& bad : {json{{"reasoning_effort", "max"}}, json{{"reasoning_effort", 3}},
                          json{{"chat_template_kwargs", {{"enable_thinking", "no"}}}},
                          json{{"chat_template_kwargs", "x"}}}) {
    try {
      (void)chat_tokens(bad, 12);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const ApiException& e) {
      EXPECT_EQ(e.error().status, 400);
      ASSERT_TRUE(e.error().param.has_value());
      EXPECT_EQ(*e.error().param, bad.begin().key()) << e.error().message;
    }
  }
}

TEST(Reasoning, ComesFirstAndLeavesTheAnswerAsItWas) {
  const ServerConfig plain = test_config(0);
  const ServerConfig thinking = test_config(5);
  const json body = {{"model", "llmload-mock"},
                     {"messages", {{{"role", "user"}, {"content", "What is 48 + 17 * 3?"}}}},
                     {"max_tokens", 64}};
  const auto without = played(chat_job(body, plain));
  const auto with = played(chat_job(body, thinking));
  EXPECT_EQ(without->reasoning_tokens(), 0);
  EXPECT_EQ(with->reasoning_tokens(), 5);
  ASSERT_TRUE(without->stopped());
  ASSERT_TRUE(with->stopped());
  EXPECT_EQ(with->length(), without->length() + 5);
  std::string answer_without;
  without->append_text(answer_without, without->length());
  std::string answer_with;
  with->append_text(answer_with, 5, with->length());
  EXPECT_EQ(answer_with, answer_without);
  EXPECT_NE(answer_with.find("99"), std::string::npos);
  EXPECT_EQ(with->wrong_answer(), std::optional<bool>(false));
  for (std::int64_t k = 0; k < with->length(); ++k) EXPECT_EQ(with->is_reasoning(k), k < 5);
  // The same prompt gives the same reasoning.
  std::string r1;
  std::string r2;
  with->append_text(r1, 0, 5);
  played(chat_job(body, thinking))->append_text(r2, 0, 5);
  EXPECT_EQ(r1, r2);
}

TEST(Reasoning, CountsAgainstMaxTokens) {
  const json body = {{"model", "llmload-mock"},
                     {"messages", {{{"role", "user"}, {"content", "What is 2 + 3?"}}}},
                     {"max_tokens", 4}};
  const auto out = played(chat_job(body, test_config(10)));
  EXPECT_EQ(out->reasoning_tokens(), 4);  // min(10, max_tokens)
  EXPECT_EQ(out->length(), 4);
  EXPECT_FALSE(out->stopped());
  EXPECT_EQ(out->wrong_answer(), std::nullopt);  // the answer never appears
}

TEST(Reasoning, ChatStreamCarriesReasoningDeltasThenContent) {
  json body = chat_body({{"stream", true}, {"stream_options", {{"include_usage", true}}}});
  for (const auto field : {ReasoningField::kReasoningContent, ReasoningField::kReasoning}) {
    const std::string key = field == ReasoningField::kReasoning ? "reasoning" : "reasoning_content";
    const auto events = whole_stream(chat_job(body, test_config(4), field));
    ASSERT_EQ(events.size(), 1u + 6u + 2u);  // role, 6 tokens, usage, [DONE]
    EXPECT_EQ(events[0].data["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
    for (std::size_t k = 0; k < 6; ++k) {
      const json& delta = events[1 + k].data["choices"][0]["delta"];
      ASSERT_EQ(delta.size(), 1u) << delta.dump();
      EXPECT_TRUE(delta.contains(k < 4 ? key : "content")) << delta.dump();
      EXPECT_TRUE(events[1 + k].name.empty());
    }
    const json& usage = events[7].data["usage"];
    EXPECT_EQ(usage["completion_tokens"], 6);
    EXPECT_EQ(usage["completion_tokens_details"], json({{"reasoning_tokens", 4}}));
  }
}

TEST(Reasoning, ChatBodySplitsContentAndReasoning) {
  const GenerationJob job = chat_job(chat_body(), test_config(4));
  const auto output = played(job);
  const json body = json::parse(ResponseEncoder(job, output).full_body(RequestOutcome{}));
  const json& message = body["choices"][0]["message"];
  std::string reasoning;
  std::string content;
  output->append_text(reasoning, 0, 4);
  output->append_text(content, 4, 6);
  EXPECT_EQ(message["content"], content);
  EXPECT_EQ(message["reasoning_content"], reasoning);
  EXPECT_EQ(body["usage"]["completion_tokens_details"]["reasoning_tokens"], 4);

  // All reasoning: content null, as vLLM's parser leaves it.
  const GenerationJob all = chat_job(chat_body({{"max_tokens", 3}}), test_config(4), ReasoningField::kReasoning);
  const json body2 = json::parse(ResponseEncoder(all).full_body(RequestOutcome{}));
  EXPECT_TRUE(body2["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(body2["choices"][0]["message"]["reasoning"].get<std::string>().empty(), false);
  EXPECT_EQ(body2["usage"]["completion_tokens_details"]["reasoning_tokens"], 3);
}

TEST(Reasoning, WithoutReasoningChatIsUnchanged) {
  const GenerationJob job = chat_job(chat_body(), test_config(0));
  const std::string body = ResponseEncoder(job).full_body(RequestOutcome{});
  EXPECT_EQ(body.find("reasoning"), std::string::npos);
  EXPECT_EQ(body.find("completion_tokens_details"), std::string::npos);
}

TEST(Reasoning, GroundTruthHasFirstOutputToken) {
  RequestOutcome o;
  o.timing.first_token_s = 0.5;
  o.timing.first_output_token_s = 0.75;
  const json j = json::parse(llmload_json(o));
  EXPECT_EQ(j["first_output_token_s"], 0.75);
  o.timing.first_output_token_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(json::parse(llmload_json(o))["first_output_token_s"].is_null());  // all reasoning
}

TEST(Reasoning, Flags) {
  const CliOutcome defaults = parse_command_line({});
  ASSERT_TRUE(defaults.config);
  EXPECT_EQ(defaults.config->reasoning.tokens, 0);
  EXPECT_EQ(defaults.config->reasoning.field, ReasoningField::kReasoningContent);
  const CliOutcome set = parse_command_line({"--reasoning-tokens", "32", "--reasoning-field", "reasoning"});
  ASSERT_TRUE(set.config) << set.err;
  EXPECT_EQ(set.config->reasoning.tokens, 32);
  EXPECT_EQ(set.config->reasoning.field, ReasoningField::kReasoning);
  EXPECT_EQ(parse_command_line({"--reasoning-tokens", "-1"}).exit_code, 2);
  EXPECT_EQ(parse_command_line({"--reasoning-field", "thoughts"}).exit_code, 2);
}

}  // namespace llmload::server::reasoning_test
