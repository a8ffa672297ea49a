#pragma once
// --trace-http N: the first N exchanges of a run, request and response, headers and body as
// they went over the wire, with the time each piece was received (docs/wire.md, "See the
// bytes"). Secrets are redacted by the run's one rule (redact.hpp) before anything is written.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llmload/loadgen/background_appender.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/redact.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload {

/// At most this many body bytes of one exchange are kept (the rest is counted).
inline constexpr std::size_t kMaxTracedBody = 1 << 20;

/// One exchange as it went: what was sent, the response head as received, each body read with
/// its receive time, and how it ended. Times are seconds from the run's start.
class HttpExchangeTrace {
 public:
  HttpExchangeTrace(std::uint64_t index, const HttpRequest& request, TimePoint run_start);
  void sent(TimePoint t);
  void head(std::string_view raw_head);  // the response's status line and header fields
  void headers(TimePoint t, int status, std::string_view content_type);
  void body(TimePoint t, std::string_view bytes);
  void complete(TimePoint t, const TransportError& error);
  /// The exchange as one JSON object, every text redacted with `secrets` (and the Authorization
  /// field's value replaced whole).
  nlohmann::json to_json(const Secrets& secrets) const;

 private:
  struct Piece {
    double t_s;
    std::string bytes;
  };
  double at(TimePoint t) const;
  std::uint64_t index_;
  TimePoint run_start_;
  HttpRequest request_;
  std::optional<double> sent_s_, headers_s_, complete_s_;
  int status_ = 0;
  std::string content_type_;
  std::string head_;
  std::vector<Piece> pieces_;
  std::size_t body_bytes_ = 0;  // all of it, kept or not
  std::size_t kept_bytes_ = 0;
  std::string error_;
};

/// The trace file (http-trace.jsonl, one exchange per line): takes the first `max_exchanges`
/// requests of the run. A file that cannot be written is a warning, never a failed run. Lines are
/// written from a thread of their own (BackgroundAppender), so the event loop never waits for
/// the disk; close() writes the rest and says whether every line reached the file.
class HttpTraceLog {
 public:
  HttpTraceLog(std::filesystem::path path, std::size_t max_exchanges, Secrets secrets);
  ~HttpTraceLog();
  HttpTraceLog(const HttpTraceLog&) = delete;
  HttpTraceLog& operator=(const HttpTraceLog&) = delete;
  /// Whether the next request is traced (counts it when it is).
  bool take();
  void write(const HttpExchangeTrace& exchange);
  /// Writes what is queued and closes the file (idempotent; the destructor does it too).
  void close();
  /// Lines handed to the file so far (written once close() reports no error).
  std::size_t written() const { return written_; }
  /// Why the file is incomplete: set when it could not be opened or a write failed (a failed
  /// write may only be known after close()).
  const std::optional<std::string>& error() const { return error_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::size_t max_;
  Secrets secrets_;
  std::size_t taken_ = 0;
  std::size_t written_ = 0;
  std::unique_ptr<BackgroundAppender> file_;  // opened at the first line
  std::optional<std::string> error_;
};

}  // namespace llmload
