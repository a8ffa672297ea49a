#pragma once
// HdrHistogram: a fixed-precision histogram of non-negative 64-bit integer values (latencies in
// microseconds, in this project), with the bucket layout, percentile and merge semantics of the
// reference implementations (HdrHistogram Java 2.1.x / HdrHistogram_c), so that histograms we
// export re-derive the same percentiles in their tools.
//
// Layout (see AbstractHistogram in Java): values are split into buckets of `sub_bucket_count`
// sub-buckets; bucket b (b >= 1) covers [sub_bucket_count << (b-1+unit), sub_bucket_count <<
// (b+unit)) in steps of 1 << (b+unit). Every value in one sub-bucket is "equivalent": the
// histogram keeps one count per sub-bucket, so any value is known to within its equivalent range
// (relative error < 10^-significant_figures).
//
// Not thread-safe: one writer per histogram; merge per-worker histograms with add().

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace llmload::analysis {

class HdrHistogram {
 public:
  /// Throws std::invalid_argument, naming the bad parameter, when lowest_discernible < 1,
  /// significant_figures is not in 1..5, highest_trackable < 2 * lowest_discernible, or the
  /// combination needs more than 62 bits of value (as Java does).
  explicit HdrHistogram(std::int64_t lowest_discernible = 1,
                        std::int64_t highest_trackable = 3'600'000'000 /* 1 h in us */, int significant_figures = 3);

  /// Number of counts a histogram with these parameters holds (same validation and exceptions
  /// as the constructor), without allocating it. Used by decoders to bound memory.
  static std::size_t counts_length_for(std::int64_t lowest_discernible, std::int64_t highest_trackable,
                                       int significant_figures);

  /// Adds `count` occurrences of `value`. O(1). Returns false and records nothing when value < 0,
  /// value > highest_trackable() or count < 0; record(v, 0) records nothing and returns true.
  /// Counts are not checked for int64 overflow (2^63 samples are out of reach).
  bool record(std::int64_t value, std::int64_t count = 1) {
    if (static_cast<std::uint64_t>(value) > static_cast<std::uint64_t>(highest_) || count <= 0) [[unlikely]] {
      return count == 0 && value >= 0 && value <= highest_;
    }
    counts_[index_of(value)] += count;
    total_ += count;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    return true;
  }

  /// Adds `count` to the bucket at index i (i < counts_length(), count >= 0); returns false and
  /// changes nothing otherwise. Min/max then follow the decoded-histogram rule of Java
  /// (min = lowest equivalent of the bucket, max = highest equivalent). For codecs.
  bool add_count_at_index(std::size_t i, std::int64_t count);

  std::int64_t total_count() const { return total_; }
  /// Lowest equivalent value of the smallest recorded value; 0 when empty.
  std::int64_t min() const { return total_ == 0 ? 0 : lowest_equivalent(min_); }
  /// Highest equivalent value of the largest recorded value; 0 when empty or only 0 recorded.
  std::int64_t max() const { return (total_ == 0 || max_ == 0) ? 0 : highest_equivalent(max_); }
  /// Mean of the median-equivalent values of the recorded buckets (Java getMean); 0 when empty.
  double mean() const;
  /// Population standard deviation of the median-equivalent values (Java getStdDeviation).
  double stddev() const;

  /// Java getValueAtPercentile: percentile is clamped to [0,100];
  /// rank = max(1, ceil(nextafter(percentile, -inf) * total / 100)); returns the highest
  /// equivalent value of the first bucket whose cumulative count reaches rank (the lowest
  /// equivalent value when percentile == 0). 0 when empty. NaN behaves like rank 1 (as Java).
  std::int64_t value_at_percentile(double percentile) const;
  /// Highest equivalent value of the rank-th smallest recorded value (1-based; rank is clamped to
  /// [1, total_count()]); 0 when empty. value_at_percentile() is value_at_rank(rank(p)).
  std::int64_t value_at_rank(std::int64_t rank) const;
  /// Count in the bucket of v; 0 for v < 0 or beyond the counts array.
  std::int64_t count_at_value(std::int64_t v) const;

  /// Exact merge of `other` into this histogram: each non-empty bucket of `other` is recorded at
  /// its lowest equivalent value (Java/C `add`). With the same lowest_discernible and
  /// significant_figures the merge is lossless. Returns the number of counts dropped because
  /// their value exceeds highest_trackable(). Interval timestamps are not changed.
  std::int64_t add(const HdrHistogram& other);
  /// Clears all counts and the interval timestamps.
  void reset();

  // --- layout ------------------------------------------------------------------------------
  std::int64_t lowest_discernible() const { return lowest_; }
  std::int64_t highest_trackable() const { return highest_; }
  int significant_figures() const { return sig_; }
  int sub_bucket_count() const { return 1 << (sub_half_mag_ + 1); }
  int bucket_count() const { return bucket_count_; }
  std::size_t counts_length() const { return counts_.size(); }
  /// Count at index i; 0 for i >= counts_length().
  std::int64_t count_at_index(std::size_t i) const { return i < counts_.size() ? counts_[i] : 0; }
  /// Lowest value of the bucket at index i (i < counts_length()).
  std::int64_t value_from_index(std::size_t i) const {
    int bucket = static_cast<int>(i >> sub_half_mag_) - 1;
    auto sub = static_cast<std::int64_t>(i & (static_cast<std::size_t>(sub_half_count_) - 1)) + sub_half_count_;
    if (bucket < 0) {
      sub -= sub_half_count_;
      bucket = 0;
    }
    return sub << (bucket + unit_mag_);
  }
  /// Index of the bucket holding v. Precondition: v >= 0 (any v <= highest_trackable() is in range).
  std::size_t index_of(std::int64_t v) const {
    const int bucket = leading_zero_base_ - std::countl_zero(static_cast<std::uint64_t>(v) | sub_mask_);
    const std::int64_t sub = v >> (bucket + unit_mag_);
    return static_cast<std::size_t>((static_cast<std::int64_t>(bucket + 1) << sub_half_mag_) + sub - sub_half_count_);
  }
  /// Equivalent-range helpers (precondition v >= 0), as Java's lowestEquivalentValue etc.
  std::int64_t lowest_equivalent(std::int64_t v) const { return value_from_index(index_of(v)); }
  std::int64_t highest_equivalent(std::int64_t v) const { return highest_equivalent_at_index(index_of(v)); }
  std::int64_t median_equivalent(std::int64_t v) const {
    const std::size_t i = index_of(v);
    return value_from_index(i) + (range_size_at_index(i) >> 1);
  }
  /// Width of the equivalent range of the bucket at index i.
  std::int64_t range_size_at_index(std::size_t i) const {
    const int bucket = std::max(static_cast<int>(i >> sub_half_mag_) - 1, 0);
    return std::int64_t{1} << (bucket + unit_mag_);
  }
  std::int64_t highest_equivalent_at_index(std::size_t i) const {
    return value_from_index(i) + (range_size_at_index(i) - 1);
  }

  /// Calls f(highest_equivalent_value, count) for each non-empty bucket, in increasing value order.
  template <class F>
  void for_each_recorded(F&& f) const {
    if (total_ == 0) return;
    const std::size_t last = index_of(max_);
    for (std::size_t i = 0; i <= last; ++i) {
      if (const std::int64_t c = counts_[i]; c != 0) f(highest_equivalent_at_index(i), c);
    }
  }

  /// Same layout (lowest, highest, significant figures) and identical counts. Ignores timestamps.
  friend bool operator==(const HdrHistogram& a, const HdrHistogram& b) {
    return a.lowest_ == b.lowest_ && a.highest_ == b.highest_ && a.sig_ == b.sig_ && a.total_ == b.total_ &&
           a.counts_ == b.counts_;
  }

  /// Interval timestamps carried to/from .hlog lines (ms since the epoch; 0 when unset).
  double start_time_ms = 0;
  double end_time_ms = 0;

 private:
  std::int64_t lowest_;
  std::int64_t highest_;
  int sig_;
  int unit_mag_ = 0;      // floor(log2(lowest))
  int sub_half_mag_ = 0;  // log2(sub_bucket_count) - 1
  std::int64_t sub_half_count_ = 0;
  std::uint64_t sub_mask_ = 0;  // (sub_bucket_count - 1) << unit_mag
  int leading_zero_base_ = 0;   // 64 - unit_mag - (sub_half_mag + 1)
  int bucket_count_ = 0;
  std::vector<std::int64_t> counts_;
  std::int64_t total_ = 0;
  std::int64_t min_ = std::numeric_limits<std::int64_t>::max();  // raw smallest recorded value
  std::int64_t max_ = 0;                                         // raw largest recorded value
};

}  // namespace llmload::analysis
