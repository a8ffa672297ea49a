// What a request generates (output_sequence.hpp): text that is a function of the prompt, the
// answering mode (formats, EOS, max_tokens, min_tokens), and the error and divergence models
// token by token, without an engine (the engine's batches: test_output_engine.cpp).
#include "llmload/server/output_sequence.hpp"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/json.hpp"
#include "llmload/server/mock_tokenizer.hpp"
#include "llmload/server/response_encoder.hpp"
#include "llmload/server/router.hpp"

namespace llmload::server::output_sequence_test {
namespace {

using nlohmann::json;

ServerConfig output_config(OutputModelConfig output = {}) {
  ServerConfig c;
  c.models = {"m"};
  c.max_model_len = 4096;
  c.output = output;
  return c;
}

/// The job the router makes of `body` on `target`.
GenerationJob job_of(const Router& router, std::string_view target, const json& body, std::uint64_t sequence = 1) {
  RouteResult r = router.route("POST", target, body.dump(), RequestContext{sequence, 1700000000});
  if (const auto* reply = std::get_if<HttpReply>(&r)) ADD_FAILURE() << reply->status << " " << reply->body;
  return std::get<GenerationJob>(std::move(r));
}

json completion(const std::string& prompt, std::int64_t max_tokens, json extra = json::object()) {
  json body = {{"model", "m"}, {"prompt", prompt}, {"max_tokens", max_tokens}};
  body.update(extra);
  return body;
}

/// A request's output played alone (every token at batch 1).
std::shared_ptr<OutputSequence> play(const GenerationJob& job, std::uint64_t arrival = 0) {
  auto out = std::make_shared<OutputSequence>(job, arrival);
  out->play_alone();
  return out;
}

std::string text_of(const OutputSequence& out) {
  std::string text;
  out.append_text(text, out.length());
  return text;
}

std::string text_of(const Router& router, const json& body, std::string_view target = "/v1/completions") {
  return text_of(*play(job_of(router, target, body)));
}

TEST(OutputSequence, TheSamePromptGivesTheSameTextAtEveryArrivalAndDifferentPromptsDiffer) {
  const Router router(output_config(), 1600000000);
  const json body = completion("Tell me about the sea", 40);
  const std::string text = text_of(router, body);
  EXPECT_EQ(count_words(text), 40);
  for (std::uint64_t arrival : {1u, 2u, 1000u}) EXPECT_EQ(text_of(*play(job_of(router, "/v1/completions", body), arrival)), text);
  EXPECT_NE(text_of(router, completion("Tell me about the sky", 40)), text);
  // A shorter request is a prefix of a longer one with the same prompt.
  EXPECT_EQ(text.rfind(text_of(router, completion("Tell me about the sea", 7)), 0), 0u);
  // The filler draws on the whole vocabulary, not a cycle of it.
  const auto out = play(job_of(router, "/v1/completions", completion("Tell me about the sea", 400)));
  std::vector<int> seen(kGeneratorWords, 0);
  for (std::int64_t k = 0; k < 400; ++k) {
    ASSERT_LT(out->token_id(k), kGeneratorWords);
    EXPECT_EQ(out->token_text(k), generated_token(out->token_id(k)));
    ++seen[out->token_id(k)];
  }
  for (int n : seen) EXPECT_GT(n, 0);
  EXPECT_FALSE(out->token_id(0) == 0 && out->token_id(1) == 1 && out->token_id(2) == 2) << "not the old cycle";
}

TEST(OutputSequence, TheRequestSeedChangesTheText) {
  const Router router(output_config(), 1600000000);
  const std::string plain = text_of(router, completion("hello", 20));
  const std::string seeded = text_of(router, completion("hello", 20, {{"seed", 7}}));
  EXPECT_NE(seeded, plain);
  EXPECT_EQ(text_of(router, completion("hello", 20, {{"seed", 7}})), seeded);
  EXPECT_NE(text_of(router, completion("hello", 20, {{"seed", 8}})), seeded);
  EXPECT_NE(text_of(router, completion("hello", 20, {{"seed", 0}})), plain) << "seed 0 is a seed too";
}

TEST(OutputSequence, ChatTextDependsOnEveryMessagesRoleAndContent) {
  const Router router(output_config(), 1600000000);
  auto chat = [](json messages) { return json{{"model", "m"}, {"messages", messages}, {"max_tokens", 20}}; };
  const json base = {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "hi"}}};
  const std::string text = text_of(router, chat(base), "/v1/chat/completions");
  EXPECT_EQ(text_of(router, chat(base), "/v1/chat/completions"), text);
  json other_role = base;
  other_role[0]["role"] = "user";
  EXPECT_NE(text_of(router, chat(other_role), "/v1/chat/completions"), text);
  json other_content = base;
  other_content[0]["content"] = "be long";
  EXPECT_NE(text_of(router, chat(other_content), "/v1/chat/completions"), text);
  // Parts of one message and the same words split across messages are different prompts.
  const json parts = {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "be brief"}}, {{"type", "text"}, {"text", "hi"}}}}}};
  const json joined = {{{"role", "user"}, {"content", "be briefhi"}}};
  EXPECT_NE(text_of(router, chat(parts), "/v1/chat/completions"), text_of(router, chat(joined), "/v1/chat/completions"));
}

TEST(OutputSequence, TokenIdPromptsAndGenerateBodiesAreSeededToo) {
  const Router router(output_config(), 1600000000);
  const std::string ids = text_of(router, json{{"model", "m"}, {"prompt", {5, 6, 7}}, {"max_tokens", 12}});
  EXPECT_EQ(text_of(router, json{{"model", "m"}, {"prompt", {5, 6, 7}}, {"max_tokens", 12}}), ids);
  EXPECT_NE(text_of(router, json{{"model", "m"}, {"prompt", {5, 6, 8}}, {"max_tokens", 12}}), ids);
  const json gen = {{"text", "hello there"}, {"sampling_params", {{"max_new_tokens", 12}}}};
  EXPECT_EQ(text_of(router, gen, "/generate"), text_of(router, completion("hello there", 12)))
      << "the same text prompt on /generate and /v1/completions";
}

TEST(OutputSequence, AnArithmeticQuestionIsAnsweredFirstThenEos) {
  const Router router(output_config(), 1600000000);
  const auto out = play(job_of(router, "/v1/completions", completion("Q: What is 3 * 4?\nA: 12\nQ: What is 48 + 17 * 3?\nA:", 50)));
  EXPECT_EQ(text_of(*out), " The answer is 99. #### 99");
  EXPECT_EQ(out->length(), 6);
  EXPECT_TRUE(out->stopped());
  EXPECT_EQ(out->answer_tokens(), 6);
  EXPECT_EQ(out->wrong_answer(), false);
  EXPECT_EQ(out->token_id(0), token_id("The"));
  EXPECT_EQ(out->token_id(5), token_id("99"));
  // Its words are spelled by /detokenize (remembered like /tokenize's).
  std::vector<std::uint32_t> ids;
  for (std::int64_t k = 0; k < out->length(); ++k) ids.push_back(out->token_id(k));
  const RouteResult d = router.route("POST", "/detokenize", json{{"tokens", ids}}.dump(), RequestContext{9, 0});
  EXPECT_EQ(json::parse(std::get<HttpReply>(d).body)["prompt"], "The answer is 99. #### 99");
}

TEST(OutputSequence, MultipleChoiceIsAnsweredWithTheLetter) {
  const Router router(output_config(), 1600000000);
  const std::string prompt = "What is 6 * 7?\nA. 40\nB. 41\nC. 42\nD. 43\nAnswer:";
  const auto out = play(job_of(router, "/v1/completions", completion(prompt, 16)));
  EXPECT_EQ(text_of(*out), " Answer: C");
  EXPECT_TRUE(out->stopped());
  // Chat: the last user message is the question.
  const json chat = {{"model", "m"},
                     {"max_tokens", 16},
                     {"messages",
                      {{{"role", "user"}, {"content", "What is 1 + 1?"}},
                       {{"role", "assistant"}, {"content", "The answer is 2. #### 2"}},
                       {{"role", "user"}, {"content", {{{"type", "text"}, {"text", prompt}}}}}}}};
  EXPECT_EQ(text_of(router, chat, "/v1/chat/completions"), " Answer: C");
  // An expression in another message is not the question.
  const json no_question = {{"model", "m"},
                            {"max_tokens", 5},
                            {"messages",
                             {{{"role", "system"}, {"content", "What is 1 + 1?"}}, {{"role", "user"}, {"content", "hi"}}}}};
  const auto plain = play(job_of(router, "/v1/chat/completions", no_question));
  EXPECT_EQ(plain->length(), 5);
  EXPECT_FALSE(plain->stopped());
  EXPECT_FALSE(plain->wrong_answer().has_value());
}

TEST(OutputSequence, IgnoreEosContinuesWithFillerMaxTokensCutsMinTokensDelaysEos) {
  const Router router(output_config(), 1600000000);
  const std::string q = "What is 48 + 17 * 3?";
  auto run = [&](std::int64_t max_tokens, json extra) { return play(job_of(router, "/v1/completions", completion(q, max_tokens, extra))); };

  auto out = run(20, {{"ignore_eos", true}});
  EXPECT_EQ(out->length(), 20);
  EXPECT_FALSE(out->stopped());
  const std::string text = text_of(*out);
  EXPECT_EQ(text.rfind(" The answer is 99. #### 99 ", 0), 0u) << text;
  EXPECT_EQ(count_words(text), 20);
  for (std::int64_t k = 6; k < 20; ++k) EXPECT_LT(out->token_id(k), kGeneratorWords) << "filler after the answer";

  out = run(4, json::object());  // cut: "length"
  EXPECT_EQ(text_of(*out), " The answer is 99.");
  EXPECT_FALSE(out->stopped());
  EXPECT_EQ(out->wrong_answer(), false);

  out = run(6, json::object());  // exactly the answer: EOS would come next, max_tokens first
  EXPECT_EQ(out->length(), 6);
  EXPECT_FALSE(out->stopped());

  out = run(20, {{"min_tokens", 9}});  // EOS no earlier than min_tokens
  EXPECT_EQ(out->length(), 9);
  EXPECT_TRUE(out->stopped());
  EXPECT_EQ(text_of(*out).rfind(" The answer is 99. #### 99 ", 0), 0u);

  out = run(9, {{"min_tokens", 9}});
  EXPECT_EQ(out->length(), 9);
  EXPECT_FALSE(out->stopped());
}

TEST(OutputSequence, AnswersOffAndPromptsWithoutQuestionsKeepTheLength) {
  OutputModelConfig off;
  off.answers = false;
  const Router router(output_config(off), 1600000000);
  const auto out = play(job_of(router, "/v1/completions", completion("What is 48 + 17 * 3?", 12)));
  EXPECT_EQ(out->length(), 12);
  EXPECT_FALSE(out->stopped());
  EXPECT_FALSE(out->wrong_answer().has_value());
  EXPECT_EQ(text_of(*out).find("answer"), std::string::npos);
}

TEST(OutputSequence, TheEncoderWritesStopForAnAnsweredRequest) {
  const Router router(output_config(), 1600000000);
  GenerationJob job = job_of(router, "/v1/completions", completion("What is 2 * 21?", 30));
  const json body = json::parse(ResponseEncoder(job).full_body());
  EXPECT_EQ(body["choices"][0]["text"], " The answer is 42. #### 42");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["usage"]["completion_tokens"], 6);
  job.request.stream = true;
  const auto out = play(job);
  const ResponseEncoder enc(job, out);
  std::string sse;
  for (std::int64_t k = 0; k < out->length(); ++k) enc.append_token_events(k, sse, Framing::kNone);
  EXPECT_NE(sse.find(R"("text":" 42","logprobs":null,"finish_reason":"stop","stop_reason":null)"), std::string::npos)
      << sse;
  // SGLang: finish_reason {"type":"stop"}.
  const GenerationJob gen = job_of(router, "/generate", json{{"text", "What is 2 * 21?"}});
  const json meta = json::parse(ResponseEncoder(gen).full_body())["meta_info"];
  EXPECT_EQ(meta["finish_reason"], json::parse(R"({"type":"stop","matched":null})"));
  EXPECT_EQ(meta["completion_tokens"], 6);
}

TEST(OutputSequence, GroundTruthFieldsAreWrittenWhenKnown) {
  RequestOutcome o;
  EXPECT_FALSE(json::parse(llmload_json(o)).contains("wrong_answer"));
  EXPECT_FALSE(json::parse(llmload_json(o)).contains("diverged_at"));
  o.wrong_answer = true;
  o.diverged_at = 17;
  const json j = json::parse(llmload_json(o));
  EXPECT_EQ(j["wrong_answer"], true);
  EXPECT_EQ(j["diverged_at"], 17);
}

// ---- the error model, token by token --------------------------------------------------------

GenerationJob question_job(const OutputModelConfig& model, std::int64_t max_tokens = 30) {
  const Router router(output_config(model), 1600000000);
  return job_of(router, "/v1/completions", completion("What is 48 + 17 * 3?", max_tokens));
}

TEST(OutputSequence, WrongAnswersFollowTheRateTheBatchAndPreemption) {
  OutputModelConfig m;
  m.wrong_answer_rate = 1.0;
  auto out = play(question_job(m));
  EXPECT_EQ(out->wrong_answer(), true);
  const std::string wrong = text_of(*out);
  EXPECT_NE(wrong, " The answer is 99. #### 99");
  EXPECT_EQ(wrong.rfind(" The answer is ", 0), 0u) << wrong;

  m.wrong_answer_rate = 0.0;
  m.wrong_answer_batch_slope = 0.1;
  OutputSequence alone(question_job(m), 3);
  alone.on_token(0, 1, 0);  // p = 0 at batch 1
  EXPECT_EQ(alone.wrong_answer(), false);
  OutputSequence batched(question_job(m), 3);
  batched.on_token(0, 11, 0);  // p = min(1, 0 + 0.1 x 10) = 1
  EXPECT_EQ(batched.wrong_answer(), true);

  m.wrong_answer_batch_slope = 0.0;
  m.wrong_answer_preempted = 1.0;
  OutputSequence preempted(question_job(m), 3);
  preempted.on_token(0, 1, 1);
  EXPECT_EQ(preempted.wrong_answer(), true);
  OutputSequence not_preempted(question_job(m), 3);
  not_preempted.on_token(0, 1, 0);
  EXPECT_EQ(not_preempted.wrong_answer(), false);
}

TEST(OutputSequence, WrongAnswerDrawsDependOnTheArrivalAndTheServerSeedNotThePrompt) {
  OutputModelConfig m;
  m.wrong_answer_rate = 0.5;
  const GenerationJob a = question_job(m);
  const Router router(output_config(m), 1600000000);
  const GenerationJob b = job_of(router, "/v1/completions", completion("Compute 5 * 5 + 1 please", 30));
  int same = 0;
  int wrong = 0;
  for (std::uint64_t arrival = 0; arrival < 200; ++arrival) {
    const bool wa = *play(a, arrival)->wrong_answer();
    same += wa == *play(b, arrival)->wrong_answer() ? 1 : 0;
    wrong += wa ? 1 : 0;
    EXPECT_EQ(*play(a, arrival)->wrong_answer(), wa) << "reproducible";
  }
  EXPECT_EQ(same, 200) << "the same draws for any prompt";
  EXPECT_GT(wrong, 60);
  EXPECT_LT(wrong, 140);
  GenerationJob reseeded = a;
  reseeded.seed = 12345;
  int differ = 0;
  for (std::uint64_t arrival = 0; arrival < 200; ++arrival) {
    differ += *play(a, arrival)->wrong_answer() != *play(reseeded, arrival)->wrong_answer() ? 1 : 0;
  }
  EXPECT_GT(differ, 50) << "--seed changes the draws";
}

// ---- the divergence model, token by token ---------------------------------------------------

TEST(OutputSequence, DivergenceChangesTheTokenWhereItFiresAndTheStreamAfter) {
  OutputModelConfig m;
  const Router plain_router(output_config(m), 1600000000);
  m.divergence_rate = 1.0;  // fires at the first token it may
  const Router router(output_config(m), 1600000000);
  const json body = completion("a prompt without questions", 60);
  const auto reference = play(job_of(plain_router, "/v1/completions", body));
  const auto diverged = play(job_of(router, "/v1/completions", body));
  EXPECT_FALSE(reference->diverged_at().has_value());
  ASSERT_EQ(diverged->diverged_at(), 0);
  EXPECT_NE(diverged->token_id(0), reference->token_id(0));
  int equal_after = 0;
  for (std::int64_t k = 1; k < 60; ++k) equal_after += diverged->token_id(k) == reference->token_id(k) ? 1 : 0;
  EXPECT_LT(equal_after, 15) << "another stream (about 1 in 32 equal by chance)";

  // After an answer: the answer is kept, the first filler token diverges.
  const auto answered = play(job_of(router, "/v1/completions", completion("What is 2 + 2?", 20, {{"ignore_eos", true}})));
  const auto answered_ref =
      play(job_of(plain_router, "/v1/completions", completion("What is 2 + 2?", 20, {{"ignore_eos", true}})));
  ASSERT_EQ(answered->diverged_at(), 6);
  for (std::int64_t k = 0; k < 6; ++k) EXPECT_EQ(answered->token_id(k), answered_ref->token_id(k));
  EXPECT_NE(answered->token_id(6), answered_ref->token_id(6));
}

TEST(OutputSequence, DivergenceAtAGivenStepKeepsEveryTokenBeforeIt) {
  OutputModelConfig m;
  m.divergence_batch_slope = 1.0;  // batch 1: never; batch 2: always
  const Router router(output_config(m), 1600000000);
  const GenerationJob job = job_of(router, "/v1/completions", completion("some words", 40));
  const auto reference = play(job);
  EXPECT_FALSE(reference->diverged_at().has_value()) << "P0 = 0: nothing diverges at batch 1";
  OutputSequence late(job, 0);
  for (std::int64_t k = 0; k < 40; ++k) late.on_token(k, k < 25 ? 1 : 2, 0);
  ASSERT_EQ(late.diverged_at(), 25);
  for (std::int64_t k = 0; k < 25; ++k) EXPECT_EQ(late.token_text(k), reference->token_text(k));
  EXPECT_NE(late.token_id(25), reference->token_id(25));
  // Two divergence positions give two different continuations.
  OutputSequence later(job, 0);
  for (std::int64_t k = 0; k < 40; ++k) later.on_token(k, k < 30 ? 1 : 2, 0);
  int equal = 0;
  for (std::int64_t k = 31; k < 40; ++k) equal += later.token_id(k) == late.token_id(k) ? 1 : 0;
  EXPECT_LT(equal, 5);
}

TEST(OutputSequence, BatchProbabilityIsClampedToOne) {
  EXPECT_DOUBLE_EQ(batch_probability(0.1, 0.02, 1), 0.1);
  EXPECT_DOUBLE_EQ(batch_probability(0.1, 0.02, 8), 0.24);
  EXPECT_DOUBLE_EQ(batch_probability(0.5, 0.2, 100), 1.0);
  EXPECT_DOUBLE_EQ(batch_probability(0.1, 0.5, 0), 0.1) << "batch taken as at least 1";
}

}  // namespace
}  // namespace llmload::server::output_sequence_test
