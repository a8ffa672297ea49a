// PowerSampler on NVML, loaded at run time (dlopen) so that neither the build nor the start of the
// program needs the NVIDIA driver.
//
// The few NVML entry points used are declared here from NVML's documented C API (all return
// nvmlReturn_t, an enum where 0 is NVML_SUCCESS; nvmlDevice_t is an opaque pointer).

#include <dlfcn.h>

#include <optional>
#include <string>

#include "llmload/server/gpu/power_sampler.hpp"

namespace llmload::server::gpu {
namespace {

constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

using NvmlReturn = int;  // nvmlReturn_t
using NvmlDevice = struct NvmlDeviceOpaque*;  // nvmlDevice_t
constexpr NvmlReturn kNvmlSuccess = 0;

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using ErrorStringFn = const char* (*)(NvmlReturn);
using HandleByIndexFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
using HandleByPciBusIdFn = NvmlReturn (*)(const char*, NvmlDevice*);
using PowerUsageFn = NvmlReturn (*)(NvmlDevice, unsigned int*);                 // milliwatts
using TotalEnergyFn = NvmlReturn (*)(NvmlDevice, unsigned long long*);          // millijoules

/// dlsym into a typed function pointer. The cast from void* to a function pointer is what POSIX
/// dlsym requires (conditionally supported in ISO C++, always on POSIX systems).
template <class Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

class NvmlPowerSampler final : public PowerSampler {
 public:
  NvmlPowerSampler(void* lib, ShutdownFn shutdown, PowerUsageFn power, TotalEnergyFn energy, NvmlDevice dev)
      : lib_(lib), shutdown_(shutdown), power_(power), energy_(energy), dev_(dev) {}
  ~NvmlPowerSampler() override {
    shutdown_();
    dlclose(lib_);
  }
  NvmlPowerSampler(const NvmlPowerSampler&) = delete;
  NvmlPowerSampler& operator=(const NvmlPowerSampler&) = delete;

  std::optional<double> power_watts() override {
    unsigned int mw = 0;
    if (power_(dev_, &mw) != kNvmlSuccess) return std::nullopt;
    return static_cast<double>(mw) * 1e-3;
  }
  std::optional<double> energy_joules() override {
    if (energy_ == nullptr) return std::nullopt;
    unsigned long long mj = 0;
    if (energy_(dev_, &mj) != kNvmlSuccess) return std::nullopt;
    return static_cast<double>(mj) * 1e-3;
  }

 private:
  void* lib_;
  ShutdownFn shutdown_;
  PowerUsageFn power_;
  TotalEnergyFn energy_;  // null on drivers without it (pre-Volta era); then energy is not reported
  NvmlDevice dev_;
};

std::string nvml_error(ErrorStringFn error_string, NvmlReturn r) {
  const char* s = error_string != nullptr ? error_string(r) : nullptr;
  return s != nullptr ? std::string(s) + " (" + std::to_string(r) + ")" : "error " + std::to_string(r);
}

}  // namespace

std::unique_ptr<PowerSampler> PowerSampler::open(int device, std::string& why_not, const std::string& pci_bus_id) {
  why_not.clear();
  const std::string who = std::string("NVML (") + kNvmlLibrary + ")";
  void* lib = dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    why_not = who + " not loadable (is the NVIDIA driver installed?): " + (err != nullptr ? err : "dlopen failed");
    return nullptr;
  }
  const auto init = symbol<InitFn>(lib, "nvmlInit_v2");
  const auto shutdown = symbol<ShutdownFn>(lib, "nvmlShutdown");
  const auto error_string = symbol<ErrorStringFn>(lib, "nvmlErrorString");
  const auto by_index = symbol<HandleByIndexFn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  const auto by_bus_id = symbol<HandleByPciBusIdFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  const auto power = symbol<PowerUsageFn>(lib, "nvmlDeviceGetPowerUsage");
  const auto energy = symbol<TotalEnergyFn>(lib, "nvmlDeviceGetTotalEnergyConsumption");
  if (init == nullptr || shutdown == nullptr || by_index == nullptr || power == nullptr) {
    why_not = who + " lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetPowerUsage";
    dlclose(lib);
    return nullptr;
  }
  if (const NvmlReturn r = init(); r != kNvmlSuccess) {
    why_not = who + ": nvmlInit_v2 failed: " + nvml_error(error_string, r);
    dlclose(lib);
    return nullptr;
  }
  NvmlDevice dev = nullptr;
  NvmlReturn r = kNvmlSuccess;
  std::string how;
  if (!pci_bus_id.empty() && by_bus_id != nullptr) {
    r = by_bus_id(pci_bus_id.c_str(), &dev);
    how = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + ")";
  } else if (device >= 0) {
    r = by_index(static_cast<unsigned int>(device), &dev);
    how = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(device) + ")";
  } else {
    why_not = who + ": no device " + std::to_string(device);
    shutdown();
    dlclose(lib);
    return nullptr;
  }
  if (r != kNvmlSuccess) {
    why_not = who + ": " + how + " failed: " + nvml_error(error_string, r);
    shutdown();
    dlclose(lib);
    return nullptr;
  }
  return std::make_unique<NvmlPowerSampler>(lib, shutdown, power, energy, dev);
}

}  // namespace llmload::server::gpu
