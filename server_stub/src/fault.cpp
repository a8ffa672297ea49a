#include "llmload/server/fault.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

#include "llmload/common/duration.hpp"
#include "llmload/server/rng.hpp"

namespace llmload::server {

namespace {

constexpr std::string_view kGrammar =
    "expected KIND[=VALUE][@TOKEN], one of: error[=STATUS] (400..599, default 500), "
    "reset[@TOKEN], stall=DURATION[@TOKEN], malformed[@TOKEN], slow-first-byte=DURATION, "
    "stream-error[=STATUS][@TOKEN], invalid-output[=json|schema], none; "
    "TOKEN counts from 0 (default 0), DURATION has a unit (e.g. 500ms, 2s)";

// Fault draws use their own streams, so that they are independent of the jitter and ids drawn
// from Rng::for_stream(seed, sequence) elsewhere in the server.
constexpr std::uint64_t kFaultStreamSalt = 0x6661756C74ULL;  // "fault"

struct KindInfo {
  std::string_view name;
  FaultKind kind;
};
constexpr std::array<KindInfo, 8> kKinds = {{{"none", FaultKind::kNone},
                                             {"invalid-output", FaultKind::kInvalidOutput},
                                             {"stream-error", FaultKind::kStreamError},
                                             {"error", FaultKind::kError},
                                             {"reset", FaultKind::kReset},
                                             {"stall", FaultKind::kStall},
                                             {"malformed", FaultKind::kMalformed},
                                             {"slow-first-byte", FaultKind::kSlowFirstByte}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

[[noreturn]] void fail(std::string_view spec, const std::string& problem) {
  throw FaultSpecError("bad fault spec '" + std::string(spec) + "': " + problem + "; " +
                       std::string(kGrammar));
}

// A whole non-negative decimal integer, or nullopt.
std::optional<std::int64_t> parse_integer(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string format_duration_exact(std::chrono::nanoseconds d) {
  const auto n = d.count();
  if (n % 1'000'000'000 == 0) return std::to_string(n / 1'000'000'000) + "s";
  if (n % 1'000'000 == 0) return std::to_string(n / 1'000'000) + "ms";
  if (n % 1'000 == 0) return std::to_string(n / 1'000) + "us";
  return std::to_string(n) + "ns";
}

}  // namespace

std::string_view fault_kind_name(FaultKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

Fault parse_fault_spec(std::string_view spec_in) {
  const std::string_view spec = trim(spec_in);
  if (spec.empty()) fail(spec_in, "it is empty");

  // KIND, then optional =VALUE, then optional @TOKEN.
  std::string_view rest = spec;
  std::optional<std::string_view> token_text;
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    token_text = rest.substr(at + 1);
    rest = rest.substr(0, at);
  }
  std::optional<std::string_view> value_text;
  if (const auto eq = rest.find('='); eq != std::string_view::npos) {
    value_text = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  const std::string_view kind_text = rest;

  const KindInfo* info = nullptr;
  for (const auto& k : kKinds) {
    if (iequals(kind_text, k.name)) info = &k;
  }
  if (info == nullptr) {
    fail(spec, kind_text.empty() ? std::string("the kind is missing")
                                 : "unknown kind '" + std::string(kind_text) + "'");
  }
  const std::string kind_name(info->name);

  Fault fault;
  fault.kind = info->kind;

  // @TOKEN: only for faults that happen at a token.
  const bool takes_token = fault.kind == FaultKind::kReset || fault.kind == FaultKind::kStall ||
                           fault.kind == FaultKind::kMalformed || fault.kind == FaultKind::kStreamError;
  if (token_text) {
    if (!takes_token) fail(spec, kind_name + " takes no @TOKEN");
    const auto token = parse_integer(*token_text);
    if (!token) {
      fail(spec, "@TOKEN '" + std::string(*token_text) +
                     "' is not a non-negative integer (token index, 0 = before the first)");
    }
    fault.at_token = *token;
  }

  // =VALUE: a status for error, a duration for stall and slow-first-byte, nothing else.
  switch (fault.kind) {
    case FaultKind::kError:
    case FaultKind::kStreamError:
      if (value_text) {
        const auto status = parse_integer(*value_text);
        if (!status || *status < 400 || *status > 599) {
          fail(spec, "status '" + std::string(*value_text) + "' is not an integer in 400..599");
        }
        fault.status = static_cast<int>(*status);
      }
      break;
    case FaultKind::kStall:
    case FaultKind::kSlowFirstByte: {
      if (!value_text || value_text->empty()) {
        fail(spec, kind_name + " needs a duration, e.g. " + kind_name + "=500ms");
      }
      try {
        fault.duration = parse_duration(*value_text, "");
      } catch (const DurationParseError&) {
        fail(spec, "duration '" + std::string(*value_text) +
                       "' is not a number with a unit (ns, us, ms, s, m, h)");
      }
      if (fault.duration <= std::chrono::nanoseconds::zero()) {
        fail(spec, kind_name + " duration must be greater than 0");
      }
      break;
    }
    case FaultKind::kInvalidOutput:
      if (value_text) {
        if (iequals(*value_text, "json")) {
          fault.invalid_output = InvalidOutputMode::kJson;
        } else if (iequals(*value_text, "schema")) {
          fault.invalid_output = InvalidOutputMode::kSchema;
        } else {
          fail(spec, "invalid-output takes =json or =schema, not '" + std::string(*value_text) + "'");
        }
      }
      break;
    case FaultKind::kNone:
    case FaultKind::kReset:
    case FaultKind::kMalformed:
      if (value_text) fail(spec, kind_name + " takes no =VALUE");
      break;
  }
  return fault;
}

FaultRule parse_fault_rule(std::string_view flag_value) {
  const std::string_view text = trim(flag_value);
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw FaultSpecError("bad --fault '" + std::string(flag_value) +
                         "': expected RATE:SPEC, e.g. 0.05:error=503 or 0.01:stall=500ms@4");
  }
  const std::string_view rate_text = trim(text.substr(0, colon));
  double rate = 0;
  const auto [ptr, ec] =
      std::from_chars(rate_text.data(), rate_text.data() + rate_text.size(), rate);
  if (rate_text.empty() || ec != std::errc() || ptr != rate_text.data() + rate_text.size() ||
      !std::isfinite(rate)) {
    throw FaultSpecError("bad --fault '" + std::string(flag_value) + "': rate '" +
                         std::string(rate_text) + "' is not a number; expected RATE:SPEC with "
                         "RATE in (0, 1], e.g. 0.05:error=503");
  }
  if (!(rate > 0.0 && rate <= 1.0)) {
    throw FaultSpecError("bad --fault '" + std::string(flag_value) + "': rate " +
                         std::string(rate_text) +
                         " is outside (0, 1]; it is the fraction of requests that get the fault");
  }
  FaultRule rule;
  rule.rate = rate;
  try {
    rule.fault = parse_fault_spec(text.substr(colon + 1));
  } catch (const FaultSpecError& e) {
    throw FaultSpecError("bad --fault '" + std::string(flag_value) + "': " + e.what());
  }
  if (rule.fault.kind == FaultKind::kNone) {
    throw FaultSpecError("bad --fault '" + std::string(flag_value) +
                         "': 'none' is only for the X-Llmload-Fault header; a rule needs a fault");
  }
  return rule;
}

std::string format_fault_spec(const Fault& fault) {
  std::string out(fault_kind_name(fault.kind));
  switch (fault.kind) {
    case FaultKind::kError:
    case FaultKind::kStreamError: out += "=" + std::to_string(fault.status); break;
    case FaultKind::kStall: out += "=" + format_duration_exact(fault.duration); break;
    case FaultKind::kSlowFirstByte: out += "=" + format_duration_exact(fault.duration); break;
    case FaultKind::kInvalidOutput:
      out += fault.invalid_output == InvalidOutputMode::kSchema ? "=schema" : "=json";
      break;
    case FaultKind::kNone:
    case FaultKind::kReset:
    case FaultKind::kMalformed: break;
  }
  if (fault.kind == FaultKind::kReset || fault.kind == FaultKind::kStall ||
      fault.kind == FaultKind::kMalformed || fault.kind == FaultKind::kStreamError) {
    out += "@" + std::to_string(fault.at_token);
  }
  return out;
}

FaultInjector::FaultInjector(std::vector<FaultRule> rules, std::uint64_t seed)
    : rules_(std::move(rules)), seed_(seed) {}

FaultInjector::Choice FaultInjector::choose(std::uint64_t sequence,
                                            std::optional<std::string_view> header) const {
  Choice choice;
  if (header) {
    try {
      choice.fault = parse_fault_spec(*header);
    } catch (const FaultSpecError& e) {
      choice.header_error = std::string("X-Llmload-Fault: ") + e.what();
    }
    return choice;
  }
  if (rules_.empty()) return choice;
  Rng rng = Rng::for_stream(seed_ ^ kFaultStreamSalt, sequence);
  for (const auto& rule : rules_) {
    if (rng.uniform01() < rule.rate) {
      choice.fault = rule.fault;
      return choice;
    }
  }
  return choice;
}

}  // namespace llmload::server
