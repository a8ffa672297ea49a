#pragma once
// The CUDA step runner: makes one engine step take what a real GPU takes for it.
//
// For each step (a StepCost) it runs two kernels sized to the step, concurrently on two streams:
//   - a memory-bound kernel that reads weight_bytes + kv_bytes once from a device buffer
//     allocated at start (reads wrap around the buffer when the step needs more than it holds);
//   - a compute-bound kernel doing linear_flops + attention_flops of bf16 tensor-core work.
// A step's time is therefore about the max of the two, as in a roofline (docs/gpu.md).
//
// This header is plain C++ (no CUDA types): the server and the tests include it whether or not the
// project was built with nvcc. Without CUDA (or without a usable GPU at run time) probe() says why
// and create() throws; nothing else in this API needs a GPU.

#include <memory>
#include <optional>
#include <string>

#include "llmload/server/engine/step_cost.hpp"

namespace llmload::server::gpu {

/// What the CUDA runtime says about one device.
struct GpuInfo {
  int device = 0;                 ///< CUDA device ordinal
  std::string name;               ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;         ///< e.g. "0000:19:00.0"; the way to find the same GPU in NVML
  double total_memory_bytes = 0;
  double free_memory_bytes = 0;   ///< when probed
  int sm_count = 0;
  int cc_major = 0;               ///< compute capability
  int cc_minor = 0;
};

/// Whether the step runner can run on a device, and if not, why.
struct Availability {
  bool usable = false;
  /// Why not, human readable; empty when usable. E.g. "built without CUDA (nvcc not found at build
  /// time)" or "no CUDA device: cudaGetDeviceCount failed: <cudaGetErrorString>".
  std::string reason;
  std::optional<GpuInfo> info;  ///< set whenever the device exists, usable or not
};

/// Looks at `device`: present, compute capability >= 8.0 (bf16 tensor cores), and a kernel image
/// for it in this build. Never throws. With no GPU or no driver, cudaGetDeviceCount failing is
/// reported as "no GPU" (usable=false), not as a failure. Creates the CUDA context on a usable
/// device (a few hundred ms the first time). Leaves the calling thread's current device as it was.
Availability probe(int device = 0);

/// True when this binary was compiled with nvcc (the real runner), false for the stub.
bool built_with_cuda();

/// What one execute() or measurement did.
struct StepResult {
  double gpu_seconds = 0;   ///< between CUDA events around both kernels (first start to last end)
  double wall_seconds = 0;  ///< the whole call on the host's monotonic clock, launches included
  double bytes_read = 0;    ///< bytes the memory kernel read (the request rounded up to 16 B)
  double flops = 0;         ///< flops the tensor kernel did (the request rounded up to whole mmas)
};

/// Runs steps on one GPU. One per server. Not thread-safe: use it from one thread (the engine
/// thread); it may be created on another thread (each call makes its device current first).
class StepRunner {
 public:
  /// Allocates the read buffer: min(weight_bytes + kv_allowance_bytes, 80% of free memory), at
  /// least 256 MiB when memory allows (so that a small model's reads come from HBM, not from L2).
  /// Warms both kernels up. Throws std::runtime_error with a message starting "no usable GPU"
  /// when probe(device) is not usable, or naming the CUDA call that failed.
  static std::unique_ptr<StepRunner> create(int device, double weight_bytes, double kv_allowance_bytes);

  virtual ~StepRunner() = default;

  /// Runs the step's two kernels concurrently and blocks until both are done. Zero (or negative,
  /// or non-finite) bytes or flops launch nothing for that part. Throws std::runtime_error on a
  /// CUDA error (the runner is then unusable: CUDA errors in kernels are sticky).
  virtual StepResult execute(const StepCost& cost) = 0;

  /// Size of the read buffer in bytes.
  virtual double buffer_bytes() const = 0;
  virtual GpuInfo info() const = 0;

  // Measurements for the benchmark and docs/gpu.md. Each is the best of `repeats` (>= 1) timed
  // runs after one untimed warm-up run.

  /// cudaMemcpyAsync device-to-device of min(bytes, buffer/2); bytes/s counting read + write.
  virtual double measure_copy_bandwidth(double bytes, int repeats) = 0;
  /// The memory-bound kernel alone reading `bytes` (wrapping around the buffer); bytes/s.
  virtual double measure_read_bandwidth(double bytes, int repeats) = 0;
  /// The tensor-core kernel alone doing `flops`; flop/s.
  virtual double measure_tensor_flops(double flops, int repeats) = 0;
};

}  // namespace llmload::server::gpu
