// The step runner's public contract. Without a GPU (CI, this project's build machines): probe()
// explains, create() throws. With one, the GPU tests check that step times follow bytes and flops.

#include "llmload/server/gpu/step_runner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmload::server::gpu {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(Probe, NeverThrowsAndExplainsWhenUnusable) {
  Availability a;
  EXPECT_NO_THROW(a = probe());
  if (a.usable) {
    ASSERT_TRUE(a.info.has_value());
    EXPECT_TRUE(a.reason.empty()) << a.reason;
    EXPECT_GT(a.info->sm_count, 0);
    EXPECT_GE(a.info->cc_major, 8);
    EXPECT_GT(a.info->total_memory_bytes, 0.0);
    EXPECT_FALSE(a.info->name.empty());
  } else {
    EXPECT_FALSE(a.reason.empty());
  }
}

TEST(Probe, StubSaysItWasBuiltWithoutCuda) {
  if (built_with_cuda()) GTEST_SKIP() << "built with CUDA";
  const Availability a = probe();
  EXPECT_FALSE(a.usable);
  EXPECT_FALSE(a.info.has_value());
  EXPECT_NE(a.reason.find("built without CUDA"), std::string::npos) << a.reason;
}

TEST(Probe, NoGpuIsAnAnswerNotAFailure) {
  const Availability a = probe();
  if (a.usable) GTEST_SKIP() << "a GPU is usable here";
  // Either the stub, or cudaGetDeviceCount's error passed on (no driver, no device).
  const bool says_why = a.reason.find("built without CUDA") != std::string::npos ||
                        a.reason.find("no CUDA device") != std::string::npos ||
                        a.reason.find("compute capability") != std::string::npos ||
                        a.reason.find("kernel image") != std::string::npos;
  EXPECT_TRUE(says_why) << a.reason;
}

TEST(Probe, NonexistentDevicesAreUnusable) {
  for (const int device : {-1, 4096}) {
    Availability a;
    EXPECT_NO_THROW(a = probe(device));
    EXPECT_FALSE(a.usable) << device;
    EXPECT_FALSE(a.reason.empty()) << device;
  }
}

TEST(Create, WithoutAGpuThrowsSayingSo) {
  if (probe().usable) GTEST_SKIP() << "a GPU is usable here";
  try {
    (void)StepRunner::create(0, 16e9, 1e9);
    FAIL() << "create() returned without a usable GPU";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable GPU"), std::string::npos) << e.what();
  }
}

TEST(Create, NonexistentDeviceThrows) {
  EXPECT_THROW((void)StepRunner::create(4096, 1e9, 0), std::runtime_error);
}

// --- with a GPU --------------------------------------------------------------------------------

class OnGpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!probe().usable) return;
    runner_ = StepRunner::create(0, 2048 * kMiB, 0).release();
  }
  static void TearDownTestSuite() {
    delete runner_;
    runner_ = nullptr;
  }
  void SetUp() override {
    if (runner_ == nullptr) GTEST_SKIP() << "no usable GPU: " << probe().reason;
  }
  /// Median GPU seconds of a few runs.
  static double step_seconds(const StepCost& cost) {
    std::vector<double> s;
    for (int k = 0; k < 5; ++k) s.push_back(runner_->execute(cost).gpu_seconds);
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  static StepRunner* runner_;
};
StepRunner* OnGpu::runner_ = nullptr;

TEST_F(OnGpu, BufferAndInfo) {
  EXPECT_GE(runner_->buffer_bytes(), 256 * kMiB);
  EXPECT_LE(runner_->buffer_bytes(), 2048 * kMiB);
  EXPECT_GT(runner_->info().sm_count, 0);
}

TEST_F(OnGpu, ReportsWhatItDid) {
  StepCost c;
  c.weight_bytes = 100 * kMiB + 3;
  c.kv_bytes = 10 * kMiB;
  c.linear_flops = 1e11;
  c.attention_flops = 1e10;
  const StepResult r = runner_->execute(c);
  EXPECT_GE(r.bytes_read, c.weight_bytes + c.kv_bytes);
  EXPECT_LT(r.bytes_read, c.weight_bytes + c.kv_bytes + 16);
  EXPECT_GE(r.flops, c.linear_flops + c.attention_flops);
  EXPECT_GT(r.gpu_seconds, 0.0);
  EXPECT_GE(r.wall_seconds, r.gpu_seconds * 0.9);
}

TEST_F(OnGpu, EmptyStepIsQuick) {
  const StepResult r = runner_->execute(StepCost{});
  EXPECT_EQ(r.bytes_read, 0.0);
  EXPECT_EQ(r.flops, 0.0);
  EXPECT_LT(r.gpu_seconds, 1e-3);
}

TEST_F(OnGpu, TimeGrowsWithBytes) {
  StepCost small, big;
  small.weight_bytes = 64 * kMiB;
  big.weight_bytes = 8192 * kMiB;  // wraps around the 2 GiB buffer four times
  EXPECT_GT(step_seconds(big), 4.0 * step_seconds(small));
}

TEST_F(OnGpu, TimeGrowsWithFlops) {
  StepCost small, big;
  small.linear_flops = 1e11;
  big.linear_flops = 1e13;
  EXPECT_GT(step_seconds(big), 4.0 * step_seconds(small));
}

TEST_F(OnGpu, OverlappedStepTakesAboutTheLongerPart) {
  StepCost mem, cmp, both;
  mem.weight_bytes = 4096 * kMiB;
  cmp.linear_flops = 2e12;
  both.weight_bytes = mem.weight_bytes;
  both.linear_flops = cmp.linear_flops;
  const double t_mem = step_seconds(mem), t_cmp = step_seconds(cmp), t_both = step_seconds(both);
  EXPECT_GE(t_both, 0.9 * std::max(t_mem, t_cmp));
  // Not an exact roofline (the kernels share the SMs), but no worse than running them one after
  // the other; the printed times show how much they overlap.
  EXPECT_LT(t_both, 1.05 * (t_mem + t_cmp));
  std::cout << "mem " << t_mem << " s, compute " << t_cmp << " s, both " << t_both << " s\n";
}

TEST_F(OnGpu, BandwidthAndFlopRatesArePositive) {
  const double copy = runner_->measure_copy_bandwidth(512 * kMiB, 3);
  const double read = runner_->measure_read_bandwidth(1024 * kMiB, 3);
  const double flops = runner_->measure_tensor_flops(1e13, 3);
  EXPECT_GT(copy, 0.0);
  EXPECT_GT(read, 0.0);
  EXPECT_GT(flops, 0.0);
  std::cout << "copy " << copy / 1e9 << " GB/s, read " << read / 1e9 << " GB/s, tensor " << flops / 1e12
            << " TFLOP/s\n";
}

}  // namespace
}  // namespace llmload::server::gpu
