#pragma once
// Invariants of a completed RequestTracker, shared by fuzz_request_tracker and fuzz_http_response.

#include <cstdint>

#include "fuzz_check.hpp"
#include "llmload/loadgen/request_tracker.hpp"

namespace llmload::fuzz {

/// `t_*` are offsets from the run start; the driver feeds non-decreasing times, so every
/// recorded moment must be ordered as the calls were.
inline void check_completed_tracker(const RequestTracker& tracker) {
  FUZZ_CHECK(tracker.complete());
  const analysis::RequestRecord& r = tracker.record();
  FUZZ_CHECK(r.t_done.has_value());
  if (r.t_send && r.t_headers) FUZZ_CHECK(*r.t_send <= *r.t_headers);
  if (r.t_headers && r.t_first) FUZZ_CHECK(*r.t_headers <= *r.t_first);
  if (r.t_first) FUZZ_CHECK(r.t_last && *r.t_first <= *r.t_last && *r.t_last <= *r.t_done);
  if (r.t_last) FUZZ_CHECK(r.t_first.has_value());
  FUZZ_CHECK(r.output_tokens >= 0);
  FUZZ_CHECK(r.input_tokens >= 0);
  FUZZ_CHECK(r.output_events >= 0);
  if (r.cached_tokens) FUZZ_CHECK(*r.cached_tokens >= 0);
  if (r.ok()) {
    FUZZ_CHECK(r.t_first.has_value());
    FUZZ_CHECK(r.http_status >= 200 && r.http_status < 300);
    FUZZ_CHECK(r.error_message.empty());
    FUZZ_CHECK(!tracker.chunks().empty());
  } else {
    FUZZ_CHECK(!r.error_message.empty());
  }
  // Chunk arrivals: in time order, inside [t_first, t_last], each with at least one token.
  const auto& chunks = tracker.chunks();
  if (!chunks.empty()) FUZZ_CHECK(r.t_first && chunks.front().t == *r.t_first && chunks.back().t == *r.t_last);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    FUZZ_CHECK(chunks[i].tokens >= 1);
    if (i > 0) FUZZ_CHECK(chunks[i - 1].t <= chunks[i].t);
  }
}

}  // namespace llmload::fuzz
