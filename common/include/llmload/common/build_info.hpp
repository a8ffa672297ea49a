#pragma once
// Facts about the build and the host that every artifact records in its conditions.

#include <string>

namespace llmload {

/// The git commit the binary was built from ("<sha>", "<sha>+dirty" for uncommitted changes,
/// "unknown" when built outside a git checkout).
const char* git_commit();

/// The host: CPU model (/proc/cpuinfo), kernel (uname: sysname release machine), and the NVIDIA
/// GPUs the driver lists (/proc/driver/nvidia/gpus/*/information "Model:"), "none" without one.
/// Empty strings when unreadable; never throws.
struct HostInfo {
  std::string cpu_model;
  std::string kernel;
  std::string gpus;
};
HostInfo host_info();

}  // namespace llmload
