// The output model through the engine on virtual time (simulate(): no clock): outputs that do
// not depend on the load, and the error and divergence models' rates at the batch sizes the
// scheduler really ran, checked against their formulas with 99% Wilson intervals. Every draw is
// seeded, so these runs are the same on every machine.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llmload/server/engine/simulate.hpp"
#include "llmload/server/json.hpp"
#include "llmload/server/output_sequence.hpp"
#include "llmload/server/router.hpp"

namespace llmload::server::output_engine_test {
namespace {

using nlohmann::json;

/// Forwards to a request's OutputSequence and records the batches the engine reported.
class RecordingDecider final : public OutputDecider {
 public:
  explicit RecordingDecider(std::shared_ptr<OutputSequence> output) : output_(std::move(output)) {}
  bool on_token(std::int64_t index, std::int64_t batch, std::int64_t preemptions) override {
    if (index == 0) {
      first_batch = batch;
      preemptions_before_first = preemptions;
    }
    batches.push_back(batch);
    return output_->on_token(index, batch, preemptions);
  }
  const OutputSequence& output() const { return *output_; }
  std::int64_t first_batch = -1;
  std::int64_t preemptions_before_first = -1;
  std::vector<std::int64_t> batches;

 private:
  std::shared_ptr<OutputSequence> output_;
};

struct EngineRun {
  std::vector<std::shared_ptr<RecordingDecider>> requests;
  SimResult result;
};

/// Plays `bodies` (completions) through the tiny profile's engine: request i arrives at
/// (i / burst) seconds, so requests come in bursts of `burst` far enough apart to finish first.
EngineRun run_engine(const std::vector<json>& bodies, const OutputModelConfig& model, std::int64_t burst,
                     SchedulerConfig sched = {}) {
  ServerConfig config;
  config.models = {"m"};
  config.max_model_len = 2048;
  config.output = model;
  const Router router(config, 1600000000);
  const Profile profile = load_profile("tiny");
  if (sched.num_blocks == 1024) {  // not given: the tiny profile's engine with at most `burst` running
    sched = SchedulerConfig{burst, profile.engine.max_num_batched_tokens, profile.engine.block_size,
                            profile.num_blocks(), false};
  }
  EngineRun run;
  std::vector<SimArrival> arrivals;
  std::vector<std::shared_ptr<OutputDecider>> deciders;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    RouteResult routed = router.route("POST", "/v1/completions", bodies[i].dump(), RequestContext{i, 0});
    const GenerationJob job = std::get<GenerationJob>(std::move(routed));
    auto decider = std::make_shared<RecordingDecider>(std::make_shared<OutputSequence>(job, i));
    run.requests.push_back(decider);
    deciders.push_back(decider);
    arrivals.push_back(SimArrival{static_cast<double>(static_cast<std::int64_t>(i) / burst),
                                  EngineRequest{i, job.request.prompt_tokens, job.request.max_tokens, {}}});
  }
  run.result = simulate(sched, CostModel(profile), arrivals, deciders);
  return run;
}

struct Interval {
  double lo = 0;
  double hi = 0;
  bool contains(double p) const { return lo <= p && p <= hi; }
};

/// The Wilson score interval of k successes in n trials at 99% confidence.
Interval wilson99(std::int64_t k, std::int64_t n) {
  constexpr double z = 2.5758293035489;
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double denom = 1 + z * z / nn;
  const double center = (p + z * z / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
  return {center - half, center + half};
}

std::vector<json> questions(std::int64_t n, std::int64_t max_tokens = 16) {
  std::vector<json> out;
  for (std::int64_t i = 0; i < n; ++i) {
    out.push_back({{"model", "m"}, {"prompt", "What is " + std::to_string(i) + " + 7?"}, {"max_tokens", max_tokens}});
  }
  return out;
}

std::int64_t wrong_answers(const EngineRun& run) {
  std::int64_t wrong = 0;
  for (const auto& r : run.requests) wrong += r->output().wrong_answer().value_or(false) ? 1 : 0;
  return wrong;
}

TEST(OutputEngine, OutputsDoNotDependOnTheLoadWithBothModelsOff) {
  std::vector<json> bodies;
  for (int i = 0; i < 48; ++i) {
    bodies.push_back({{"model", "m"}, {"prompt", "story number " + std::to_string(i)}, {"max_tokens", 40}});
  }
  bodies.push_back({{"model", "m"}, {"prompt", "What is 12 * 12?"}, {"max_tokens", 40}});
  const EngineRun alone = run_engine(bodies, {}, 1);
  const EngineRun crowded = run_engine(bodies, {}, 49);  // one burst: batches up to 49, queueing
  std::int64_t largest = 0;
  for (const auto& r : crowded.requests) largest = std::max(largest, *std::max_element(r->batches.begin(), r->batches.end()));
  EXPECT_GE(largest, 16);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const OutputSequence& a = alone.requests[i]->output();
    const OutputSequence& b = crowded.requests[i]->output();
    ASSERT_EQ(a.length(), b.length()) << i;
    std::string ta;
    std::string tb;
    a.append_text(ta, a.length());
    b.append_text(tb, b.length());
    EXPECT_EQ(ta, tb) << i;
    EXPECT_FALSE(b.diverged_at().has_value());
  }
  EXPECT_EQ(alone.result.requests.back().token_times.size(), 6u) << "the answer, then EOS";
}

TEST(OutputEngine, WrongAnswerRateAtBatchOneIsTheConfiguredRate) {
  OutputModelConfig model;
  model.wrong_answer_rate = 0.2;
  const EngineRun run = run_engine(questions(2000), model, 1);
  for (const auto& r : run.requests) ASSERT_EQ(r->first_batch, 1);
  const Interval ci = wilson99(wrong_answers(run), 2000);
  EXPECT_TRUE(ci.contains(0.2)) << "[" << ci.lo << ", " << ci.hi << "]";
  // Answers stop at EOS whether right or wrong: every request generated its 6 tokens.
  for (const auto& r : run.result.requests) EXPECT_EQ(r.token_times.size(), 6u);
}

TEST(OutputEngine, WrongAnswerRateGrowsWithTheBatchAsConfigured) {
  OutputModelConfig model;
  model.wrong_answer_rate = 0.1;
  model.wrong_answer_batch_slope = 0.02;  // batch 8: 0.1 + 0.02 x 7 = 0.24
  const EngineRun alone = run_engine(questions(2000), model, 1);
  const EngineRun batched = run_engine(questions(2000), model, 8);
  for (const auto& r : batched.requests) ASSERT_EQ(r->first_batch, 8) << "a burst's prefills share one step";
  const Interval at1 = wilson99(wrong_answers(alone), 2000);
  const Interval at8 = wilson99(wrong_answers(batched), 2000);
  EXPECT_TRUE(at1.contains(0.1)) << "[" << at1.lo << ", " << at1.hi << "]";
  EXPECT_TRUE(at8.contains(0.24)) << "[" << at8.lo << ", " << at8.hi << "]";
  EXPECT_GT(at8.lo, at1.hi);
}

TEST(OutputEngine, APreemptedRequestUsesThePreemptedProbability) {
  OutputModelConfig model;
  model.wrong_answer_rate = 0.0;
  model.wrong_answer_preempted = 1.0;
  // Long prompts and a small KV cache: later admissions are preempted while they prefill.
  std::vector<json> bodies;
  for (int i = 0; i < 64; ++i) {
    std::string prompt = "What is " + std::to_string(i) + " * 3?";
    for (int w = 0; w < 150; ++w) prompt += " word" + std::to_string(w);
    bodies.push_back({{"model", "m"}, {"prompt", prompt}, {"max_tokens", 16}, {"ignore_eos", true}});
  }
  const EngineRun run = run_engine(bodies, model, 16, SchedulerConfig{8, 64, 16, 24, false});
  std::int64_t preempted_first = 0;
  for (const auto& r : run.requests) {
    EXPECT_EQ(r->output().wrong_answer(), r->preemptions_before_first > 0);
    preempted_first += r->preemptions_before_first > 0 ? 1 : 0;
  }
  EXPECT_GT(preempted_first, 0) << "the setup must preempt some requests before their first token";
  EXPECT_LT(preempted_first, 64);
}

std::vector<json> plain_prompts(std::int64_t n, std::int64_t max_tokens) {
  std::vector<json> out;
  for (std::int64_t i = 0; i < n; ++i) {
    out.push_back({{"model", "m"}, {"prompt", "story number " + std::to_string(i)}, {"max_tokens", max_tokens}});
  }
  return out;
}

std::int64_t diverged(const EngineRun& run) {
  std::int64_t n = 0;
  for (const auto& r : run.requests) n += r->output().diverged_at().has_value() ? 1 : 0;
  return n;
}

TEST(OutputEngine, NothingDivergesAtRateZeroOrAtBatchOneWithOnlyASlope) {
  EXPECT_EQ(diverged(run_engine(plain_prompts(400, 32), {}, 8)), 0);
  OutputModelConfig slope_only;
  slope_only.divergence_batch_slope = 0.05;
  const EngineRun alone = run_engine(plain_prompts(400, 32), slope_only, 1);
  for (const auto& r : alone.requests) {
    ASSERT_EQ(*std::max_element(r->batches.begin(), r->batches.end()), 1);
  }
  EXPECT_EQ(diverged(alone), 0);
  EXPECT_GT(diverged(run_engine(plain_prompts(400, 32), slope_only, 8)), 100) << "the same slope at batch 8";
}

TEST(OutputEngine, AtAFixedBatchDivergenceFollowsTheGeometricLaw) {
  OutputModelConfig model;
  model.divergence_rate = 0.002;
  model.divergence_batch_slope = 0.002;
  constexpr std::int64_t kBatch = 4;
  constexpr std::int64_t kSteps = 64;  // tokens per sequence, each drawn at the batch of its step
  constexpr std::int64_t kSequences = 1600;
  const double p = 0.002 + 0.002 * (kBatch - 1);
  const EngineRun run = run_engine(plain_prompts(kSequences, kSteps), model, kBatch);
  std::vector<double> positions;
  for (const auto& r : run.requests) {
    ASSERT_EQ(static_cast<std::int64_t>(r->batches.size()), kSteps);
    for (const std::int64_t b : r->batches) ASSERT_EQ(b, kBatch) << "each burst runs in lock step";
    if (const auto d = r->output().diverged_at()) positions.push_back(static_cast<double>(*d));
  }
  const double expected_fraction = 1 - std::pow(1 - p, kSteps);
  const Interval ci = wilson99(static_cast<std::int64_t>(positions.size()), kSequences);
  EXPECT_TRUE(ci.contains(expected_fraction)) << expected_fraction << " not in [" << ci.lo << ", " << ci.hi << "]";

  // The first divergence position, given one within kSteps: P(D = k) = p (1-p)^k / F.
  double mean = 0;
  double second = 0;
  for (std::int64_t k = 0; k < kSteps; ++k) {
    const double w = p * std::pow(1 - p, static_cast<double>(k)) / expected_fraction;
    mean += w * static_cast<double>(k);
    second += w * static_cast<double>(k * k);
  }
  const double sd = std::sqrt(second - mean * mean);
  double observed = 0;
  for (const double d : positions) observed += d;
  observed /= static_cast<double>(positions.size());
  const double tolerance = 3.3 * sd / std::sqrt(static_cast<double>(positions.size()));  // ~99.9%
  EXPECT_NEAR(observed, mean, tolerance) << positions.size() << " diverged";
}

}  // namespace
}  // namespace llmload::server::output_engine_test
