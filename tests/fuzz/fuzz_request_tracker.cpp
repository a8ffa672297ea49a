// Fuzz target: RequestTracker, driven as the transport drives it.
//
// Input layout: 4 control bytes, then the response body.
//   byte 0: bit0 chat (else completions), bit1 streaming request, bit2 skip on_sent,
//           bit3 skip on_headers, bit4 call on_complete twice, bits5-7 time step scale
//   byte 1: HTTP status (table below; the last slot takes byte1 * 3 as a raw status)
//   byte 2: Content-Type (table below)
//   byte 3: bits0-2 the transport outcome passed to on_complete (ok or an error class);
//           bit3: a Retry-After header whose value is the first (byte3 >> 4) body bytes
// The body is delivered in pieces whose sizes come from a generator seeded by the input's hash,
// at non-decreasing times; when on_body returns false the transport stops and completes with
// kCanceled, as AsioTransport does. The invariants of the completed record are then checked.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "llmload/loadgen/request_tracker.hpp"
#include "tracker_checks.hpp"

namespace {

using llmload::fuzz::fnv1a;
using llmload::fuzz::splitmix;
using llmload::ApiKind;
using llmload::RequestTracker;
using llmload::TimePoint;
using llmload::TransportError;
using llmload::analysis::ErrorClass;

constexpr std::array<int, 16> kStatuses = {200, 200, 200, 201, 204, 299, 400, 404, 413, 429, 500, 503, 100, 302, 0, -1};
constexpr std::array<std::string_view, 8> kContentTypes = {
    "text/event-stream", "text/event-stream; charset=utf-8", "application/json", "",
    "text/plain",        "TEXT/EVENT-STREAM",                "application/x-ndjson", "application/json; text/event-stream"};
constexpr std::array<ErrorClass, 8> kOutcomes = {ErrorClass::kNone,     ErrorClass::kNone,    ErrorClass::kNone,
                                                 ErrorClass::kIncomplete, ErrorClass::kTimeout, ErrorClass::kIdleTimeout,
                                                 ErrorClass::kProtocol, ErrorClass::kCanceled};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const std::uint8_t flags = data[0];
  int status = kStatuses[data[1] % kStatuses.size()];
  if (status < 0) status = data[1] * 3;
  const std::string_view content_type = kContentTypes[data[2] % kContentTypes.size()];
  const ErrorClass outcome = kOutcomes[data[3] % kOutcomes.size()];
  const std::string_view body(reinterpret_cast<const char*>(data) + 4, size - 4);

  const ApiKind api = (flags & 1) != 0 ? ApiKind::kChat : ApiKind::kCompletions;
  const bool stream = (flags & 2) != 0;
  const auto step = std::chrono::nanoseconds(std::int64_t{1} << (3 * (flags >> 5)));  // 1 ns .. 2 ms
  std::uint64_t rng = fnv1a(body);

  llmload::analysis::RequestRecord record;
  record.index = 7;
  record.requested_input_tokens = 128;
  record.requested_output_tokens = 64;
  const TimePoint run_start(std::chrono::seconds(1000));
  TimePoint now = run_start + std::chrono::milliseconds(5);
  RequestTracker tracker(record, run_start, api, stream);

  if ((flags & 4) == 0) tracker.on_sent(now);
  now += step;
  bool canceled = false;
  if ((flags & 8) == 0) {
    if ((data[3] & 8) != 0) tracker.on_header_field("Retry-After", body.substr(0, data[3] >> 4));
    tracker.on_headers(now, status, content_type);
    std::size_t pos = 0;
    while (pos < body.size()) {
      now += step * static_cast<std::int64_t>(splitmix(rng) % 4);  // same-time pieces too
      const std::size_t n = std::min<std::size_t>(1 + splitmix(rng) % 512, body.size() - pos);
      const bool go_on = tracker.on_body(now, body.substr(pos, n));
      FUZZ_CHECK(!tracker.complete());
      pos += n;
      if (!go_on) {
        canceled = true;
        break;
      }
    }
  }
  now += step;
  TransportError error;
  if (canceled) {
    error = TransportError{ErrorClass::kCanceled, "aborted by the client"};
  } else if (outcome != ErrorClass::kNone) {
    error = TransportError{outcome, "read response body: fuzzed failure"};
  }
  tracker.on_complete(now, error);
  if (canceled) FUZZ_CHECK(!tracker.record().ok());
  // A transport error fails the request, unless the stream had finished ([DONE]) before it.
  if (!error.ok() && error.cls != ErrorClass::kIncomplete && !tracker.stream_finished()) {
    FUZZ_CHECK(!tracker.record().ok());
  }
  llmload::fuzz::check_completed_tracker(tracker);
  if ((flags & 16) != 0) {
    // A second on_complete (which the transport never sends) must change nothing.
    const auto before = tracker.record();
    tracker.on_complete(now + step, TransportError{ErrorClass::kProtocol, "again"});
    FUZZ_CHECK(tracker.record().error == before.error && tracker.record().t_done == before.t_done &&
               tracker.record().output_tokens == before.output_tokens);
  }
  return 0;
}
