#pragma once
// Test vectors shared by the analysis unit tests.

#include "llmload/analysis/hdr_histogram.hpp"

namespace llmload::analysis::testing {

/// The reference's "mixed" vector: its V2 payload is 02 07 04 a99d02 02 9745 d804 (1 count,
/// skip 4, 2 counts, skip 18261, 1 count, skip 4428, 300 counts).
inline HdrHistogram mixed() {
  HdrHistogram h;
  h.record(0);
  h.record(5, 2);
  h.record(123'456'789);
  h.record(2'500'000'000, 300);
  return h;
}

}  // namespace llmload::analysis::testing
