// result.json's client_cpu: the share of a core the client used while the load ran, and its CPU per
// request; null where there is nothing to divide by.

#include <gtest/gtest.h>

#include "llmload/analysis/client_cpu.hpp"

namespace llmload::testing::client_cpu {
namespace {

TEST(ClientCpu, ShareOfACoreAndCpuPerRequest) {
  const auto c = analysis::client_cpu_json(1.0, 0.5, 3.0, 1000, "this process");
  EXPECT_DOUBLE_EQ(c["core_share"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(c["per_request_us"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ(c["user_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(c["system_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(c["wall_s"].get<double>(), 3.0);
  EXPECT_EQ(c["covers"], "this process");
}

TEST(ClientCpu, NullWithoutWallTimeOrRequests) {
  const auto c = analysis::client_cpu_json(0.2, 0.1, 0.0, 0, "x");
  EXPECT_TRUE(c["core_share"].is_null());
  EXPECT_TRUE(c["per_request_us"].is_null());
}

}  // namespace
}  // namespace llmload::testing::client_cpu
