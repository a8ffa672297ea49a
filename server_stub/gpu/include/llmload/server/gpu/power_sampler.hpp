#pragma once
// GPU power and energy through NVML, for the server's metrics and the GPU benchmark.
//
// NVML (libnvidia-ml.so.1, shipped with the NVIDIA driver) is loaded at run time with dlopen, so
// the build needs neither the driver nor an NVML header, and a binary built with CUDA still starts
// on a machine without the driver: open() then returns null and says why.

#include <memory>
#include <optional>
#include <string>

namespace llmload::server::gpu {

class PowerSampler {
 public:
  /// Opens NVML and finds the GPU. With `pci_bus_id` (GpuInfo::pci_bus_id) the GPU is found by its
  /// PCI bus id, which is right whatever CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER say; without it,
  /// by NVML index `device` (NVML indices follow PCI order, CUDA ordinals by default do not).
  /// Returns null and sets `why_not` (naming libnvidia-ml and the failing call) when NVML or the
  /// device is not available. Never throws for a missing driver.
  static std::unique_ptr<PowerSampler> open(int device, std::string& why_not,
                                            const std::string& pci_bus_id = {});

  virtual ~PowerSampler() = default;

  // Safe to call from any thread (NVML is thread-safe; the object does not change after open).

  /// Current board power draw in watts (NVML averages it over about a second on recent GPUs);
  /// nullopt when the device does not report it.
  virtual std::optional<double> power_watts() = 0;
  /// Energy consumed since the driver was loaded, in joules (Volta and newer); nullopt when not
  /// reported. Differences between two readings give the energy of what ran between them.
  virtual std::optional<double> energy_joules() = 0;
};

}  // namespace llmload::server::gpu
