// The CUDA step runner (see step_runner.hpp): two kernels per step, run concurrently on two
// streams and timed with CUDA events.
//
//   read_kernel  memory-bound: 16-byte streaming loads, grid-stride, wrapping around the buffer;
//                the loaded words are XOR-reduced into a 4-byte sink so the loads cannot be dropped.
//   mma_kernel   compute-bound: each warp keeps its bf16 A/B fragments and kMmaChainsPerWarp fp32
//                accumulators in registers and loops mma_sync (2*16*16*16 flops each); the
//                accumulators are summed into a float sink at the end for the same reason.
//
// Launch shapes come from launch_plan.hpp (pure, unit-tested without a GPU).

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "llmload/server/gpu/launch_plan.hpp"
#include "llmload/server/gpu/step_runner.hpp"

#ifndef LLMLOAD_CUDA_ARCHITECTURES_TEXT
#define LLMLOAD_CUDA_ARCHITECTURES_TEXT "unknown"
#endif

namespace llmload::server::gpu {
namespace {

// ------------------------------------------------------------------------------------------------
// Kernels

__device__ __forceinline__ unsigned long long wrap_add(unsigned long long idx, unsigned long long step,
                                                       unsigned long long n) {
  // idx < n and step <= n (the plan guarantees stride <= buffer), so one subtraction wraps.
  idx += step;
  return idx >= n ? idx - n : idx;
}

__device__ __forceinline__ unsigned int fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

__global__ void __launch_bounds__(kReadThreadsPerBlock, kReadMinBlocksPerSm)
read_kernel(const uint4* __restrict__ buf, unsigned long long n, unsigned long long count, unsigned int* sink) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long idx = i;  // i mod n, kept incrementally (a 64-bit modulo per load is slow)
  unsigned int acc = 0;
  // kReadUnroll independent loads per iteration: their addresses do not depend on loaded data, so
  // all are in flight at once. __ldcs: streaming (evict-first), like a weight pass.
  static_assert(kReadUnroll == 4, "the unrolled loop below is written for 4 loads");
  for (; i + 3 * stride < count; i += 4 * stride) {
    const unsigned long long j1 = wrap_add(idx, stride, n);
    const unsigned long long j2 = wrap_add(j1, stride, n);
    const unsigned long long j3 = wrap_add(j2, stride, n);
    const uint4 a = __ldcs(buf + idx);
    const uint4 b = __ldcs(buf + j1);
    const uint4 c = __ldcs(buf + j2);
    const uint4 d = __ldcs(buf + j3);
    acc ^= fold(a) ^ fold(b) ^ fold(c) ^ fold(d);
    idx = wrap_add(j3, stride, n);
  }
  for (; i < count; i += stride) {
    acc ^= fold(__ldcs(buf + idx));
    idx = wrap_add(idx, stride, n);
  }
  // Warp, then block reduction: one atomic per block.
  for (int offset = 16; offset > 0; offset /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  __shared__ unsigned int warp_acc[kReadThreadsPerBlock / 32];
  if ((threadIdx.x & 31u) == 0) warp_acc[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned int block_acc = 0;
    for (int w = 0; w < kReadThreadsPerBlock / 32; ++w) block_acc ^= warp_acc[w];
    atomicXor(sink, block_acc);
  }
}

__global__ void init_tiles(__nv_bfloat16* tiles, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // Small non-zero values: zeros could let the hardware save power, and large ones overflow nothing
  // but make the sink meaningless.
  if (i < n) tiles[i] = __float2bfloat16(static_cast<float>((i * 7) % 13 - 6) * (1.0f / 1024.0f));
}

__global__ void __launch_bounds__(kMmaWarpsPerBlock * 32, kMmaMinBlocksPerSm)
mma_kernel(const __nv_bfloat16* __restrict__ tiles, long long iterations, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, kMmaM, kMmaN, kMmaK, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, kMmaM, kMmaN, kMmaK, __nv_bfloat16, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, kMmaM, kMmaN, kMmaK, float> c[kMmaChainsPerWarp];
  // Operands come from memory, so the compiler cannot know them; they stay in registers.
  wmma::load_matrix_sync(a, tiles, kMmaK);
  wmma::load_matrix_sync(b, tiles + kMmaM * kMmaK, kMmaK);
#pragma unroll
  for (int j = 0; j < kMmaChainsPerWarp; ++j) wmma::fill_fragment(c[j], 0.0f);
  for (long long it = 0; it < iterations; ++it) {
#pragma unroll
    for (int j = 0; j < kMmaChainsPerWarp; ++j) wmma::mma_sync(c[j], a, b, c[j]);
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < kMmaChainsPerWarp; ++j) {
#pragma unroll
    for (int t = 0; t < c[j].num_elements; ++t) s += c[j].x[t];
  }
  if ((threadIdx.x & 31u) == 0) atomicAdd(sink, s);
#else
  // Never launched: probe() refuses devices below compute capability 8.0.
  (void)tiles;
  (void)iterations;
  (void)sink;
#endif
}

// ------------------------------------------------------------------------------------------------
// Host helpers

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA step runner: ") + what + " failed: " + error_text(e));
}

/// Makes `device` current on this thread for the object's lifetime, then restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    changed_ = previous_ != device;
    if (changed_ && cudaSetDevice(device) != cudaSuccess) changed_ = false;
  }
  ~DeviceScope() {
    if (changed_ && previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ------------------------------------------------------------------------------------------------
// The runner

/// Every CUDA handle the runner owns; freed in the destructor, so a constructor that throws
/// half-way leaks nothing.
struct DeviceResources {
  int device = 0;
  void* buffer = nullptr;
  __nv_bfloat16* tiles = nullptr;  // A tile then B tile, 16x16 each
  unsigned int* read_sink = nullptr;
  float* mma_sink = nullptr;
  cudaStream_t mem_stream = nullptr;
  cudaStream_t cmp_stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  cudaEvent_t cmp_done = nullptr;

  DeviceResources() = default;
  DeviceResources(const DeviceResources&) = delete;
  DeviceResources& operator=(const DeviceResources&) = delete;
  ~DeviceResources() {
    // Errors are ignored: nothing useful can be done with them in a destructor.
    DeviceScope scope(device);
    if (mem_stream) (void)cudaStreamSynchronize(mem_stream);
    if (cmp_stream) (void)cudaStreamSynchronize(cmp_stream);
    if (cmp_done) (void)cudaEventDestroy(cmp_done);
    if (stop) (void)cudaEventDestroy(stop);
    if (start) (void)cudaEventDestroy(start);
    if (cmp_stream) (void)cudaStreamDestroy(cmp_stream);
    if (mem_stream) (void)cudaStreamDestroy(mem_stream);
    if (mma_sink) (void)cudaFree(mma_sink);
    if (read_sink) (void)cudaFree(read_sink);
    if (tiles) (void)cudaFree(tiles);
    if (buffer) (void)cudaFree(buffer);
  }
};

class CudaStepRunner final : public StepRunner {
 public:
  CudaStepRunner(const GpuInfo& info, double weight_bytes, double kv_allowance_bytes) : info_(info) {
    r_.device = info.device;
    DeviceScope scope(info.device);
    std::size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    info_.free_memory_bytes = static_cast<double>(free_bytes);
    allocate_buffer(weight_bytes, kv_allowance_bytes, static_cast<double>(free_bytes));

    check(cudaMalloc(reinterpret_cast<void**>(&r_.tiles), 2 * kMmaM * kMmaK * sizeof(__nv_bfloat16)), "cudaMalloc(tiles)");
    check(cudaMalloc(reinterpret_cast<void**>(&r_.read_sink), sizeof(unsigned int)), "cudaMalloc(sink)");
    check(cudaMalloc(reinterpret_cast<void**>(&r_.mma_sink), sizeof(float)), "cudaMalloc(sink)");
    check(cudaStreamCreateWithFlags(&r_.mem_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaStreamCreateWithFlags(&r_.cmp_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreate(&r_.start), "cudaEventCreate");
    check(cudaEventCreate(&r_.stop), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&r_.cmp_done, cudaEventDisableTiming), "cudaEventCreateWithFlags");

    // A byte pattern rather than zeros: DRAM and the memory system should see ordinary data.
    check(cudaMemsetAsync(r_.buffer, 0x5a, buffer_bytes_, r_.mem_stream), "cudaMemsetAsync(buffer)");
    check(cudaMemsetAsync(r_.read_sink, 0, sizeof(unsigned int), r_.mem_stream), "cudaMemsetAsync(sink)");
    check(cudaMemsetAsync(r_.mma_sink, 0, sizeof(float), r_.mem_stream), "cudaMemsetAsync(sink)");
    const int tile_elements = 2 * kMmaM * kMmaK;
    init_tiles<<<1, tile_elements, 0, r_.mem_stream>>>(r_.tiles, tile_elements);
    check(cudaGetLastError(), "init_tiles launch");
    check(cudaStreamSynchronize(r_.mem_stream), "cudaStreamSynchronize(init)");

    // Warm-up: the first launches load the module and are slower than the rest.
    StepCost warm;
    warm.weight_bytes = 8.0 * 1024 * 1024;
    warm.linear_flops = 1e9;
    (void)execute(warm);
  }

  StepResult execute(const StepCost& cost) override {
    const auto wall0 = std::chrono::steady_clock::now();
    DeviceScope scope(info_.device);
    const ReadPlan rp = plan_read(cost.weight_bytes + cost.kv_bytes, buffer_bytes_, info_.sm_count);
    const MmaPlan mp = plan_mma(cost.linear_flops + cost.attention_flops, info_.sm_count);

    // start on the memory stream; the compute stream waits for it, so both kernels are queued
    // behind the same point; the memory stream then waits for the compute stream's end, so `stop`
    // marks the later of the two.
    check(cudaEventRecord(r_.start, r_.mem_stream), "cudaEventRecord(start)");
    check(cudaStreamWaitEvent(r_.cmp_stream, r_.start, 0), "cudaStreamWaitEvent");
    launch_read(rp);
    launch_mma(mp);
    check(cudaEventRecord(r_.cmp_done, r_.cmp_stream), "cudaEventRecord(cmp_done)");
    check(cudaStreamWaitEvent(r_.mem_stream, r_.cmp_done, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(r_.stop, r_.mem_stream), "cudaEventRecord(stop)");
    check(cudaEventSynchronize(r_.stop), "step (kernels or cudaEventSynchronize)");

    StepResult out;
    out.gpu_seconds = elapsed_seconds();
    out.bytes_read = rp.bytes();
    out.flops = mp.flops();
    out.wall_seconds = seconds_since(wall0);
    return out;
  }

  double buffer_bytes() const override { return static_cast<double>(buffer_bytes_); }
  GpuInfo info() const override { return info_; }

  double measure_copy_bandwidth(double bytes, int repeats) override {
    DeviceScope scope(info_.device);
    const std::size_t half = (buffer_bytes_ / 2) / kVectorBytes * kVectorBytes;
    const std::size_t n = std::min<std::size_t>(half, static_cast<std::size_t>(detail::non_negative(bytes)));
    if (n == 0) return 0.0;
    char* base = static_cast<char*>(r_.buffer);
    const double best = best_of(repeats, [&] {
      check(cudaMemcpyAsync(base + half, base, n, cudaMemcpyDeviceToDevice, r_.mem_stream), "cudaMemcpyAsync");
    });
    return 2.0 * static_cast<double>(n) / best;
  }

  double measure_read_bandwidth(double bytes, int repeats) override {
    DeviceScope scope(info_.device);
    const ReadPlan rp = plan_read(bytes, buffer_bytes_, info_.sm_count);
    if (rp.vectors == 0) return 0.0;
    return rp.bytes() / best_of(repeats, [&] { launch_read(rp, r_.mem_stream); });
  }

  double measure_tensor_flops(double flops, int repeats) override {
    DeviceScope scope(info_.device);
    const MmaPlan mp = plan_mma(flops, info_.sm_count);
    if (mp.blocks == 0) return 0.0;
    return mp.flops() / best_of(repeats, [&] { launch_mma(mp, r_.mem_stream); });
  }

 private:
  void allocate_buffer(double weight_bytes, double kv_allowance_bytes, double free_bytes) {
    double size = plan_buffer_bytes(weight_bytes, kv_allowance_bytes, free_bytes);
    if (size <= 0)
      throw std::runtime_error("CUDA step runner: too little free GPU memory for the read buffer (" +
                               std::to_string(free_bytes / (1024.0 * 1024.0)) + " MiB free)");
    // Free memory can shrink between cudaMemGetInfo and cudaMalloc (other processes): retry smaller.
    for (;;) {
      const cudaError_t e = cudaMalloc(&r_.buffer, static_cast<std::size_t>(size));
      if (e == cudaSuccess) break;
      (void)cudaGetLastError();  // allocation failures are not sticky; clear it
      r_.buffer = nullptr;
      const double smaller = std::floor(size * 0.9 / kBufferGranuleBytes) * kBufferGranuleBytes;
      if (e != cudaErrorMemoryAllocation || smaller < kMinUsableBufferBytes)
        throw std::runtime_error("CUDA step runner: cudaMalloc of the " + std::to_string(size / (1024.0 * 1024.0)) +
                                 " MiB read buffer failed: " + error_text(e));
      size = smaller;
    }
    buffer_bytes_ = static_cast<std::size_t>(size);
  }

  void launch_read(const ReadPlan& rp) { launch_read(rp, r_.mem_stream); }
  void launch_read(const ReadPlan& rp, cudaStream_t stream) {
    if (rp.vectors == 0) return;
    read_kernel<<<rp.blocks, rp.threads_per_block, 0, stream>>>(static_cast<const uint4*>(r_.buffer),
                                                               rp.buffer_vectors, rp.vectors, r_.read_sink);
    check(cudaGetLastError(), "read_kernel launch");
  }

  void launch_mma(const MmaPlan& mp) { launch_mma(mp, r_.cmp_stream); }
  void launch_mma(const MmaPlan& mp, cudaStream_t stream) {
    if (mp.blocks == 0) return;
    mma_kernel<<<mp.blocks, mp.warps_per_block * 32, 0, stream>>>(r_.tiles, static_cast<long long>(mp.iterations),
                                                                  r_.mma_sink);
    check(cudaGetLastError(), "mma_kernel launch");
  }

  double elapsed_seconds() {
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, r_.start, r_.stop), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

  /// Runs `enqueue` (work on mem_stream) once untimed, then `repeats` times timed; best seconds.
  template <class Enqueue>
  double best_of(int repeats, Enqueue enqueue) {
    enqueue();
    check(cudaStreamSynchronize(r_.mem_stream), "warm-up run");
    double best = 0.0;
    for (int k = 0; k < std::max(repeats, 1); ++k) {
      check(cudaEventRecord(r_.start, r_.mem_stream), "cudaEventRecord(start)");
      enqueue();
      check(cudaEventRecord(r_.stop, r_.mem_stream), "cudaEventRecord(stop)");
      check(cudaEventSynchronize(r_.stop), "timed run (kernel or cudaEventSynchronize)");
      const double s = elapsed_seconds();
      if (k == 0 || s < best) best = s;
    }
    // A zero-length timing (event resolution is about 0.5 us) would give an infinite rate.
    return std::max(best, 1e-7);
  }

  GpuInfo info_;
  DeviceResources r_;
  std::size_t buffer_bytes_ = 0;
};

}  // namespace

bool built_with_cuda() { return true; }

Availability probe(int device) {
  Availability out;
  try {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      out.reason = std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
      if (e == cudaErrorInsufficientDriver) {
        // What the runtime says when it finds no driver at all, too.
        int runtime = 0;
        (void)cudaRuntimeGetVersion(&runtime);
        out.reason += " (no NVIDIA driver loaded, or one older than this CUDA " + std::to_string(runtime / 1000) + "." +
                      std::to_string(runtime % 1000 / 10) + " runtime)";
      }
      return out;
    }
    if (count == 0) {
      out.reason = "no CUDA device: cudaGetDeviceCount found none";
      return out;
    }
    if (device < 0 || device >= count) {
      out.reason = "no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                   " device(s): 0.." + std::to_string(count - 1) + ")";
      return out;
    }
    cudaDeviceProp prop{};
    if (const cudaError_t pe = cudaGetDeviceProperties(&prop, device); pe != cudaSuccess) {
      (void)cudaGetLastError();
      out.reason = "cudaGetDeviceProperties failed: " + error_text(pe);
      return out;
    }
    GpuInfo info;
    info.device = device;
    info.name = prop.name;
    info.total_memory_bytes = static_cast<double>(prop.totalGlobalMem);
    info.sm_count = prop.multiProcessorCount;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess) info.pci_bus_id = bus_id;
    else (void)cudaGetLastError();
    out.info = info;

    const std::string cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    if (prop.major < 8) {
      out.reason = "GPU " + info.name + " has compute capability " + cc +
                   "; the step runner needs 8.0 or newer (bf16 tensor cores)";
      return out;
    }
    DeviceScope scope(device);
    std::size_t free_bytes = 0, total_bytes = 0;
    if (const cudaError_t me = cudaMemGetInfo(&free_bytes, &total_bytes); me != cudaSuccess) {
      (void)cudaGetLastError();
      out.reason = "cannot use GPU " + info.name + ": cudaMemGetInfo failed: " + error_text(me);
      return out;
    }
    out.info->free_memory_bytes = static_cast<double>(free_bytes);
    // Is there code for this GPU in the binary (SASS, or PTX the driver can compile)?
    cudaFuncAttributes attr{};
    if (const cudaError_t fe = cudaFuncGetAttributes(&attr, mma_kernel); fe != cudaSuccess) {
      (void)cudaGetLastError();
      out.reason = "no kernel image for GPU " + info.name + " (compute capability " + cc + ") in this build (built for " +
                   LLMLOAD_CUDA_ARCHITECTURES_TEXT + "; set LLMLOAD_CUDA_ARCHITECTURES): " + error_text(fe);
      return out;
    }
    out.usable = true;
  } catch (const std::exception& ex) {
    out.usable = false;
    out.reason = std::string("probe failed: ") + ex.what();
  } catch (...) {
    out.usable = false;
    out.reason = "probe failed";
  }
  return out;
}

std::unique_ptr<StepRunner> StepRunner::create(int device, double weight_bytes, double kv_allowance_bytes) {
  const Availability a = probe(device);
  if (!a.usable || !a.info)
    throw std::runtime_error("no usable GPU for the CUDA step runner (device " + std::to_string(device) + "): " + a.reason);
  return std::make_unique<CudaStepRunner>(*a.info, weight_bytes, kv_allowance_bytes);
}

}  // namespace llmload::server::gpu
