// The step runner in a build without CUDA: probe() says why there is no GPU, create() throws.
// Compiled instead of step_runner_cuda.cu when LLMLOAD_HAVE_CUDA is OFF (see ../CMakeLists.txt,
// which sets LLMLOAD_GPU_STUB_REASON to why).

#include <stdexcept>
#include <string>

#include "llmload/server/gpu/step_runner.hpp"

#ifndef LLMLOAD_GPU_STUB_REASON
#define LLMLOAD_GPU_STUB_REASON "built without CUDA"
#endif

namespace llmload::server::gpu {

bool built_with_cuda() { return false; }

Availability probe(int /*device*/) {
  Availability out;
  out.reason = LLMLOAD_GPU_STUB_REASON;
  return out;
}

std::unique_ptr<StepRunner> StepRunner::create(int device, double /*weight_bytes*/, double /*kv_allowance_bytes*/) {
  throw std::runtime_error("no usable GPU for the CUDA step runner (device " + std::to_string(device) +
                           "): " + LLMLOAD_GPU_STUB_REASON);
}

}  // namespace llmload::server::gpu
