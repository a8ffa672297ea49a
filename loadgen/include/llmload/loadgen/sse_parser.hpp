#pragma once
// Sans-IO parser for Server-Sent Events (the WHATWG "text/event-stream" format).
// Bytes in (any split), events out. No I/O, no clock: the caller stamps events.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace llmload {

/// One dispatched event. `data` is the concatenation of its data lines joined by '\n'.
struct SseEvent {
  std::string event;  // "event:" field, empty if none was given
  std::string data;
  std::string id;
};

/// Incremental SSE parser. Handles LF, CR and CRLF line endings (also when a CRLF is split across
/// feeds), comment lines, multi-line data, fields without a value, a leading UTF-8 BOM, and caps
/// the size of one event (an oversized event is an error, not unbounded memory).
/// Threading: one instance per stream, not thread-safe.
class SseParser {
 public:
  enum class Status { kOk, kEventTooLarge };

  explicit SseParser(std::size_t max_event_bytes = 16 * 1024 * 1024) : max_event_bytes_(max_event_bytes) {}

  /// Feeds bytes; calls `on_event` for every event completed by them (an event completes at a
  /// blank line). Returns kEventTooLarge (and stops consuming) once an event exceeds the cap;
  /// after that every call returns kEventTooLarge.
  Status feed(std::string_view bytes, const std::function<void(SseEvent&&)>& on_event);

  /// At end of stream: true when bytes of an unfinished event are pending (a truncated event;
  /// per the spec it is discarded, callers may report it).
  bool has_partial_event() const { return !line_.empty() || has_data_ || !event_.empty(); }

  /// Total events dispatched so far.
  std::size_t events() const { return events_; }

 private:
  /// One line without its terminator (a view of the fed bytes, or line_ when it came in pieces).
  void process_line(std::string_view line, const std::function<void(SseEvent&&)>& on_event);

  std::size_t max_event_bytes_;
  std::string line_;       // the start of a line whose terminator has not come yet
  std::string data_;       // data lines of the current event so far
  std::string event_;      // event type of the current event
  std::string id_;         // last event id
  bool has_data_ = false;  // a data field was seen in the current event
  bool last_was_cr_ = false;  // the previous byte was CR: a following LF belongs to it
  bool bom_checked_ = false;
  bool failed_ = false;
  std::size_t event_bytes_ = 0;
  std::size_t events_ = 0;
};

}  // namespace llmload
