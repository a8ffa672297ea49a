#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

std::string_view to_string(Grade g) {
  switch (g) {
    case Grade::kNone: return "none";
    case Grade::kCorrect: return "correct";
    case Grade::kIncorrect: return "incorrect";
    case Grade::kUnparsed: return "unparsed";
  }
  return "none";
}

std::string_view to_string(ErrorClass e) {
  switch (e) {
    case ErrorClass::kNone: return "none";
    case ErrorClass::kConnect: return "connect";
    case ErrorClass::kHttpStatus: return "http_status";
    case ErrorClass::kStreamError: return "stream_error";
    case ErrorClass::kProtocol: return "protocol";
    case ErrorClass::kTimeout: return "timeout";
    case ErrorClass::kIdleTimeout: return "idle_timeout";
    case ErrorClass::kIncomplete: return "incomplete";
    case ErrorClass::kNoOutput: return "no_output";
    case ErrorClass::kCanceled: return "canceled";
    case ErrorClass::kConnectTimeout: return "connect_timeout";
    case ErrorClass::kFirstTokenTimeout: return "first_token_timeout";
    case ErrorClass::kInterTokenTimeout: return "inter_token_timeout";
    case ErrorClass::kStoppedEarly: return "stopped_early";
    case ErrorClass::kOutputOverflow: return "output_overflow";
  }
  return "unknown";
}

std::optional<Nanos> RequestRecord::ttft() const {
  if (!t_first || !t_send) return std::nullopt;
  return *t_first - *t_send;
}

std::optional<Nanos> RequestRecord::e2e() const {
  if (!t_last || !t_send) return std::nullopt;
  return *t_last - *t_send;
}

std::optional<Nanos> RequestRecord::tpot() const {
  // All output in one event (a non-streaming response): no time between tokens was observed.
  // All output in one event (a non-streaming response), or at one instant (a proxy that buffered
  // the stream): no time between tokens was observed.
  if (output_tokens < 2 || !t_first || !t_last || output_events == 1 || *t_last <= *t_first) return std::nullopt;
  return (*t_last - *t_first) / (output_tokens - 1);
}

std::optional<Nanos> RequestRecord::ttft_rt() const {
  if (!t_first) return std::nullopt;
  return *t_first - t_intended;
}

std::optional<Nanos> RequestRecord::e2e_rt() const {
  if (!t_last) return std::nullopt;
  return *t_last - t_intended;
}

std::optional<Nanos> RequestRecord::schedule_lag() const {
  if (!t_send) return std::nullopt;
  return *t_send - t_intended;
}

std::optional<Nanos> RequestRecord::ttfo() const {
  if (!t_first_output || !t_send) return std::nullopt;
  return *t_first_output - *t_send;
}

std::optional<Nanos> RequestRecord::ttfo_rt() const {
  if (!t_first_output) return std::nullopt;
  return *t_first_output - t_intended;
}

bool RequestRecord::reasoning_first() const {
  if (!t_first) return false;
  // Without t_first_output, only a record that says it carried reasoning is one of reasoning only
  // (a record of a client that does not fill t_first_output, or from before it, says nothing).
  if (!t_first_output) return !reasoning_tokens_source.empty();
  return *t_first_output != *t_first;
}

std::optional<Nanos> RequestRecord::reasoning_duration() const {
  if (!t_first || !t_first_output || *t_first_output <= *t_first) return std::nullopt;
  return *t_first_output - *t_first;
}

std::optional<Nanos> RequestRecord::answer_tpot() const {
  const std::int64_t answer = output_tokens - reasoning_tokens;
  if (answer < 2 || !t_first_output || !t_last || *t_last <= *t_first_output || output_events == 1) return std::nullopt;
  return (*t_last - *t_first_output) / (answer - 1);
}

}  // namespace llmload::analysis
