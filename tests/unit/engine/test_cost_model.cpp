#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "llmload/server/engine/cost_model.hpp"

namespace llmload::server {
namespace {

// Per-step time of the non-attention layers of Llama-2-7B on one H100 vs tokens in the step
// (Vidur's H100 profile; /work/shared/reference, section 4). The model must stay within 20%.
TEST(CostModel, CalibratedWithin20PercentOfTheMeasuredLlama2_7bOnH100) {
  const CostModel model(load_profile("llama-2-7b-h100"));
  const std::pair<std::int64_t, double> measured[] = {{1, 5.6},     {64, 5.9},     {128, 6.4},   {256, 9.2},
                                                      {512, 12.0},  {1024, 21.0},  {2048, 40.3}, {4096, 83.9}};
  // Prints the table of docs/server.md ("Calibration"), so the documented numbers have a command.
  std::printf("%8s %12s %10s %8s\n", "tokens", "measured_ms", "model_ms", "error");
  for (const auto& [tokens, ms] : measured) {
    const double predicted = model.linear_seconds(tokens) * 1e3;
    std::printf("%8lld %12.1f %10.2f %+7.1f%%\n", static_cast<long long>(tokens), ms, predicted,
                (predicted / ms - 1.0) * 100.0);
    EXPECT_NEAR(predicted / ms, 1.0, 0.20) << tokens << " tokens: predicted " << predicted << " ms, measured " << ms;
  }
}

TEST(CostModel, PlainMaxRooflineMissesTheKneeWhichIsWhyTheModelIsSmooth) {
  Profile p = load_profile("llama-2-7b-h100");
  p.efficiency.roofline_sharpness = 0;  // textbook max()
  const CostModel sharp(p);
  // At 256 tokens memory and compute balance; max() predicts the flat floor, far below 9.2 ms.
  EXPECT_LT(sharp.linear_seconds(256) * 1e3, 9.2 * 0.8);
}

TEST(CostModel, DecodeStepIsMemoryBoundAndGrowsWithContext) {
  const Profile p = load_profile("llama-3-8b-h100");
  const CostModel model(p);
  StepCost one;
  model.add(one, 100, 1, true);
  model.finish(one);
  // Floor: W / (eta_bw x BW) + t_fixed = 16.06e9 / (0.7 x 3.35e12) + 1 ms ~ 7.85 ms.
  EXPECT_NEAR(one.predicted_seconds, 16.06e9 / (0.7 * 3.35e12) + 1e-3, 0.3e-3);
  EXPECT_DOUBLE_EQ(one.weight_bytes, 16.06e9);
  EXPECT_DOUBLE_EQ(one.kv_bytes, 101 * 131072.0);

  StepCost batch;
  for (int i = 0; i < 64; ++i) model.add(batch, 2047, 1, true);
  model.finish(batch);
  EXPECT_EQ(batch.tokens, 64);
  EXPECT_EQ(batch.decode_tokens, 64);
  // 64 x 2048 x 128 KiB = 17.2 GB more to read: about 7 ms more at 70% of 3.35 TB/s.
  EXPECT_GT(batch.predicted_seconds - one.predicted_seconds, 5e-3);
}

TEST(CostModel, PrefillIsComputeBoundWithACausalAttentionTerm) {
  const CostModel model(load_profile("llama-3-8b-h100"));
  StepCost prefill;
  model.add(prefill, 0, 4096, false);
  model.finish(prefill);
  EXPECT_EQ(prefill.prefill_tokens, 4096);
  EXPECT_DOUBLE_EQ(prefill.linear_flops, 2 * 8.03e9 * 4096);
  // 4 x d x L x n(n+1)/2 ~ 2 n^2 d L
  EXPECT_NEAR(prefill.attention_flops, 4.0 * 4096 * 32 * 4096.0 * 4097.0 / 2.0, 1.0);
  // Roughly 24 us per token plus a few percent of attention.
  EXPECT_GT(prefill.predicted_seconds, 4096 * 20e-6);
  EXPECT_LT(prefill.predicted_seconds, 4096 * 40e-6);
  // A chunk after 4096 cached tokens attends to more keys than the first chunk.
  StepCost second;
  model.add(second, 4096, 512, false);
  StepCost first;
  model.add(first, 0, 512, false);
  EXPECT_GT(second.attention_flops, first.attention_flops);
}

TEST(CostModel, EmptyStepTakesNoTime) {
  const CostModel model(load_profile("tiny"));
  StepCost none;
  model.finish(none);
  EXPECT_EQ(none.predicted_seconds, 0);
}

}  // namespace
}  // namespace llmload::server
