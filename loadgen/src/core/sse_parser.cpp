#include "llmload/loadgen/sse_parser.hpp"

namespace llmload {

SseParser::Status SseParser::feed(std::string_view bytes, const std::function<void(SseEvent&&)>& on_event) {
  if (failed_) return Status::kEventTooLarge;
  std::size_t i = 0;
  if (!bom_checked_) {
    // A UTF-8 BOM may start the stream; it can arrive split, so wait for 3 bytes or a mismatch.
    static constexpr std::string_view kBom = "\xEF\xBB\xBF";
    std::string_view head = bytes.substr(0, 3 - line_.size());
    std::string probe = line_ + std::string(head);
    if (kBom.substr(0, probe.size()) == probe) {
      if (probe.size() < 3) {
        line_ = probe;
        return Status::kOk;
      }
      line_.clear();
      i = head.size();
      bom_checked_ = true;
    } else {
      bom_checked_ = true;
      // The bytes held back in line_ while waiting for a possible BOM are ordinary content:
      // feed them through the normal path so they count toward the event size cap exactly as
      // when they arrive in one piece with what follows.
      if (!line_.empty()) {
        const std::string held = std::move(line_);
        line_.clear();
        if (feed(held, on_event) != Status::kOk) return Status::kEventTooLarge;
      }
    }
  }
  while (i < bytes.size()) {
    const char c = bytes[i];
    if (last_was_cr_) {
      last_was_cr_ = false;
      if (c == '\n') {
        ++i;
        continue;  // LF of a CRLF pair
      }
    }
    if (c == '\r' || c == '\n') {
      last_was_cr_ = (c == '\r');
      ++i;
      process_line(on_event);
      if (failed_) return Status::kEventTooLarge;
      continue;
    }
    // Copy the run of ordinary bytes up to the next line terminator in one go.
    std::size_t j = i;
    while (j < bytes.size() && bytes[j] != '\r' && bytes[j] != '\n') ++j;
    line_.append(bytes.data() + i, j - i);
    event_bytes_ += j - i;
    if (event_bytes_ > max_event_bytes_) {
      failed_ = true;
      return Status::kEventTooLarge;
    }
    i = j;
  }
  return Status::kOk;
}

void SseParser::process_line(const std::function<void(SseEvent&&)>& on_event) {
  if (line_.empty()) {
    // Blank line: dispatch (only if data was seen, as the spec says).
    if (has_data_) {
      SseEvent ev{std::move(event_), std::move(data_), id_};
      ++events_;
      on_event(std::move(ev));
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    event_bytes_ = 0;
    return;
  }
  if (line_.front() == ':') {  // comment
    line_.clear();
    return;
  }
  std::string_view line(line_);
  std::string_view field = line;
  std::string_view value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  }
  // "retry" and unknown fields are ignored.
  line_.clear();
}

}  // namespace llmload
