#include "llmload/analysis/hdr_histogram.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace llmload::analysis {
namespace {

struct Layout {
  int unit_mag;
  int sub_half_mag;
  int bucket_count;
  std::size_t counts_length;
};

// Validates the parameters and derives the layout (AbstractHistogram.init / hdr_calculate_bucket_config).
Layout compute_layout(std::int64_t lowest, std::int64_t highest, int sig) {
  if (lowest < 1) {
    throw std::invalid_argument("HdrHistogram: lowest_discernible must be >= 1, got " + std::to_string(lowest));
  }
  if (sig < 1 || sig > 5) {
    throw std::invalid_argument("HdrHistogram: significant_figures must be in 1..5, got " + std::to_string(sig));
  }
  if (highest / 2 < lowest) {  // highest < 2 * lowest, without overflowing 2 * lowest
    throw std::invalid_argument("HdrHistogram: highest_trackable (" + std::to_string(highest) +
                                ") must be >= 2 * lowest_discernible (" + std::to_string(lowest) + ")");
  }
  Layout l{};
  l.unit_mag = 63 - std::countl_zero(static_cast<std::uint64_t>(lowest));
  // Smallest k with 2^k >= 2 * 10^sig: the sub-bucket count that resolves single units up there.
  std::int64_t largest_single_unit = 2;
  for (int i = 0; i < sig; ++i) largest_single_unit *= 10;
  int sub_count_mag = 0;
  while ((std::int64_t{1} << sub_count_mag) < largest_single_unit) ++sub_count_mag;
  l.sub_half_mag = std::max(sub_count_mag, 1) - 1;
  if (l.unit_mag + l.sub_half_mag > 61) {
    throw std::invalid_argument("HdrHistogram: lowest_discernible (" + std::to_string(lowest) +
                                ") is too large for significant_figures " + std::to_string(sig));
  }
  const std::int64_t sub_count = std::int64_t{1} << (l.sub_half_mag + 1);
  // Buckets needed to cover `highest` (Java getBucketsNeededToCoverValue).
  std::int64_t smallest_untrackable = sub_count << l.unit_mag;
  int buckets = 1;
  while (smallest_untrackable <= highest) {
    if (smallest_untrackable > std::numeric_limits<std::int64_t>::max() / 2) {
      ++buckets;
      break;
    }
    smallest_untrackable <<= 1;
    ++buckets;
  }
  l.bucket_count = buckets;
  l.counts_length = static_cast<std::size_t>(buckets + 1) * static_cast<std::size_t>(sub_count / 2);
  return l;
}

}  // namespace

HdrHistogram::HdrHistogram(std::int64_t lowest_discernible, std::int64_t highest_trackable, int significant_figures)
    : lowest_(lowest_discernible), highest_(highest_trackable), sig_(significant_figures) {
  const Layout l = compute_layout(lowest_discernible, highest_trackable, significant_figures);
  unit_mag_ = l.unit_mag;
  sub_half_mag_ = l.sub_half_mag;
  sub_half_count_ = std::int64_t{1} << sub_half_mag_;
  sub_mask_ = (static_cast<std::uint64_t>(sub_half_count_ * 2) - 1) << unit_mag_;
  leading_zero_base_ = 64 - unit_mag_ - (sub_half_mag_ + 1);
  bucket_count_ = l.bucket_count;
  counts_.assign(l.counts_length, 0);
}

std::size_t HdrHistogram::counts_length_for(std::int64_t lowest_discernible, std::int64_t highest_trackable,
                                            int significant_figures) {
  return compute_layout(lowest_discernible, highest_trackable, significant_figures).counts_length;
}

bool HdrHistogram::add_count_at_index(std::size_t i, std::int64_t count) {
  if (i >= counts_.size() || count < 0) return false;
  if (count == 0) return true;
  counts_[i] += count;
  total_ += count;
  min_ = std::min(min_, value_from_index(i));
  max_ = std::max(max_, highest_equivalent_at_index(i));
  return true;
}

double HdrHistogram::mean() const {
  if (total_ == 0) return 0.0;
  double sum = 0.0;
  for_each_recorded([&](std::int64_t v, std::int64_t c) {
    sum += static_cast<double>(median_equivalent(v)) * static_cast<double>(c);
  });
  return sum / static_cast<double>(total_);
}

double HdrHistogram::stddev() const {
  if (total_ == 0) return 0.0;
  const double m = mean();
  double sum_sq = 0.0;
  for_each_recorded([&](std::int64_t v, std::int64_t c) {
    const double d = static_cast<double>(median_equivalent(v)) - m;
    sum_sq += (d * d) * static_cast<double>(c);
  });
  return std::sqrt(sum_sq / static_cast<double>(total_));
}

std::int64_t HdrHistogram::value_at_rank(std::int64_t rank) const {
  if (total_ == 0) return 0;
  rank = std::clamp<std::int64_t>(rank, 1, total_);
  const std::size_t last = index_of(max_);
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i <= last; ++i) {
    cumulative += counts_[i];
    if (cumulative >= rank) return highest_equivalent_at_index(i);
  }
  return max();  // unreachable while total_ matches the counts
}

std::int64_t HdrHistogram::value_at_percentile(double percentile) const {
  if (total_ == 0) return 0;
  std::int64_t rank = 1;  // NaN: Java's (long) NaN is 0, then max(0, 1)
  if (!std::isnan(percentile)) {
    // Same operations, in the same order, as Java, so ranks agree bit for bit.
    const double requested =
        std::min(std::max(std::nextafter(percentile, -std::numeric_limits<double>::infinity()), 0.0), 100.0);
    const double fp_rank = (requested * static_cast<double>(total_)) / 100.0;
    rank = std::max<std::int64_t>(static_cast<std::int64_t>(std::ceil(fp_rank)), 1);
  }
  if (percentile == 0.0) {
    const std::size_t last = index_of(max_);
    for (std::size_t i = 0; i <= last; ++i) {
      if (counts_[i] != 0) return value_from_index(i);
    }
  }
  return value_at_rank(rank);
}

std::int64_t HdrHistogram::count_at_value(std::int64_t v) const {
  if (v < 0) return 0;
  return count_at_index(index_of(v));
}

std::int64_t HdrHistogram::add(const HdrHistogram& other) {
  if (other.total_ == 0) return 0;
  std::int64_t dropped = 0;
  const std::size_t last = other.index_of(other.max_);
  const bool same_mapping = other.unit_mag_ == unit_mag_ && other.sub_half_mag_ == sub_half_mag_;
  for (std::size_t i = 0; i <= last; ++i) {
    const std::int64_t c = other.counts_[i];
    if (c == 0) continue;
    const std::int64_t v = other.value_from_index(i);
    if (v > highest_) {
      dropped += c;
      continue;
    }
    const std::size_t dst = same_mapping ? i : index_of(v);
    counts_[dst] += c;
    total_ += c;
    min_ = std::min(min_, v);  // as if record(v, c)
    max_ = std::max(max_, v);
  }
  // Same mapping and nothing dropped: the merge is exact, so keep the exact raw extremes too.
  if (same_mapping && dropped == 0) {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  return dropped;
}

void HdrHistogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  min_ = std::numeric_limits<std::int64_t>::max();
  max_ = 0;
  start_time_ms = 0;
  end_time_ms = 0;
}

}  // namespace llmload::analysis
