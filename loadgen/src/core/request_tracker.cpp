#include "llmload/loadgen/request_tracker.hpp"

#include <fmt/format.h>

namespace llmload {

using analysis::ErrorClass;

namespace {
constexpr std::size_t kMaxKeptBody = 64 * 1024;  // of error or non-streamed bodies
constexpr std::size_t kMaxWholeBody = 64 * 1024 * 1024;
// After "data: [DONE]" the body ends at once (the chunked terminator follows in the same write);
// a server that leaves it open gets this long before the connection is closed, and the request
// counts as the success it was.
constexpr Nanos kBodyEndAfterDone = std::chrono::milliseconds(250);
constexpr std::size_t kKeptHead = 200;  // of every body, to name what was received in an error

// A Content-Type's media type: lower case, without its parameters or surrounding spaces.
std::string media_type(std::string_view content_type) {
  std::string_view v = content_type.substr(0, content_type.find(';'));
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  std::string out(v.substr(0, 128));
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// A 404 or 405 on the generation route: most often the other API, or a base URL with /v1 in it.
// Not when the server says what was not found is the model (vLLM: "The model `x` does not
// exist."): the route is right, and --model is the fix.
std::string wrong_route_hint(int status, ApiKind api, std::string_view message) {
  if (status != 404 && status != 405) return {};
  if (message.find("model") != std::string_view::npos || message.find("Model") != std::string_view::npos) {
    return " (the server does not know this model: pass --model with one GET /v1/models lists)";
  }
  if (api == ApiKind::kResponses || api == ApiKind::kAnthropic) {
    return fmt::format(" (the server has no {} route: it may not serve this API; try --backend openai-chat "
                       "(/v1/chat/completions), or --endpoint with its path; --base-url is the server's root, "
                       "without /v1)",
                       api == ApiKind::kResponses ? "/v1/responses" : "/v1/messages");
  }
  const char* other = api == ApiKind::kChat ? "--backend openai-completions (/v1/completions)"
                                            : "--backend openai-chat (/v1/chat/completions)";
  return fmt::format(" (the server has no such route: if it serves the other API, use {}; --base-url is the server's "
                     "root, without /v1)",
                     other);
}

}  // namespace

bool reads_as_stream(bool streaming_request, std::string_view content_type) {
  const std::string media = media_type(content_type);
  // As the official openai SDK reads a reply to a streaming request: as a stream whatever its
  // Content-Type (none, text/plain, a vendor type), except JSON: a whole response or an error.
  if (streaming_request) return media != "application/json";
  return media == "text/event-stream";
}

RequestTracker::RequestTracker(analysis::RequestRecord record, TimePoint run_start, const TrackerOptions& options)
    : record_(std::move(record)), run_start_(run_start), options_(options), decoder_(options.api, options.capture_text) {}

std::optional<TimePoint> RequestTracker::deadline() const {
  if (complete_ || !record_.t_send) return std::nullopt;
  if (done_seen_) return run_start_ + done_at_ + kBodyEndAfterDone;
  if (!record_.t_first) {
    if (options_.first_token_timeout.count() > 0) return run_start_ + *record_.t_send + options_.first_token_timeout;
    return std::nullopt;
  }
  if (options_.inter_token_timeout.count() > 0 && options_.stream && record_.t_last && !done_seen_) {
    return run_start_ + *record_.t_last + options_.inter_token_timeout;
  }
  return std::nullopt;
}

TransportError RequestTracker::on_deadline(TimePoint now) {
  const auto secs = [](Nanos d) { return std::chrono::duration<double>(d).count(); };
  if (done_seen_) {  // harmless (on_complete): the stream had finished
    return TransportError{ErrorClass::kIncomplete, "the response body did not end after data: [DONE]"};
  }
  if (!record_.t_first) {
    return TransportError{ErrorClass::kFirstTokenTimeout,
                          fmt::format("no generated token {:.3f} s after the request was sent (--first-token-timeout "
                                      "{} s)",
                                      secs(now - run_start_ - record_.t_send.value_or(Nanos(0))),
                                      secs(options_.first_token_timeout))};
  }
  return TransportError{ErrorClass::kInterTokenTimeout,
                        fmt::format("no generated token for {:.3f} s after output event {} (--inter-token-timeout {} s)",
                                    secs(now - run_start_ - record_.t_last.value_or(Nanos(0))), record_.output_events,
                                    secs(options_.inter_token_timeout))};
}

void RequestTracker::fail(ErrorClass cls, std::string message) {
  if (record_.error != ErrorClass::kNone) return;  // the first error is the cause
  record_.error = cls;
  record_.error_message = std::move(message);
}

void RequestTracker::on_sent(TimePoint t) { record_.t_send = offset(t); }

void RequestTracker::on_header_field(std::string_view name, std::string_view value) {
  if (name == "Retry-After") retry_after_.assign(value.substr(0, 64));
  if (name == "Location") location_.assign(value.substr(0, 512));
  if (name == "Content-Encoding") content_encoding_.assign(value.substr(0, 64));
}

void RequestTracker::on_headers(TimePoint t, int status, std::string_view content_type) {
  record_.t_headers = offset(t);
  record_.http_status = status;
  content_type_.assign(content_type.substr(0, 128));
  sse_ = reads_as_stream(options_.stream, content_type);
}

std::string RequestTracker::received() const {
  return fmt::format("Content-Type: {}; the body began: '{}'", content_type_.empty() ? "(none)" : body_excerpt(content_type_, 128),
                     body_excerpt(head_, kKeptHead));
}

bool RequestTracker::on_body(TimePoint t, std::string_view bytes) {
  if (head_.size() < kKeptHead) head_.append(bytes.substr(0, kKeptHead - head_.size()));
  const bool success_status = record_.http_status >= 200 && record_.http_status < 300;
  if (success_status && !content_encoding_.empty() && content_encoding_ != "identity") {
    // llmload asks for no compression (no Accept-Encoding); a proxy that compresses anyway
    // gives bytes no parser can read.
    fail(ErrorClass::kProtocol,
         fmt::format("the response is compressed (Content-Encoding: {}) though llmload asked for none: turn "
                     "compression off for this route (a proxy or gateway in front of the server?)",
                     content_encoding_));
    return false;
  }
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
  return record_.error != ErrorClass::kOutputOverflow;  // stop reading a stream that does not end
}

void RequestTracker::on_event(TimePoint t, SseEvent&& ev) {
  if (done_seen_ || record_.error != ErrorClass::kNone) return;
  StreamUpdate u = decoder_.decode(ev);
  if (options_.capture_text) {
    if (!u.tool_calls.empty()) add_tool_call_pieces(std::move(u.tool_calls));
    if (!u.response_id.empty()) response_id_ = std::move(u.response_id);
  }
  if (u.usage) usage_ = u.usage;
  if (u.finish_reason) record_.finish_reason = u.finish_reason;
  if (u.server_timing) {
    record_.server_queue_s = u.server_timing->queue_s;
    record_.server_first_token_s = u.server_timing->first_token_s;
    record_.server_last_token_s = u.server_timing->last_token_s;
  }
  switch (u.kind) {
    case StreamUpdate::Kind::kOutput:
      if (!record_.t_first) record_.t_first = offset(t);
      if (u.answer && !record_.t_first_output) record_.t_first_output = offset(t);
      if (!u.answer) reasoning_event_tokens_ += u.tokens;
      record_.t_last = offset(t);
      ++record_.output_events;
      if (record_.output_events > max_output_events()) {
        // A stream that does not end (a server ignoring max_tokens) would grow without bound.
        fail(ErrorClass::kOutputOverflow,
             fmt::format("the server sent over {} output events for max_tokens {}: cut (a stream that does not end?)",
                         max_output_events(), record_.requested_output_tokens));
        break;
      }
      chunks_.push_back({offset(t), u.tokens});
      if (options_.capture_text) {
        output_text_ += u.text;
        reasoning_text_ += u.reasoning_text;
        text_ends_.push_back({output_text_.size(), reasoning_text_.size()});
        add_server_tokens(std::move(u.server_tokens));
      }
      break;
    case StreamUpdate::Kind::kDone:
      done_seen_ = true;
      done_at_ = offset(t);
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

// A streamed call's pieces share an index: the first piece of an index starts a call (its id and
// name), later ones add argument text; at most kMaxToolCalls calls are kept.
void RequestTracker::add_tool_call_pieces(std::vector<ToolCallPiece>&& pieces) {
  constexpr std::size_t kMaxToolCalls = 128;
  for (auto& p : pieces) {
    std::size_t k = 0;
    while (k < tool_call_index_.size() && tool_call_index_[k] != p.index) ++k;
    if (k == tool_call_index_.size()) {
      if (k >= kMaxToolCalls) continue;  // structural events are not bounded by max_output_events
      tool_call_index_.push_back(p.index);
      tool_calls_.emplace_back();
    }
    ToolCall& call = tool_calls_[k];
    if (call.id.empty()) call.id = std::move(p.id);
    if (call.name.empty()) call.name = std::move(p.name);
    call.arguments += p.arguments;
  }
}

// Every output event must carry the server's tokens, all of one kind; otherwise none are kept
// (a partial list would misplace the first divergence).
void RequestTracker::add_server_tokens(ServerTokens&& t) {
  if (server_tokens_broken_) return;
  const bool first = record_.output_events == 1;
  if (t.from == ServerTokens::From::kNone || (!first && t.from != server_tokens_.from)) {
    server_tokens_broken_ = true;
    server_tokens_ = ServerTokens{};
    return;
  }
  server_tokens_.from = t.from;
  server_tokens_.tokens.insert(server_tokens_.tokens.end(), std::make_move_iterator(t.tokens.begin()),
                               std::make_move_iterator(t.tokens.end()));
}

void RequestTracker::on_complete(TimePoint t, const TransportError& error) {
  if (complete_) return;
  complete_ = true;
  record_.t_done = offset(t);
  const bool success_status = record_.http_status >= 200 && record_.http_status < 300;
  if (!error.ok()) {
    // A transport error after the server already finished the stream (a reset, a body left
    // open and closed by us or timing out) is harmless: the response was complete.
    if (!done_seen_) fail(error.cls, error.message);
  } else if (record_.http_status != 0 && !success_status) {
    const bool redirect = record_.http_status >= 300 && record_.http_status < 400;
    fail(ErrorClass::kHttpStatus,
         redirect ? fmt::format("HTTP {}: the server redirects to '{}' and llmload does not follow redirects: give "
                                "that address as --base-url",
                                record_.http_status, location_.empty() ? std::string("(no Location)") : location_)
                  : fmt::format("HTTP {}{}: {}{}", record_.http_status,
                                retry_after_.empty() ? std::string() : " (Retry-After: " + retry_after_ + ")",
                                error_message_from_body(body_),
                                wrong_route_hint(record_.http_status, options_.api, error_message_from_body(body_))));
  } else if (options_.stream) {
    if (!sse_) {
      fail(ErrorClass::kProtocol,
           fmt::format("the server answered a streaming request with a whole JSON response, not a stream ({}): if "
                       "this route does not stream, run with --no-stream",
                       received()));
    } else if (!done_seen_ && record_.error == ErrorClass::kNone && !(record_.finish_reason && record_.t_first)) {
      // A stream that ends cleanly after its finish_reason is whole, as the SDK reads it; one that
      // ends before is cut short.
      fail(ErrorClass::kIncomplete,
           fmt::format("stream ended without 'data: [DONE]' or a finish_reason after {} events{}{}", parser_.events(),
                       parser_.has_partial_event() ? " (last event truncated)" : "",
                       parser_.events() == 0 ? " (" + received() + ")" : std::string()));
    }
  } else {
    WholeResponse w = decode_whole_response(body_, options_.api);
    if (!w.ok) {
      fail(ErrorClass::kProtocol, w.message);
    } else {
      // Non-streamed: the output arrives all at once, so TTFT equals E2E.
      usage_ = w.usage;
      record_.finish_reason = w.finish_reason;
      if (w.server_timing) {
        record_.server_queue_s = w.server_timing->queue_s;
        record_.server_first_token_s = w.server_timing->first_token_s;
        record_.server_last_token_s = w.server_timing->last_token_s;
      }
      if (options_.capture_text) {
        output_text_ = std::move(w.text);
        reasoning_text_ = std::move(w.reasoning_text);
        if (w.has_output) text_ends_.push_back({output_text_.size(), reasoning_text_.size()});
        server_tokens_ = std::move(w.server_tokens);
        tool_calls_ = std::move(w.tool_calls);
        response_id_ = std::move(w.response_id);
      }
      if (w.has_output) {
        record_.t_first = offset(t);
        if (w.has_answer) record_.t_first_output = offset(t);
        if (!w.reasoning_text.empty()) whole_reasoning_ = true;
        record_.t_last = offset(t);
        record_.output_events = 1;
        chunks_.push_back({offset(t), 1});
      }
    }
  }
  // Reasoning tokens: the server's count when it gives one, else those of reasoning-only events
  // (a tokenizer recounts them from the text: RunController::count_with_tokenizer).
  if (usage_ && usage_->reasoning_tokens && *usage_->reasoning_tokens > 0) {
    record_.reasoning_tokens = *usage_->reasoning_tokens;
    record_.reasoning_tokens_source = "usage";
  } else if (reasoning_event_tokens_ > 0 || whole_reasoning_) {
    record_.reasoning_tokens = reasoning_event_tokens_;
    record_.reasoning_tokens_source = "events";
  }
  if (usage_) {
    record_.input_tokens = usage_->prompt_tokens;
    record_.output_tokens = usage_->completion_tokens;
    record_.cached_tokens = usage_->cached_tokens;
    record_.tokens_from_usage = true;
    if (!options_.stream && !chunks_.empty()) chunks_.back().tokens = std::max<std::int64_t>(1, usage_->completion_tokens);
  } else {
    record_.input_tokens = record_.requested_input_tokens;
    std::int64_t n = 0;
    for (const auto& c : chunks_) n += c.tokens;
    record_.output_tokens = n;
  }
  if (record_.error == ErrorClass::kNone && !record_.t_first) {
    fail(ErrorClass::kNoOutput, "the response completed without any generated output");
  }
  // A success with fewer tokens than asked for (EOS or a stop despite ignore_eos, or a server
  // that caps max_tokens): flagged, since it shortens E2E and changes TPOT's meaning. Counted
  // from events (no usage), a stream the server ended for "length" reached max_tokens: its short
  // count is the estimate's, not an early end (several tokens per event).
  const bool estimated_at_length = !usage_ && record_.finish_reason == "length";
  record_.ended_early = record_.error == ErrorClass::kNone && record_.requested_output_tokens > 0 &&
                        record_.output_tokens < record_.requested_output_tokens && !estimated_at_length;
}

std::vector<analysis::ChunkArrival> RequestTracker::chunks_counted(
    const std::function<std::size_t(std::string_view)>& count) const {
  std::vector<analysis::ChunkArrival> out = chunks_;
  if (text_ends_.size() != out.size()) return out;  // no captured text (or a cut stream): as is
  TextEnd from{0, 0};
  for (std::size_t k = 0; k < out.size(); ++k) {
    const TextEnd to = text_ends_[k];
    const std::string_view text = std::string_view(output_text_).substr(from.text, to.text - from.text);
    const std::string_view reasoning =
        std::string_view(reasoning_text_).substr(from.reasoning, to.reasoning - from.reasoning);
    out[k].tokens = std::max<std::int64_t>(1, static_cast<std::int64_t>(count(text) + count(reasoning)));
    from = to;
  }
  return out;
}

}  // namespace llmload
