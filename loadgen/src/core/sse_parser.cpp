#include "llmload/loadgen/sse_parser.hpp"

#include <cstring>

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
  const char* const base = bytes.data();
  const std::size_t n = bytes.size();
  std::size_t lf_at = 0;  // the next LF at or after i once searched (n: none), kept across CR-ended lines
  bool lf_known = false;
  while (i < n) {
    if (last_was_cr_) {
      last_was_cr_ = false;
      if (base[i] == '\n') {
        ++i;
        continue;  // LF of a CRLF pair
      }
    }
    // The run of ordinary bytes up to the next line terminator (CR or LF), found with memchr.
    if (!lf_known || lf_at < i) {
      const auto* lf = static_cast<const char*>(std::memchr(base + i, '\n', n - i));
      lf_at = lf != nullptr ? static_cast<std::size_t>(lf - base) : n;
      lf_known = true;
    }
    const auto* cr = static_cast<const char*>(std::memchr(base + i, '\r', lf_at - i));
    const std::size_t j = cr != nullptr ? static_cast<std::size_t>(cr - base) : lf_at;
    event_bytes_ += j - i;
    if (event_bytes_ > max_event_bytes_) {
      line_.append(base + i, j - i);  // the event's bytes stay pending (has_partial_event)
      failed_ = true;
      return Status::kEventTooLarge;
    }
    if (j == n) {
      line_.append(base + i, j - i);  // unterminated: the rest comes with the next bytes
      break;
    }
    last_was_cr_ = base[j] == '\r';
    if (line_.empty()) {
      process_line(std::string_view(base + i, j - i), on_event);  // a whole line in these bytes: no copy
    } else {
      line_.append(base + i, j - i);
      process_line(line_, on_event);
      line_.clear();
    }
    i = j + 1;
  }
  return Status::kOk;
}

void SseParser::process_line(std::string_view line, const std::function<void(SseEvent&&)>& on_event) {
  if (line.empty()) {
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
  if (line.front() == ':') return;  // comment
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
}

}  // namespace llmload
