// The launch arithmetic of the CUDA step runner: pure, so checked everywhere, GPU or not.

#include "llmload/server/gpu/launch_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace llmload::server::gpu {
namespace {

constexpr int kH100Sms = 132;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(PlanRead, NothingToReadLaunchesNothing) {
  for (const double bytes : {0.0, -5.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const ReadPlan p = plan_read(bytes, kGiB, kH100Sms);
    EXPECT_EQ(p.vectors, 0u) << bytes;
    EXPECT_EQ(p.blocks, 0) << bytes;
    EXPECT_EQ(p.bytes(), 0.0);
  }
}

TEST(PlanRead, RoundsUpToWholeVectorsAndFillsTheGpu) {
  const ReadPlan p = plan_read(16.06e9 + 17, 20 * kGiB, kH100Sms);
  EXPECT_GE(p.bytes(), 16.06e9 + 17);
  EXPECT_LT(p.bytes(), 16.06e9 + 17 + kVectorBytes);
  EXPECT_EQ(p.blocks, kH100Sms * kReadBlocksPerSm);
  EXPECT_EQ(p.threads_per_block, kReadThreadsPerBlock);
  EXPECT_EQ(p.buffer_vectors, static_cast<std::uint64_t>(20 * kGiB / kVectorBytes));
}

TEST(PlanRead, SmallReadsUseFewerBlocks) {
  const ReadPlan p = plan_read(1000, kGiB, kH100Sms);
  EXPECT_EQ(p.vectors, 63u);  // ceil(1000 / 16)
  EXPECT_EQ(p.blocks, 1);
}

TEST(PlanRead, NeverMoreThreadsThanTheBufferHasVectors) {
  // The kernel's wrap-around (one subtraction per step) needs stride <= buffer.
  const double buffer = 64.0 * 1024;  // 4096 vectors
  const ReadPlan p = plan_read(10 * kGiB, buffer, kH100Sms);
  EXPECT_LE(static_cast<std::uint64_t>(p.blocks) * static_cast<std::uint64_t>(p.threads_per_block), p.buffer_vectors);
  EXPECT_GE(p.blocks, 1);
  EXPECT_GT(p.bytes(), buffer);  // reads wrap; the count is still what was asked
}

TEST(PlanRead, RejectsBadArguments) {
  EXPECT_THROW((void)plan_read(1e6, 100, kH100Sms), std::invalid_argument);
  EXPECT_THROW((void)plan_read(1e6, kGiB, 0), std::invalid_argument);
}

TEST(PlanMma, NothingToComputeLaunchesNothing) {
  for (const double flops : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    const MmaPlan p = plan_mma(flops, kH100Sms);
    EXPECT_EQ(p.blocks, 0) << flops;
    EXPECT_EQ(p.flops(), 0.0) << flops;
  }
}

TEST(PlanMma, DoesAtLeastWhatIsAskedAndLittleMore) {
  for (const double flops : {1.0, 8192.0, 1e6, 1.6e10, 2.0 * 8.03e9 * 64, 2.0 * 8.03e9 * 2048, 3e14, 1e17}) {
    const MmaPlan p = plan_mma(flops, kH100Sms);
    EXPECT_GE(p.flops(), flops) << flops;
    // Overshoot: under one block's iteration share; once the grid is full, under 1/sm_count.
    const double one_block = static_cast<double>(p.iterations) * kMmaWarpsPerBlock * kMmaChainsPerWarp * kFlopsPerMma;
    EXPECT_LT(p.flops() - flops, one_block + kFlopsPerMma) << flops;
    EXPECT_LE(p.flops() - flops, std::max(flops / kH100Sms, 32 * kFlopsPerMma)) << flops;
    EXPECT_GE(p.blocks, 1);
    EXPECT_LE(p.blocks, kH100Sms * kMmaBlocksPerSm);
    EXPECT_EQ(p.warps_per_block, kMmaWarpsPerBlock);
    EXPECT_GE(p.iterations, 1);
  }
}

TEST(PlanMma, LargeRequestsUseTheFullGrid) {
  const MmaPlan p = plan_mma(1e15, kH100Sms);
  EXPECT_EQ(p.blocks, kH100Sms * kMmaBlocksPerSm);
  EXPECT_GT(p.iterations, 1000);
}

TEST(PlanBuffer, WeightsPlusAllowanceWhenTheyFit) {
  const double b = plan_buffer_bytes(16.06e9, 4e9, 79.0 * kGiB);
  EXPECT_LE(b, 16.06e9 + 4e9);
  EXPECT_GT(b, 16.06e9 + 4e9 - kBufferGranuleBytes);
  EXPECT_EQ(std::fmod(b, kBufferGranuleBytes), 0.0);
}

TEST(PlanBuffer, CappedAtEightyPercentOfFree) {
  const double b = plan_buffer_bytes(140e9, 300e9, 79.0 * kGiB);
  EXPECT_LE(b, 0.8 * 79.0 * kGiB);
  EXPECT_GT(b, 0.8 * 79.0 * kGiB - kBufferGranuleBytes);
}

TEST(PlanBuffer, AtLeastTheL2BeatingMinimum) {
  EXPECT_EQ(plan_buffer_bytes(1e6, 0, 79.0 * kGiB), kMinBufferBytes);
  EXPECT_EQ(plan_buffer_bytes(0, 0, 79.0 * kGiB), kMinBufferBytes);
}

TEST(PlanBuffer, ZeroWhenTooLittleIsFree) {
  EXPECT_EQ(plan_buffer_bytes(16e9, 0, 10.0 * 1024 * 1024), 0.0);
  EXPECT_EQ(plan_buffer_bytes(16e9, 0, 0), 0.0);
}

TEST(LaunchShapes, BothKernelsFitOnAnSmTogether) {
  // The point of the register caps: persistent grids that overlap rather than queue.
  const int registers = kReadBlocksPerSm * kReadThreadsPerBlock * kReadMaxRegisters +
                        kMmaBlocksPerSm * kMmaWarpsPerBlock * 32 * kMmaMaxRegisters;
  EXPECT_LE(registers, kSmRegisters);
  EXPECT_GE(kReadMinBlocksPerSm, kReadBlocksPerSm);
  EXPECT_GE(kMmaMinBlocksPerSm, kMmaBlocksPerSm);
}

}  // namespace
}  // namespace llmload::server::gpu
