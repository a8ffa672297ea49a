// Fuzz target: SseParser (bytes from the network, any split).
//
// The input is a byte stream. It is parsed whole, byte by byte, and in pieces whose sizes come
// from a generator seeded by the input's hash (so each input has its own, reproducible splits);
// all must give the same events, the same final state, and the same event count. The same is
// checked with a small max_event_bytes (also derived from the input), whose events must be a
// prefix of the uncapped ones (all of them when it did not fail) and never exceed the cap.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "llmload/loadgen/sse_parser.hpp"

namespace {

using llmload::fuzz::fnv1a;
using llmload::fuzz::splitmix;
using llmload::SseEvent;
using llmload::SseParser;

struct Outcome {
  std::vector<SseEvent> events;
  bool failed = false;
  bool partial = false;
  std::size_t count = 0;
};

// Feeds `input` in pieces of the given sizes (cycled; the last piece takes the rest).
Outcome run(std::string_view input, std::size_t cap, const std::vector<std::size_t>& sizes) {
  Outcome out;
  SseParser parser(cap);
  auto on_event = [&](SseEvent&& e) { out.events.push_back(std::move(e)); };
  std::size_t pos = 0;
  std::size_t k = 0;
  bool failed = false;
  do {
    const std::size_t n = sizes.empty() ? input.size() - pos : std::min(sizes[k++ % sizes.size()], input.size() - pos);
    const auto status = parser.feed(input.substr(pos, n), on_event);
    pos += n;
    if (status == SseParser::Status::kEventTooLarge) {
      failed = true;
      // Once failed, every further call fails too and emits nothing.
      const std::size_t before = out.events.size();
      FUZZ_CHECK(parser.feed(input.substr(pos), on_event) == SseParser::Status::kEventTooLarge);
      FUZZ_CHECK(out.events.size() == before);
      break;
    }
  } while (pos < input.size());
  out.failed = failed;
  out.partial = parser.has_partial_event();
  out.count = parser.events();
  FUZZ_CHECK(out.count == out.events.size());
  return out;
}

bool same_event(const SseEvent& a, const SseEvent& b) { return a.event == b.event && a.data == b.data && a.id == b.id; }

void check_same(const Outcome& a, const Outcome& b) {
  FUZZ_CHECK(a.failed == b.failed);
  FUZZ_CHECK(a.events.size() == b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) FUZZ_CHECK(same_event(a.events[i], b.events[i]));
  if (!a.failed) FUZZ_CHECK(a.partial == b.partial);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::uint64_t rng = fnv1a(input);

  std::vector<std::size_t> random_sizes;
  for (int i = 0; i < 16; ++i) random_sizes.push_back(splitmix(rng) % 24);  // 0: an empty feed
  const std::vector<std::size_t> whole;
  const std::vector<std::size_t> bytewise{1};

  const Outcome ref = run(input, 16 * 1024 * 1024, whole);
  FUZZ_CHECK(!ref.failed);
  for (const auto& e : ref.events) {
    // Per the spec, an id with NUL is ignored; data lines never contain a line terminator.
    FUZZ_CHECK(e.id.find('\0') == std::string::npos);
    FUZZ_CHECK(e.event.find_first_of("\r\n") == std::string::npos);
    FUZZ_CHECK(e.data.find('\r') == std::string::npos);
  }
  check_same(ref, run(input, 16 * 1024 * 1024, random_sizes));
  if (size <= 8192) check_same(ref, run(input, 16 * 1024 * 1024, bytewise));

  const std::size_t small_cap = splitmix(rng) % 64;
  const Outcome capped = run(input, small_cap, whole);
  check_same(capped, run(input, small_cap, random_sizes));
  if (size <= 8192) check_same(capped, run(input, small_cap, bytewise));
  FUZZ_CHECK(capped.events.size() <= ref.events.size());
  if (!capped.failed) FUZZ_CHECK(capped.events.size() == ref.events.size());
  for (std::size_t i = 0; i < capped.events.size(); ++i) {
    FUZZ_CHECK(same_event(capped.events[i], ref.events[i]));
    FUZZ_CHECK(capped.events[i].data.size() <= small_cap);
  }
  return 0;
}
