#pragma once
// Fault injection for testing clients: what can go wrong with a request, how a fault is written
// (the same spec grammar for the --fault flag and the X-Llmload-Fault header), and the
// deterministic choice of a request's fault. Pure logic: connection.cpp applies the fault.
//
// Spec grammar, KIND[=VALUE][@TOKEN] (kind names are case-insensitive):
//   error[=STATUS]            answer STATUS (400..599, default 500) instead of the stream
//   reset[@TOKEN]             reset the connection (RST) just before token TOKEN is written
//   stall=DURATION[@TOKEN]    pause DURATION just before token TOKEN, then go on
//   malformed[@TOKEN]         write one malformed SSE event (invalid JSON in a data: line) just
//                             before token TOKEN, then go on with the stream
//   slow-first-byte=DURATION  delay the response head (and so everything) by DURATION
//   stream-error[=STATUS][@TOKEN]  a stream: send the error in the stream just before token TOKEN
//                             (HTTP stays 200: chat/completions `data: {"error":..}` + [DONE],
//                             Responses and Messages `event: error`) and end it; not streamed:
//                             answer STATUS (400..599, default 500) like error
//   invalid-output[=json|schema]  the request's structured output (tool call arguments, a JSON
//                             answer: structured_output.hpp) is made invalid on purpose: json
//                             (default) not parseable, schema parseable but against the schema
//                             (invalid_output.hpp); a request without one is unaffected
//   none                      no fault (header only: exempts the request from --fault rates)
// TOKEN counts from 0 (0 = before the first token, the default). DURATION needs a unit:
// ns, us, ms, s, m or h (common/duration.hpp). Flag form: RATE:SPEC, e.g. 0.05:error=503.

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmload::server {

enum class FaultKind { kNone, kError, kReset, kStall, kMalformed, kSlowFirstByte, kStreamError, kInvalidOutput };

/// How invalid-output breaks the output: not JSON, or JSON that the schema rejects.
enum class InvalidOutputMode { kJson, kSchema };

/// The spec name of a kind: "none", "error", "reset", "stall", "malformed", "slow-first-byte",
/// "stream-error", "invalid-output".
std::string_view fault_kind_name(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::kNone;
  int status = 500;                      ///< kError, kStreamError: the error's status
  std::int64_t at_token = 0;             ///< kReset/kStall/kMalformed/kStreamError: just before this token
  std::chrono::nanoseconds duration{0};  ///< kStall: pause; kSlowFirstByte: delay of the head
  InvalidOutputMode invalid_output = InvalidOutputMode::kJson;  ///< kInvalidOutput

  friend bool operator==(const Fault&, const Fault&) = default;
};

/// A fault with the probability of firing on each request; rate is in (0, 1].
struct FaultRule {
  Fault fault;
  double rate = 0;
};

/// A spec or flag value that does not follow the grammar. The message names the bad part and
/// shows the grammar.
class FaultSpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Parses KIND[=VALUE][@TOKEN] (surrounding spaces and tabs ignored). Throws FaultSpecError.
Fault parse_fault_spec(std::string_view spec);

/// Parses the --fault flag value RATE:SPEC, RATE a decimal in (0, 1]. `none` is refused here.
/// Throws FaultSpecError.
FaultRule parse_fault_rule(std::string_view flag_value);

/// The spec that parses back to `fault` (for logs), e.g. "stall=500ms@4".
std::string format_fault_spec(const Fault& fault);

/// Chooses each request's fault. Immutable after construction: choose() is safe to call from
/// any number of threads at once.
class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(std::vector<FaultRule> rules, std::uint64_t seed);

  struct Choice {
    Fault fault;                              ///< kind kNone: no fault
    std::optional<std::string> header_error;  ///< set: the header was malformed (answer 400)
  };

  /// The fault of request `sequence`. A present `header` (the X-Llmload-Fault value) decides
  /// alone: a valid spec is the fault (`none` included), an invalid one gives header_error and
  /// no fault. Without a header, the rules are tried in order and the first that fires is the
  /// fault; rule i fires when the i-th uniform draw of the stream (seed, sequence) is below its
  /// rate. So the same (rules, seed, sequence) always gives the same choice, and the choice does
  /// not depend on which other requests came first.
  Choice choose(std::uint64_t sequence, std::optional<std::string_view> header) const;

  /// True without rules (headers still work).
  bool empty() const { return rules_.empty(); }
  const std::vector<FaultRule>& rules() const { return rules_; }

 private:
  std::vector<FaultRule> rules_;
  std::uint64_t seed_ = 0;
};

}  // namespace llmload::server
