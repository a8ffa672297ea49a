#pragma once
// How a step's bytes and flops become kernel launches, and how big the read buffer is: pure
// arithmetic, shared by the CUDA step runner and its unit tests (which run without a GPU).
// Kept C++17 because nvcc compiles it too.
//
// The launch shapes are fixed starting points, not tuned per GPU: the read kernel wants enough
// 16-byte loads in flight to saturate HBM, the tensor kernel enough independent mma chains per SM
// to keep the tensor cores busy, and the two together should fit on an SM at the same time
// (registers) so that they really overlap. docs/gpu.md says how to check them with the benchmark.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace llmload::server::gpu {

// --- memory-bound read kernel ------------------------------------------------------------------
inline constexpr int kVectorBytes = 16;          ///< one uint4 load
inline constexpr int kReadThreadsPerBlock = 256;
inline constexpr int kReadBlocksPerSm = 4;       ///< 1024 threads x 4 loads in flight per SM
inline constexpr int kReadUnroll = 4;            ///< independent loads per thread per iteration

// --- compute-bound tensor kernel (nvcuda::wmma, bf16 in, fp32 accumulate) ------------------------
inline constexpr int kMmaM = 16, kMmaN = 16, kMmaK = 16;
inline constexpr double kFlopsPerMma = 2.0 * kMmaM * kMmaN * kMmaK;  ///< 8192
inline constexpr int kMmaChainsPerWarp = 4;      ///< independent accumulators, mmas per iteration
inline constexpr int kMmaWarpsPerBlock = 8;
inline constexpr int kMmaBlocksPerSm = 2;

// --- both kernels on one SM at once ------------------------------------------------------------
// Both kernels are persistent (a fixed grid that loops), so a block that does not fit beside the
// other kernel's blocks would wait for it to end and the step would take the sum, not the max.
// The register caps (enforced with __launch_bounds__) keep both grids resident together within an
// SM's 64 Ki registers and 2048 threads (Ampere and Hopper).
inline constexpr int kReadMaxRegisters = 32;  ///< the kernel needs about 25
inline constexpr int kMmaMaxRegisters = 48;   ///< the kernel needs about 48 (fragments: 40)
inline constexpr int kSmRegisters = 64 * 1024;
inline constexpr int kSmThreads = 2048;
inline constexpr int kReadMinBlocksPerSm = kSmRegisters / (kReadThreadsPerBlock * kReadMaxRegisters);  ///< for __launch_bounds__
inline constexpr int kMmaMinBlocksPerSm = kSmRegisters / (kMmaWarpsPerBlock * 32 * kMmaMaxRegisters);  ///< for __launch_bounds__
static_assert(kReadBlocksPerSm * kReadThreadsPerBlock * kReadMaxRegisters +
                      kMmaBlocksPerSm * kMmaWarpsPerBlock * 32 * kMmaMaxRegisters <=
                  kSmRegisters,
              "the read and tensor grids must fit on the SMs together");
static_assert(kReadBlocksPerSm * kReadThreadsPerBlock + kMmaBlocksPerSm * kMmaWarpsPerBlock * 32 <= kSmThreads,
              "the read and tensor grids must fit on the SMs together");

// --- read buffer -------------------------------------------------------------------------------
inline constexpr double kMinBufferBytes = 256.0 * 1024 * 1024;  ///< well above any L2 (50-126 MiB)
inline constexpr double kBufferFreeFraction = 0.8;              ///< of free memory at start
inline constexpr double kBufferGranuleBytes = 2.0 * 1024 * 1024;
inline constexpr double kMinUsableBufferBytes = 16.0 * 1024 * 1024;

/// One launch of the read kernel: `vectors` 16-byte loads, the i-th at index i mod buffer_vectors.
struct ReadPlan {
  std::uint64_t vectors = 0;         ///< 0: nothing to launch
  std::uint64_t buffer_vectors = 0;  ///< reads wrap here
  int blocks = 0;
  int threads_per_block = 0;
  double bytes() const { return static_cast<double>(vectors) * kVectorBytes; }
};

/// One launch of the tensor kernel: each of blocks x warps_per_block warps runs `iterations`
/// iterations of kMmaChainsPerWarp 16x16x16 mmas.
struct MmaPlan {
  int blocks = 0;  ///< 0: nothing to launch
  int warps_per_block = 0;
  std::int64_t iterations = 0;
  double mmas() const {
    return static_cast<double>(blocks) * warps_per_block * static_cast<double>(iterations) * kMmaChainsPerWarp;
  }
  double flops() const { return mmas() * kFlopsPerMma; }
};

namespace detail {
inline double non_negative(double x) { return std::isfinite(x) && x > 0 ? x : 0.0; }
}  // namespace detail

/// Reads `bytes` (rounded up to whole 16-byte vectors) from a buffer of `buffer_bytes`.
/// Grid-stride with at most kReadBlocksPerSm blocks per SM, never more threads than the buffer
/// has vectors (the kernel's wrap-around assumes stride <= buffer). Throws std::invalid_argument
/// for a buffer smaller than one block's loads or sm_count < 1.
inline ReadPlan plan_read(double bytes, double buffer_bytes, int sm_count) {
  if (sm_count < 1) throw std::invalid_argument("plan_read: sm_count must be >= 1");
  ReadPlan p;
  p.buffer_vectors = static_cast<std::uint64_t>(detail::non_negative(buffer_bytes) / kVectorBytes);
  if (p.buffer_vectors < static_cast<std::uint64_t>(kReadThreadsPerBlock))
    throw std::invalid_argument("plan_read: buffer smaller than one block of 16-byte loads");
  p.vectors = static_cast<std::uint64_t>(std::ceil(detail::non_negative(bytes) / kVectorBytes));
  if (p.vectors == 0) return p;
  p.threads_per_block = kReadThreadsPerBlock;
  const std::uint64_t per_block = static_cast<std::uint64_t>(kReadThreadsPerBlock) * kReadUnroll;
  std::uint64_t blocks = (p.vectors + per_block - 1) / per_block;
  blocks = std::min<std::uint64_t>(blocks, static_cast<std::uint64_t>(sm_count) * kReadBlocksPerSm);
  blocks = std::min<std::uint64_t>(blocks, p.buffer_vectors / kReadThreadsPerBlock);
  p.blocks = static_cast<int>(std::max<std::uint64_t>(blocks, 1));
  return p;
}

/// Does at least `flops` (rounded up to whole mmas; the overshoot is under one block's share,
/// below 1/sm_count of the request once the grid is full). Small requests use fewer blocks, large
/// ones a full grid (kMmaBlocksPerSm per SM) with more iterations. Throws std::invalid_argument for
/// sm_count < 1.
inline MmaPlan plan_mma(double flops, int sm_count) {
  if (sm_count < 1) throw std::invalid_argument("plan_mma: sm_count must be >= 1");
  MmaPlan p;
  const double mmas = std::ceil(detail::non_negative(flops) / kFlopsPerMma);
  if (mmas <= 0) return p;
  const double per_block_iteration = static_cast<double>(kMmaWarpsPerBlock) * kMmaChainsPerWarp;
  const double full_grid = static_cast<double>(sm_count) * kMmaBlocksPerSm;
  const double iterations = std::ceil(mmas / (full_grid * per_block_iteration));
  const double blocks = std::ceil(mmas / (iterations * per_block_iteration));
  p.warps_per_block = kMmaWarpsPerBlock;
  p.iterations = static_cast<std::int64_t>(iterations);
  p.blocks = static_cast<int>(std::min(blocks, full_grid));
  return p;
}

/// The read buffer's size: max(weight + kv allowance, kMinBufferBytes), capped at
/// kBufferFreeFraction of `free_bytes`, rounded down to 2 MiB. Returns 0 when that is below
/// kMinUsableBufferBytes (the caller reports too little free memory).
inline double plan_buffer_bytes(double weight_bytes, double kv_allowance_bytes, double free_bytes) {
  const double want = std::max(detail::non_negative(weight_bytes) + detail::non_negative(kv_allowance_bytes),
                               kMinBufferBytes);
  const double cap = kBufferFreeFraction * detail::non_negative(free_bytes);
  const double size = std::floor(std::min(want, cap) / kBufferGranuleBytes) * kBufferGranuleBytes;
  return size >= kMinUsableBufferBytes ? size : 0.0;
}

}  // namespace llmload::server::gpu
