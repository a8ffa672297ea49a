// PowerSampler: with no NVIDIA driver it must say so (null + why_not), never throw.

#include "llmload/server/gpu/power_sampler.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace llmload::server::gpu {
namespace {

bool nvml_loadable() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  dlclose(lib);
  return true;
}

TEST(PowerSampler, WithoutTheDriverReturnsNullAndNamesLibnvidiaMl) {
  if (nvml_loadable()) GTEST_SKIP() << "libnvidia-ml.so.1 is present on this machine";
  std::string why_not;
  std::unique_ptr<PowerSampler> s;
  EXPECT_NO_THROW(s = PowerSampler::open(0, why_not));
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(why_not.find("libnvidia-ml"), std::string::npos) << why_not;
}

TEST(PowerSampler, EitherOpensOrSaysWhyNot) {
  std::string why_not;
  const auto s = PowerSampler::open(0, why_not);
  if (s == nullptr) {
    EXPECT_NE(why_not.find("libnvidia-ml"), std::string::npos) << why_not;
    return;
  }
  EXPECT_TRUE(why_not.empty()) << why_not;
  if (const auto w = s->power_watts()) {
    EXPECT_GT(*w, 0.0);
  }
  const auto e0 = s->energy_joules();
  const auto e1 = s->energy_joules();
  if (e0 && e1) {
    EXPECT_GE(*e1, *e0);
  }
}

TEST(PowerSampler, UnknownDeviceIsRefusedNotThrown) {
  std::string why_not;
  std::unique_ptr<PowerSampler> s;
  EXPECT_NO_THROW(s = PowerSampler::open(100000, why_not));
  EXPECT_EQ(s, nullptr);
  EXPECT_FALSE(why_not.empty());
}

}  // namespace
}  // namespace llmload::server::gpu
