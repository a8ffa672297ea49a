// The shard rules every shard applies alike: shares, the partition hash, --start-at.
#include "llmload/loadgen/shard.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "llmload/loadgen/config_error.hpp"

namespace llmload {
namespace {

using namespace std::chrono;

TEST(ShardShare, PartsDifferByAtMostOneAndSumToTheTotal) {
  for (std::int64_t n = 1; n <= 7; ++n) {
    for (std::int64_t total = 0; total <= 30; ++total) {
      std::int64_t sum = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto part = shard_share(total, i, n);
        EXPECT_TRUE(part == total / n || part == total / n + 1);
        // The remainder goes to the lowest shard indexes.
        EXPECT_EQ(part, total / n + (i < total % n ? 1 : 0));
        sum += part;
      }
      EXPECT_EQ(sum, total) << total << " over " << n;
    }
  }
  EXPECT_EQ(shard_share(10, 0, 4), 3);
  EXPECT_EQ(shard_share(10, 1, 4), 3);
  EXPECT_EQ(shard_share(10, 2, 4), 2);
  EXPECT_EQ(shard_share(10, 3, 4), 2);
}

TEST(ShardOf, RoundRobinDealsRequestKToShardKModN) {
  for (std::uint64_t k = 0; k < 20; ++k) EXPECT_EQ(shard_of(PartitionRule::kRoundRobin, 123, k, 3), static_cast<std::int64_t>(k % 3));
  EXPECT_EQ(shard_of(PartitionRule::kThinning, 123, 5, 1), 0);
}

TEST(ShardOf, ThinningIsDeterministicAndUniform) {
  const std::uint64_t seed = shard_seed(42);
  EXPECT_EQ(seed, shard_seed(42));
  EXPECT_NE(seed, shard_seed(43));
  constexpr int kN = 4;
  constexpr int kDraws = 40'000;
  std::vector<int> counts(kN, 0);
  int same_as_previous = 0;
  std::int64_t prev = -1;
  for (std::uint64_t k = 0; k < kDraws; ++k) {
    const auto s = shard_of(PartitionRule::kThinning, seed, k, kN);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, kN);
    EXPECT_EQ(s, shard_of(PartitionRule::kThinning, seed, k, kN));  // every shard computes the same owner
    ++counts[static_cast<std::size_t>(s)];
    if (s == prev) ++same_as_previous;
    prev = s;
  }
  // Each shard's count is Binomial(40000, 1/4): sd ~ 87; 5 sd = 433. Consecutive requests go to
  // the same shard with probability 1/4 (independence; round-robin would give 0).
  for (int c : counts) EXPECT_NEAR(c, kDraws / kN, 433);
  EXPECT_NEAR(same_as_previous, kDraws / kN, 433);
}

WallTime utc(int y, unsigned m, unsigned d, int hh, int mm, int ss) {
  return WallTime(sys_days(year(y) / month(m) / day(d)).time_since_epoch()) + hours(hh) + minutes(mm) + seconds(ss);
}

TEST(StartAt, ParsesRfc3339AndEpochSeconds) {
  const WallTime t = utc(2025, 6, 1, 12, 0, 0);
  EXPECT_EQ(parse_start_at("2025-06-01T12:00:00Z"), t);
  EXPECT_EQ(parse_start_at("2025-06-01t12:00:00z"), t);
  EXPECT_EQ(parse_start_at("2025-06-01 12:00:00Z"), t);
  EXPECT_EQ(parse_start_at("2025-06-01T14:00:00+02:00"), t);
  EXPECT_EQ(parse_start_at("2025-06-01T07:30:00-04:30"), t);
  EXPECT_EQ(parse_start_at("2025-06-01T12:00:00.250Z"), t + milliseconds(250));
  EXPECT_EQ(parse_start_at("2025-06-01T12:00:00.123456789Z"), t + nanoseconds(123456789));
  EXPECT_EQ(parse_start_at("1748779200"), t);
  EXPECT_EQ(parse_start_at("1748779200.5"), t + milliseconds(500));
  EXPECT_EQ(format_rfc3339(t + milliseconds(250)), "2025-06-01T12:00:00.250Z");
  EXPECT_DOUBLE_EQ(epoch_seconds(t), 1748779200.0);
  EXPECT_EQ(parse_start_at(format_rfc3339(t + milliseconds(7))), t + milliseconds(7));
}

TEST(StartAt, BadTimesNameTheFlagAndShowTheForms) {
  for (const char* bad : {"", "tomorrow", "2025-06-01T12:00:00", "2025-06-01T12:00Z", "2025-13-01T12:00:00Z",
                          "2025-02-30T12:00:00Z", "2025-06-01T25:00:00Z", "2025-06-01T12:00:00.Z",
                          "2025-06-01T12:00:00+0200", "1.2.3", "-5"}) {
    try {
      parse_start_at(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("--start-at"), std::string::npos) << msg;
      EXPECT_NE(msg.find("2025-06-01T12:00:00Z"), std::string::npos) << msg;  // the example form
    }
  }
  try {
    parse_start_at("soon", "$LLMLOAD_START_AT");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("$LLMLOAD_START_AT"), std::string::npos);
  }
}

}  // namespace
}  // namespace llmload
