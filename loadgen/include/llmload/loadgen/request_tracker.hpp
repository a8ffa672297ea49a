#pragma once
// The recorder for one request: turns transport callbacks (bytes with arrival times) into the
// request's RequestRecord and its list of output events.

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/analysis/request_record.hpp"
#include "llmload/loadgen/sse_parser.hpp"
#include "llmload/loadgen/stream_decoder.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload {

struct TrackerOptions {
  ApiKind api = ApiKind::kCompletions;
  bool stream = true;
  bool capture_text = false;       // keep the generated text (multi-turn sessions)
  Nanos first_token_timeout{0};    // 0: none; else a request with no output this long after its send fails
  Nanos inter_token_timeout{0};    // 0: none; else a gap this long between output events fails
};

/// Whether a response body is read as an SSE stream (docs/wire.md): for a streaming request,
/// whatever its Content-Type (absent, text/plain, a vendor type, any case) except
/// application/json, as the official openai SDK reads it; for a non-streaming request, only
/// text/event-stream.
bool reads_as_stream(bool streaming_request, std::string_view content_type);

class RequestTracker final : public ResponseObserver {
 public:
  /// `run_start` is the origin of the record's time offsets.
  RequestTracker(analysis::RequestRecord record, TimePoint run_start, const TrackerOptions& options);
  RequestTracker(analysis::RequestRecord record, TimePoint run_start, ApiKind api, bool stream)
      : RequestTracker(std::move(record), run_start, TrackerOptions{api, stream, false, Nanos(0), Nanos(0)}) {}

  void on_sent(TimePoint t) override;
  void on_header_field(std::string_view name, std::string_view value) override;
  void on_headers(TimePoint t, int status, std::string_view content_type) override;
  bool on_body(TimePoint t, std::string_view bytes) override;
  void on_complete(TimePoint t, const TransportError& error) override;
  std::optional<TimePoint> deadline() const override;
  TransportError on_deadline(TimePoint now) override;

  /// The most output events a stream may send: 4 x max_tokens + 1,024 (servers may split a token
  /// or send a few extra events); past it the stream is cut as output_overflow, so its memory
  /// (an arrival time per event) stays bounded whatever the server does.
  std::int64_t max_output_events() const { return 4 * std::max<std::int64_t>(record_.requested_output_tokens, 1) + 1024; }

  bool complete() const { return complete_; }
  /// The stream's "data: [DONE]" arrived: the response is whole, and a transport error after it
  /// (a body left open, a reset, our own close) does not fail the request.
  bool stream_finished() const { return done_seen_; }
  const analysis::RequestRecord& record() const { return record_; }
  const std::vector<analysis::ChunkArrival>& chunks() const { return chunks_; }
  /// The generated text (only with capture_text): the answer, which a session's next turn resends.
  const std::string& output_text() const { return output_text_; }
  /// The server's own tokens of output_text (only with capture_text, and only when every output
  /// event carried them, all of one kind): from == kNone otherwise.
  const ServerTokens& server_tokens() const { return server_tokens_; }
  /// The generated reasoning text (only with capture_text): counted, never resent.
  const std::string& reasoning_text() const { return reasoning_text_; }
  /// The tool calls returned, in the order they began (only with capture_text): a streamed call's
  /// pieces joined by their index.
  const std::vector<ToolCall>& tool_calls() const { return tool_calls_; }
  /// Responses API: the response's id (only with capture_text; "" when none came).
  const std::string& response_id() const { return response_id_; }
  /// The output events with each one's tokens counted from its own text by `count` (only with
  /// capture_text; an event with text counts at least 1): the weights of a token-weighted ITL
  /// when the server sent no per-event usage. Without captured text, chunks() as they are.
  std::vector<analysis::ChunkArrival> chunks_counted(const std::function<std::size_t(std::string_view)>& count) const;

 private:
  analysis::Nanos offset(TimePoint t) const { return t - run_start_; }
  std::string received() const;  // the Content-Type and the body's first bytes, for messages
  void on_event(TimePoint t, SseEvent&& ev);
  void fail(analysis::ErrorClass cls, std::string message);
  void add_server_tokens(ServerTokens&& t);
  void add_tool_call_pieces(std::vector<ToolCallPiece>&& pieces);

  analysis::RequestRecord record_;
  TimePoint run_start_;
  TrackerOptions options_;
  bool sse_ = false;         // the body is read as a stream (stream_reply_rule)
  std::string content_type_;  // as received (capped), for messages
  std::string head_;          // the body's first bytes, for messages
  std::string location_;          // a redirect's target
  std::string content_encoding_;  // a compressed body's coding
  bool done_seen_ = false;   // "data: [DONE]" arrived
  Nanos done_at_{0};         // ... at this offset from the run's start
  bool complete_ = false;
  SseParser parser_;
  OpenAiStreamDecoder decoder_;
  std::optional<Usage> usage_;
  std::string body_;  // non-streamed or error bodies (capped)
  std::string retry_after_;  // Retry-After of an error response (429/503)
  std::vector<analysis::ChunkArrival> chunks_;
  std::string output_text_;
  std::string reasoning_text_;
  std::int64_t reasoning_event_tokens_ = 0;  // tokens of output events that were reasoning only
  bool whole_reasoning_ = false;             // a non-streamed response carried reasoning text
  ServerTokens server_tokens_;
  bool server_tokens_broken_ = false;
  std::vector<ToolCall> tool_calls_;
  std::vector<std::int64_t> tool_call_index_;  // each call's index in the stream (its pieces')
  std::string response_id_;
  // Where each output event's text ends in output_text_ and reasoning_text_ (with capture_text).
  struct TextEnd {
    std::size_t text;
    std::size_t reasoning;
  };
  std::vector<TextEnd> text_ends_;
};

}  // namespace llmload
