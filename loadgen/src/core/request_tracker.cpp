#include "llmload/loadgen/request_tracker.hpp"

#include <fmt/format.h>

namespace llmload {

using analysis::ErrorClass;

namespace {
constexpr std::size_t kMaxKeptBody = 64 * 1024;  // of error or non-streamed bodies
constexpr std::size_t kMaxWholeBody = 64 * 1024 * 1024;
}  // namespace

RequestTracker::RequestTracker(analysis::RequestRecord record, TimePoint run_start, ApiKind api, bool stream)
    : record_(std::move(record)), run_start_(run_start), api_(api), stream_(stream), decoder_(api) {}

void RequestTracker::fail(ErrorClass cls, std::string message) {
  if (record_.error != ErrorClass::kNone) return;  // the first error is the cause
  record_.error = cls;
  record_.error_message = std::move(message);
}

void RequestTracker::on_sent(TimePoint t) { record_.t_send = offset(t); }

void RequestTracker::on_header_field(std::string_view name, std::string_view value) {
  if (name == "Retry-After") retry_after_.assign(value.substr(0, 64));
}

void RequestTracker::on_headers(TimePoint t, int status, std::string_view content_type) {
  record_.t_headers = offset(t);
  record_.http_status = status;
  sse_ = content_type.find("text/event-stream") != std::string_view::npos;
}

bool RequestTracker::on_body(TimePoint t, std::string_view bytes) {
  const bool success_status = record_.http_status >= 200 && record_.http_status < 300;
  if (!success_status || !sse_) {
    // Error bodies are kept (capped) for the message; non-streamed 200 bodies are kept whole.
    const std::size_t cap = success_status ? kMaxWholeBody : kMaxKeptBody;
    if (body_.size() < cap) body_.append(bytes.substr(0, cap - body_.size()));
    if (success_status && body_.size() >= kMaxWholeBody) {
      fail(ErrorClass::kProtocol, fmt::format("response body larger than {} bytes", kMaxWholeBody));
      return false;
    }
    return true;
  }
  auto status = parser_.feed(bytes, [&](SseEvent&& ev) { on_event(t, std::move(ev)); });
  if (status == SseParser::Status::kEventTooLarge) {
    fail(ErrorClass::kProtocol, "an SSE event exceeded the maximum event size (16 MiB)");
    return false;
  }
  return true;
}

void RequestTracker::on_event(TimePoint t, SseEvent&& ev) {
  if (done_seen_ || record_.error != ErrorClass::kNone) return;
  StreamUpdate u = decoder_.decode(ev);
  if (u.usage) usage_ = u.usage;
  if (u.finish_reason) record_.finish_reason = u.finish_reason;
  switch (u.kind) {
    case StreamUpdate::Kind::kOutput:
      if (!record_.t_first) record_.t_first = offset(t);
      record_.t_last = offset(t);
      ++record_.output_events;
      chunks_.push_back({offset(t), u.tokens});
      break;
    case StreamUpdate::Kind::kDone:
      done_seen_ = true;
      break;
    case StreamUpdate::Kind::kError:
      fail(ErrorClass::kStreamError, "error event in stream: " + u.message);
      break;
    case StreamUpdate::Kind::kMalformed:
      fail(ErrorClass::kProtocol, u.message);
      break;
    case StreamUpdate::Kind::kNoOutput:
      break;
  }
}

void RequestTracker::on_complete(TimePoint t, const TransportError& error) {
  if (complete_) return;
  complete_ = true;
  record_.t_done = offset(t);
  const bool success_status = record_.http_status >= 200 && record_.http_status < 300;
  if (!error.ok()) {
    // A transport error after the server already finished the stream is harmless.
    if (!(done_seen_ && error.cls == ErrorClass::kIncomplete)) fail(error.cls, error.message);
  } else if (record_.http_status != 0 && !success_status) {
    fail(ErrorClass::kHttpStatus,
         fmt::format("HTTP {}{}: {}", record_.http_status,
                     retry_after_.empty() ? std::string() : " (Retry-After: " + retry_after_ + ")",
                     error_message_from_body(body_)));
  } else if (stream_) {
    if (!sse_) {
      fail(ErrorClass::kProtocol, fmt::format("expected a text/event-stream response to a streaming request, got: {}",
                                              error_message_from_body(body_, 120)));
    } else if (!done_seen_ && record_.error == ErrorClass::kNone) {
      fail(ErrorClass::kIncomplete,
           fmt::format("stream ended without 'data: [DONE]' after {} events{}", parser_.events(),
                       parser_.has_partial_event() ? " (last event truncated)" : ""));
    }
  } else {
    WholeResponse w = decode_whole_response(body_, api_);
    if (!w.ok) {
      fail(ErrorClass::kProtocol, w.message);
    } else {
      // Non-streamed: the output arrives all at once, so TTFT equals E2E.
      usage_ = w.usage;
      record_.finish_reason = w.finish_reason;
      if (w.has_output) {
        record_.t_first = offset(t);
        record_.t_last = offset(t);
        record_.output_events = 1;
        chunks_.push_back({offset(t), 1});
      }
    }
  }
  if (usage_) {
    record_.input_tokens = usage_->prompt_tokens;
    record_.output_tokens = usage_->completion_tokens;
    record_.cached_tokens = usage_->cached_tokens;
    record_.tokens_from_usage = true;
    if (!stream_ && !chunks_.empty()) chunks_.back().tokens = std::max<std::int64_t>(1, usage_->completion_tokens);
  } else {
    record_.input_tokens = record_.requested_input_tokens;
    std::int64_t n = 0;
    for (const auto& c : chunks_) n += c.tokens;
    record_.output_tokens = n;
  }
  if (record_.error == ErrorClass::kNone && !record_.t_first) {
    fail(ErrorClass::kNoOutput, "the response completed without any generated output");
  }
}

}  // namespace llmload
