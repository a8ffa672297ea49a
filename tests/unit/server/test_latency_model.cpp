#include "llmload/server/latency_model.hpp"

#include <gtest/gtest.h>

namespace llmload::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(FixedLatencyModel, WithoutJitterTokenKIsDueAtTtftPlusKItl) {
  FixedLatencyModel model(milliseconds(50), milliseconds(10), 0.0);
  const auto due = due_offsets(model, GenerationShape{12, 5}, Rng(0));
  ASSERT_EQ(due.size(), 5u);
  for (std::size_t k = 0; k < due.size(); ++k) {
    EXPECT_EQ(due[k], milliseconds(50) + milliseconds(10) * static_cast<int>(k)) << "token " << k;
  }
}

TEST(FixedLatencyModel, SingleTokenIsDueAtTtft) {
  FixedLatencyModel model(milliseconds(7), milliseconds(100), 0.0);
  const auto due = due_offsets(model, GenerationShape{1, 1}, Rng(0));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0], milliseconds(7));
}

TEST(FixedLatencyModel, JitterStaysWithinBoundsAndIsMonotonic) {
  const double j = 0.2;
  FixedLatencyModel model(milliseconds(50), milliseconds(10), j);
  const auto due = due_offsets(model, GenerationShape{1, 1000}, Rng::for_stream(42, 7));
  ASSERT_EQ(due.size(), 1000u);
  EXPECT_GE(due[0], nanoseconds(milliseconds(40)));
  EXPECT_LE(due[0], nanoseconds(milliseconds(60)));
  bool varied = false;
  for (std::size_t k = 1; k < due.size(); ++k) {
    const auto gap = due[k] - due[k - 1];
    EXPECT_GE(gap, nanoseconds(milliseconds(8))) << k;
    EXPECT_LE(gap, nanoseconds(milliseconds(12))) << k;
    if (gap != milliseconds(10)) varied = true;
  }
  EXPECT_TRUE(varied);
}

TEST(FixedLatencyModel, SameSeedSameScheduleDifferentStreamDifferentSchedule) {
  FixedLatencyModel model(milliseconds(50), milliseconds(10), 0.5);
  const GenerationShape shape{3, 50};
  const auto a = due_offsets(model, shape, Rng::for_stream(1, 0));
  const auto b = due_offsets(model, shape, Rng::for_stream(1, 0));
  const auto c = due_offsets(model, shape, Rng::for_stream(1, 1));
  const auto d = due_offsets(model, shape, Rng::for_stream(2, 0));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(FixedLatencyModel, ZeroDurationsAreAllowed) {
  FixedLatencyModel model(nanoseconds(0), nanoseconds(0), 0.3);
  for (auto d : due_offsets(model, GenerationShape{1, 10}, Rng(5))) EXPECT_EQ(d, nanoseconds(0));
}

TEST(FixedLatencyModel, RejectsBadParameters) {
  EXPECT_THROW(FixedLatencyModel(milliseconds(-1), milliseconds(1), 0.0), std::invalid_argument);
  EXPECT_THROW(FixedLatencyModel(milliseconds(1), milliseconds(1), 1.5), std::invalid_argument);
  EXPECT_THROW(FixedLatencyModel(milliseconds(1), milliseconds(1), -0.1), std::invalid_argument);
}

TEST(MakeLatencyModel, BuildsFixedAndRejectsUnknownNamesListingValidOnes) {
  LatencyConfig config;
  EXPECT_EQ(config.model, "engine");
  EXPECT_EQ(make_latency_model(config), nullptr) << "the engine runtime times tokens, not a per-request model";
  config.model = "fixed";
  EXPECT_EQ(make_latency_model(config)->name(), "fixed");
  config.model = "magic";
  try {
    make_latency_model(config);
    FAIL() << "expected UnknownLatencyModel";
  } catch (const UnknownLatencyModel& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fixed"), std::string::npos);
  }
}

TEST(Rng, IsDeterministicAndUniformInRange) {
  Rng a(123);
  Rng b(123);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  Rng r(9);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double x = r.uniform(0.5, 1.5);
    ASSERT_GE(x, 0.5);
    ASSERT_LT(x, 1.5);
    sum += x;
  }
  EXPECT_NEAR(sum / 10000, 1.0, 0.02);
}

}  // namespace
}  // namespace llmload::server
