// HdrHistogram layout and semantics. Expected numbers marked "Java" were produced by
// HdrHistogram Java 2.1.11 (Debian libhdrhistogram-java) for the same inputs.

#include "llmload/analysis/hdr_histogram.hpp"
#include "hdr_test_vectors.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using llmload::analysis::HdrHistogram;

// Java's test set: (i*i*37) % 5e6 for i < 1000, 123456789 x3, 3600000000.
HdrHistogram java_sample() {
  HdrHistogram h;
  for (std::int64_t i = 0; i < 1000; ++i) EXPECT_TRUE(h.record(i * i * 37 % 5'000'000));
  EXPECT_TRUE(h.record(123'456'789, 3));
  EXPECT_TRUE(h.record(3'600'000'000));
  return h;
}

using llmload::analysis::testing::mixed;

std::string what_of(auto&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

TEST(hdr_histogram, LayoutMatchesReference) {
  const HdrHistogram h(1, 3'600'000'000'000, 3);
  EXPECT_EQ(h.sub_bucket_count(), 2048);
  EXPECT_EQ(h.bucket_count(), 32);
  EXPECT_EQ(h.counts_length(), 33792u);
  // Java countsArrayLength for these layouts.
  EXPECT_EQ(HdrHistogram(1, 3'600'000'000, 3).counts_length(), 23552u);
  EXPECT_EQ(HdrHistogram(1000, 3'600'000'000, 2).counts_length(), 2176u);
  EXPECT_EQ(HdrHistogram(1, 2, 1).counts_length(), 32u);
  EXPECT_EQ(HdrHistogram(1, std::numeric_limits<std::int64_t>::max(), 3).counts_length(), 55296u);
  EXPECT_EQ(HdrHistogram::counts_length_for(7, std::numeric_limits<std::int64_t>::max(), 5), 5898240u);
}

TEST(hdr_histogram, EquivalentRangesMatchJava) {
  const HdrHistogram a(1, 3'600'000'000, 3);
  EXPECT_EQ(a.lowest_equivalent(12345), 12344);
  EXPECT_EQ(a.highest_equivalent(12345), 12351);
  EXPECT_EQ(a.median_equivalent(12345), 12348);
  const HdrHistogram b(1000, 3'600'000'000, 2);
  EXPECT_EQ(b.lowest_equivalent(12345), 12288);
  EXPECT_EQ(b.highest_equivalent(12345), 12799);
  EXPECT_EQ(b.median_equivalent(12345), 12544);
  const HdrHistogram c(7, std::numeric_limits<std::int64_t>::max(), 5);
  EXPECT_EQ(c.lowest_equivalent(12345), 12344);
  EXPECT_EQ(c.highest_equivalent(12345), 12347);
  // Below 2048 every value is its own bucket at 3 significant figures.
  for (std::int64_t v = 0; v < 2048; ++v) {
    ASSERT_EQ(a.lowest_equivalent(v), v);
    ASSERT_EQ(a.highest_equivalent(v), v);
  }
}

TEST(hdr_histogram, ConstructorRejectsBadParametersNamingThem) {
  EXPECT_NE(what_of([] { HdrHistogram(0, 1000, 3); }).find("lowest_discernible"), std::string::npos);
  EXPECT_NE(what_of([] { HdrHistogram(-5, 1000, 3); }).find("lowest_discernible"), std::string::npos);
  EXPECT_NE(what_of([] { HdrHistogram(1, 1000, 0); }).find("significant_figures"), std::string::npos);
  EXPECT_NE(what_of([] { HdrHistogram(1, 1000, 6); }).find("significant_figures"), std::string::npos);
  EXPECT_NE(what_of([] { HdrHistogram(10, 19, 3); }).find("highest_trackable"), std::string::npos);
  EXPECT_NE(what_of([] {
              HdrHistogram(std::int64_t{1} << 62, std::numeric_limits<std::int64_t>::max(), 3);
            }).find("highest_trackable"),
            std::string::npos);
  EXPECT_NE(what_of([] {
              HdrHistogram(std::int64_t{1} << 55, std::numeric_limits<std::int64_t>::max(), 3);
            }).find("lowest_discernible"),
            std::string::npos);
  EXPECT_NO_THROW(HdrHistogram(10, 20, 1));
  EXPECT_NO_THROW(HdrHistogram(1, std::numeric_limits<std::int64_t>::max(), 5));
}

TEST(hdr_histogram, IndexValueRoundTripForEveryBucket) {
  for (const auto& h :
       {HdrHistogram(1, 3'600'000'000, 3), HdrHistogram(1000, 3'600'000'000, 2), HdrHistogram(3, 1'000'000, 1),
        HdrHistogram(1, std::numeric_limits<std::int64_t>::max(), 3), HdrHistogram(1, 100'000'000, 5)}) {
    SCOPED_TRACE(std::to_string(h.lowest_discernible()) + "/" + std::to_string(h.significant_figures()));
    for (std::size_t i = 0; i < h.counts_length(); ++i) {
      const std::int64_t lo = h.value_from_index(i);
      const std::int64_t hi = h.highest_equivalent_at_index(i);
      ASSERT_EQ(h.index_of(lo), i);
      ASSERT_EQ(h.index_of(hi), i);
      ASSERT_EQ(h.lowest_equivalent(hi), lo);
      ASSERT_EQ(h.highest_equivalent(lo), hi);
      if (i + 1 < h.counts_length()) {
        ASSERT_EQ(hi + 1, h.value_from_index(i + 1));
      }
    }
    // The last bucket reaches highest_trackable; the counts array ends there.
    EXPECT_GE(h.highest_equivalent_at_index(h.counts_length() - 1), h.highest_trackable());
    EXPECT_LT(h.index_of(h.highest_trackable()), h.counts_length());
  }
}

TEST(hdr_histogram, RelativeErrorWithinSignificantFigures) {
  std::mt19937_64 rng(42);
  for (int sig = 1; sig <= 5; ++sig) {
    const HdrHistogram h(1, std::numeric_limits<std::int64_t>::max() / 4, sig);
    const double bound = std::pow(10.0, -sig);
    for (int n = 0; n < 20000; ++n) {
      const auto v = static_cast<std::int64_t>(rng() >> (3 + rng() % 60));
      ASSERT_LE(h.lowest_equivalent(v), v);
      ASSERT_GE(h.highest_equivalent(v), v);
      const double width = static_cast<double>(h.highest_equivalent(v) - h.lowest_equivalent(v));
      ASSERT_LE(width, std::max(1.0, static_cast<double>(v)) * bound) << "v=" << v << " sig=" << sig;
    }
  }
}

TEST(hdr_histogram, RecordRejectsOutOfRange) {
  HdrHistogram h(1, 1'000'000, 3);
  EXPECT_FALSE(h.record(-1));
  EXPECT_FALSE(h.record(1'000'001));
  EXPECT_FALSE(h.record(std::numeric_limits<std::int64_t>::min()));
  EXPECT_FALSE(h.record(5, -1));
  EXPECT_EQ(h.total_count(), 0);
  EXPECT_TRUE(h.record(7, 0));  // nothing to record
  EXPECT_EQ(h.total_count(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_TRUE(h.record(1'000'000));
  EXPECT_TRUE(h.record(0));
  EXPECT_EQ(h.total_count(), 2);
  EXPECT_EQ(h.count_at_value(1'000'000), 1);
  EXPECT_EQ(h.count_at_value(0), 1);
  EXPECT_EQ(h.count_at_value(-3), 0);
  EXPECT_EQ(h.count_at_value(std::numeric_limits<std::int64_t>::max()), 0);
}

TEST(hdr_histogram, EmptyHistogramIsAllZero) {
  const HdrHistogram h;
  EXPECT_EQ(h.total_count(), 0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.stddev(), 0.0);
  EXPECT_EQ(h.value_at_percentile(50), 0);
  EXPECT_EQ(h.value_at_rank(1), 0);
  int calls = 0;
  h.for_each_recorded([&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(hdr_histogram, StatisticsMatchJava) {
  const HdrHistogram h = java_sample();
  EXPECT_EQ(h.total_count(), 1004);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 3600809983);
  EXPECT_DOUBLE_EQ(h.mean(), 6045740.658366534);
  EXPECT_DOUBLE_EQ(h.stddev(), 1.136761525048131E8);
  const std::vector<std::pair<double, std::int64_t>> java = {
      {0, 0},          {1e-9, 0},       {10, 186623},      {50, 1924095},     {90, 4354047},       {99, 4960255},
      {99.5, 4984831}, {99.6, 4988927}, {99.7, 123469823}, {99.9, 123469823}, {99.99, 3600809983}, {100, 3600809983}};
  for (const auto& [p, v] : java) EXPECT_EQ(h.value_at_percentile(p), v) << "p" << p;
  // Out-of-range percentiles clamp.
  EXPECT_EQ(h.value_at_percentile(150), 3600809983);
  EXPECT_EQ(h.value_at_percentile(-1), 0);
}

TEST(hdr_histogram, MixedVectorStatisticsMatchJava) {
  const HdrHistogram h = mixed();
  EXPECT_EQ(h.total_count(), 304);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 2501902335);
  EXPECT_EQ(h.value_at_percentile(50), 2501902335);
  EXPECT_EQ(h.value_at_percentile(0), 0);
  EXPECT_EQ(h.value_at_percentile(0.3), 0);        // rank ceil(0.912) = 1
  EXPECT_EQ(h.value_at_percentile(0.5), 5);        // rank ceil(1.52) = 2
  EXPECT_EQ(h.value_at_percentile(1), 123469823);  // rank ceil(3.04) = 4
  EXPECT_DOUBLE_EQ(h.mean(), 2.4683538324539475E9);
  EXPECT_DOUBLE_EQ(h.stddev(), 2.815243991999532E8);
}

TEST(hdr_histogram, PercentileRankUsesJavaRoundingNotC) {
  // total 1000, p = 99.91: Java rank ceil(999.1) = 1000 (C would use 999).
  HdrHistogram h;
  h.record(1, 999);
  h.record(1000);
  EXPECT_EQ(h.value_at_percentile(99.91), 1000);
  EXPECT_EQ(h.value_at_percentile(99.9), 1);  // rank 999 exactly (nextafter keeps it from 1000)
  EXPECT_EQ(h.value_at_rank(999), 1);
  EXPECT_EQ(h.value_at_rank(1000), 1000);
  EXPECT_EQ(h.value_at_rank(5000), 1000);  // clamped
  EXPECT_EQ(h.value_at_rank(0), 1);

  // 1.1 * 3000 / 100 is 33.000000000000004 in doubles: the 1-ulp step down gives Java's rank 33.
  HdrHistogram seq;
  for (std::int64_t v = 1; v <= 3000; ++v) seq.record(v);
  EXPECT_EQ(seq.value_at_percentile(1.1), 33);                                      // Java: 33
  EXPECT_EQ(seq.value_at_percentile(std::numeric_limits<double>::quiet_NaN()), 1);  // Java: 1
  EXPECT_EQ(seq.value_at_percentile(-5), 1);                                        // Java: 1
}

TEST(hdr_histogram, PercentileZeroIsLowestEquivalent) {
  HdrHistogram h;
  h.record(100'010);  // bucket [99968, 100031] (Java: lowestEquivalentValue 99968)
  h.record(200'010);  // bucket [199936, 200063]
  EXPECT_EQ(h.value_at_percentile(0), 99968);
  EXPECT_EQ(h.min(), 99968);
  EXPECT_EQ(h.value_at_percentile(1e-12), 100031);
  EXPECT_EQ(h.value_at_percentile(50), 100031);
  EXPECT_EQ(h.value_at_percentile(50.0001), 200063);
  EXPECT_EQ(h.max(), 200063);
}

TEST(hdr_histogram, PercentilesAgreeWithSortedValuesWithinResolution) {
  std::mt19937_64 rng(7);
  HdrHistogram h;
  std::vector<std::int64_t> values;
  for (int i = 0; i < 5000; ++i) {
    const auto v = static_cast<std::int64_t>(rng() % 50'000'000);
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(p * 5000 / 100)));
    EXPECT_EQ(h.value_at_percentile(p), h.highest_equivalent(values[rank - 1])) << "p" << p;
  }
}

TEST(hdr_histogram, ForEachRecordedVisitsBucketsInOrder) {
  const HdrHistogram h = mixed();
  std::vector<std::pair<std::int64_t, std::int64_t>> seen;
  h.for_each_recorded([&](std::int64_t v, std::int64_t c) { seen.emplace_back(v, c); });
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {
      {0, 1}, {5, 2}, {123469823, 1}, {2501902335, 300}};
  EXPECT_EQ(seen, expected);
}

TEST(hdr_histogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(1234);
  HdrHistogram all, a, b, c;
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<std::int64_t>(rng() % 3'600'000'000);
    all.record(v);
    (i % 3 == 0 ? a : i % 3 == 1 ? b : c).record(v);
  }
  HdrHistogram merged;
  EXPECT_EQ(merged.add(a), 0);
  EXPECT_EQ(merged.add(b), 0);
  EXPECT_EQ(merged.add(c), 0);
  EXPECT_EQ(merged.add(HdrHistogram()), 0);
  EXPECT_EQ(merged, all);
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_EQ(merged.mean(), all.mean());
  for (double p : {0.0, 50.0, 99.0, 99.99, 100.0}) EXPECT_EQ(merged.value_at_percentile(p), all.value_at_percentile(p));
}

TEST(hdr_histogram, MergeIntoSmallerRangeReportsDropped) {
  HdrHistogram wide(1, 3'600'000'000, 3);
  wide.record(10, 4);
  wide.record(5'000'000, 2);
  HdrHistogram narrow(1, 1'000'000, 3);
  EXPECT_EQ(narrow.add(wide), 2);
  EXPECT_EQ(narrow.total_count(), 4);
  EXPECT_EQ(narrow.max(), 10);
}

TEST(hdr_histogram, MergeAcrossPrecisionsRecordsLowestEquivalents) {
  HdrHistogram fine(1, 3'600'000'000, 3);
  fine.record(12345, 3);
  fine.record(7, 1);
  HdrHistogram coarse(1, 3'600'000'000, 2);
  EXPECT_EQ(coarse.add(fine), 0);
  HdrHistogram expected(1, 3'600'000'000, 2);
  expected.record(12344, 3);  // fine's lowest equivalent of 12345
  expected.record(7);
  EXPECT_EQ(coarse, expected);
}

TEST(hdr_histogram, ResetClearsEverything) {
  HdrHistogram h = java_sample();
  h.start_time_ms = 5;
  h.end_time_ms = 6;
  h.reset();
  EXPECT_EQ(h, HdrHistogram());
  EXPECT_EQ(h.total_count(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.start_time_ms, 0);
  EXPECT_EQ(h.end_time_ms, 0);
  h.record(42);
  EXPECT_EQ(h.min(), 42);
  EXPECT_EQ(h.max(), 42);
}

TEST(hdr_histogram, AddCountAtIndexValidates) {
  HdrHistogram h(1, 1'000'000, 3);
  EXPECT_FALSE(h.add_count_at_index(h.counts_length(), 1));
  EXPECT_FALSE(h.add_count_at_index(3, -1));
  EXPECT_TRUE(h.add_count_at_index(h.index_of(50'000), 2));
  EXPECT_EQ(h.total_count(), 2);
  EXPECT_EQ(h.max(), h.highest_equivalent(50'000));
  EXPECT_EQ(h.min(), h.lowest_equivalent(50'000));
}

}  // namespace
