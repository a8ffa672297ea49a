// Fault specs: the grammar (every kind, defaults, bad inputs and their messages), the --fault
// rule form, and the injector's deterministic, rate-respecting choice.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "llmload/server/fault.hpp"

namespace llmload::server {
namespace {

using namespace std::chrono_literals;

// The message of the FaultSpecError thrown by `f`, or a failure if none is thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const FaultSpecError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no FaultSpecError thrown";
  return {};
}

std::string spec_error(std::string_view spec) {
  return error_of([&] { parse_fault_spec(spec); });
}
std::string rule_error(std::string_view flag) {
  return error_of([&] { parse_fault_rule(flag); });
}

TEST(FaultSpec, ErrorDefaultsTo500AndTakesAStatus) {
  const Fault f = parse_fault_spec("error");
  EXPECT_EQ(f.kind, FaultKind::kError);
  EXPECT_EQ(f.status, 500);
  EXPECT_EQ(parse_fault_spec("error=503").status, 503);
  EXPECT_EQ(parse_fault_spec("error=400").status, 400);
  EXPECT_EQ(parse_fault_spec("error=599").status, 599);
}

TEST(FaultSpec, ResetAndMalformedHappenAtAToken) {
  Fault f = parse_fault_spec("reset@5");
  EXPECT_EQ(f.kind, FaultKind::kReset);
  EXPECT_EQ(f.at_token, 5);
  EXPECT_EQ(parse_fault_spec("reset").at_token, 0);
  f = parse_fault_spec("malformed@2");
  EXPECT_EQ(f.kind, FaultKind::kMalformed);
  EXPECT_EQ(f.at_token, 2);
  EXPECT_EQ(parse_fault_spec("malformed").at_token, 0);
}

TEST(FaultSpec, StallNeedsADurationAndTakesAToken) {
  Fault f = parse_fault_spec("stall=2s@3");
  EXPECT_EQ(f.kind, FaultKind::kStall);
  EXPECT_EQ(f.duration, 2s);
  EXPECT_EQ(f.at_token, 3);
  f = parse_fault_spec("stall=500ms");
  EXPECT_EQ(f.duration, 500ms);
  EXPECT_EQ(f.at_token, 0);
  EXPECT_EQ(parse_fault_spec("stall=250us@1").duration, 250us);
  EXPECT_EQ(parse_fault_spec("stall=1.5s@1").duration, 1500ms);
}

TEST(FaultSpec, SlowFirstByteNeedsADuration) {
  const Fault f = parse_fault_spec("slow-first-byte=1s");
  EXPECT_EQ(f.kind, FaultKind::kSlowFirstByte);
  EXPECT_EQ(f.duration, 1s);
}

TEST(FaultSpec, NoneKindSpacesAndCase) {
  EXPECT_EQ(parse_fault_spec("none").kind, FaultKind::kNone);
  EXPECT_EQ(parse_fault_spec("  reset@4\t").at_token, 4);
  const Fault f = parse_fault_spec("STALL=1s@2");
  EXPECT_EQ(f.kind, FaultKind::kStall);
  EXPECT_EQ(parse_fault_spec("Slow-First-Byte=2ms").kind, FaultKind::kSlowFirstByte);
}

TEST(FaultSpec, BadSpecsNameTheBadPartAndTheGrammar) {
  struct Case {
    const char* spec;
    const char* problem;
  };
  const Case cases[] = {
      {"", "it is empty"},
      {"   ", "it is empty"},
      {"boom", "unknown kind 'boom'"},
      {"=5", "the kind is missing"},
      {"@5", "the kind is missing"},
      {"error=99", "status '99' is not an integer in 400..599"},
      {"error=600", "status '600' is not an integer in 400..599"},
      {"error=abc", "status 'abc'"},
      {"error=", "status ''"},
      {"error@3", "error takes no @TOKEN"},
      {"reset=1", "reset takes no =VALUE"},
      {"malformed=x@2", "malformed takes no =VALUE"},
      {"none@1", "none takes no @TOKEN"},
      {"reset@-1", "@TOKEN '-1' is not a non-negative integer"},
      {"reset@x", "@TOKEN 'x'"},
      {"reset@", "@TOKEN ''"},
      {"reset@99999999999999999999", "@TOKEN '99999999999999999999'"},
      {"stall", "stall needs a duration, e.g. stall=500ms"},
      {"stall=@3", "stall needs a duration"},
      {"stall=2@3", "duration '2' is not a number with a unit"},
      {"stall=fast", "duration 'fast'"},
      {"stall=0s", "stall duration must be greater than 0"},
      {"slow-first-byte", "slow-first-byte needs a duration"},
      {"slow-first-byte=1s@2", "slow-first-byte takes no @TOKEN"},
  };
  for (const auto& c : cases) {
    const std::string msg = spec_error(c.spec);
    EXPECT_NE(msg.find(c.problem), std::string::npos) << c.spec << " -> " << msg;
    EXPECT_NE(msg.find("KIND[=VALUE][@TOKEN]"), std::string::npos) << msg;
  }
  EXPECT_NE(spec_error("bogus@3").find("bad fault spec 'bogus@3'"), std::string::npos);
  // FaultSpecError is a std::invalid_argument.
  EXPECT_THROW(parse_fault_spec("bogus"), std::invalid_argument);
}

TEST(FaultRule, RateColonSpec) {
  FaultRule r = parse_fault_rule("0.05:error=503");
  EXPECT_DOUBLE_EQ(r.rate, 0.05);
  EXPECT_EQ(r.fault.kind, FaultKind::kError);
  EXPECT_EQ(r.fault.status, 503);
  r = parse_fault_rule("0.01:stall=500ms@4");
  EXPECT_DOUBLE_EQ(r.rate, 0.01);
  EXPECT_EQ(r.fault.duration, 500ms);
  EXPECT_EQ(r.fault.at_token, 4);
  EXPECT_DOUBLE_EQ(parse_fault_rule("1:reset").rate, 1.0);
  EXPECT_DOUBLE_EQ(parse_fault_rule("1.0:reset").rate, 1.0);
  EXPECT_DOUBLE_EQ(parse_fault_rule("1e-3:malformed@1").rate, 0.001);
}

TEST(FaultRule, BadRulesSayWhy) {
  EXPECT_NE(rule_error("0:error").find("rate 0 is outside (0, 1]"), std::string::npos);
  EXPECT_NE(rule_error("1.5:error").find("rate 1.5 is outside (0, 1]"), std::string::npos);
  EXPECT_NE(rule_error("-0.1:error").find("is outside (0, 1]"), std::string::npos);
  EXPECT_NE(rule_error("abc:error").find("rate 'abc' is not a number"), std::string::npos);
  EXPECT_NE(rule_error("nan:error").find("rate 'nan' is not a number"), std::string::npos);
  EXPECT_NE(rule_error(":error").find("rate '' is not a number"), std::string::npos);
  EXPECT_NE(rule_error("error=503").find("expected RATE:SPEC"), std::string::npos);
  const std::string bad_spec = rule_error("0.5:bogus");
  EXPECT_NE(bad_spec.find("bad --fault '0.5:bogus'"), std::string::npos) << bad_spec;
  EXPECT_NE(bad_spec.find("unknown kind 'bogus'"), std::string::npos) << bad_spec;
  EXPECT_NE(rule_error("0.5:none").find("'none' is only for the X-Llmload-Fault header"),
            std::string::npos);
}

TEST(FaultSpec, FormatRoundTrips) {
  for (const char* spec : {"error=503", "reset@5", "stall=2s@3", "stall=500ms@0",
                           "stall=1500us@2", "malformed@2", "slow-first-byte=1s", "none"}) {
    const Fault f = parse_fault_spec(spec);
    EXPECT_EQ(format_fault_spec(f), spec);
    EXPECT_EQ(parse_fault_spec(format_fault_spec(f)), f) << spec;
  }
  EXPECT_EQ(format_fault_spec(parse_fault_spec("stall=7ns")), "stall=7ns@0");
  EXPECT_EQ(fault_kind_name(FaultKind::kSlowFirstByte), "slow-first-byte");
}

TEST(FaultInjector, NoRulesNoHeaderNoFault) {
  const FaultInjector none;
  EXPECT_TRUE(none.empty());
  const auto c = none.choose(1, std::nullopt);
  EXPECT_EQ(c.fault.kind, FaultKind::kNone);
  EXPECT_FALSE(c.header_error);
  // Headers work without rules.
  EXPECT_EQ(none.choose(1, "reset@3").fault.at_token, 3);
}

TEST(FaultInjector, AValidHeaderWinsOverTheRules) {
  const FaultInjector inj({parse_fault_rule("1:error=503")}, 7);
  EXPECT_FALSE(inj.empty());
  EXPECT_EQ(inj.choose(0, std::nullopt).fault.status, 503);
  const auto c = inj.choose(0, "stall=2s@3");
  EXPECT_EQ(c.fault.kind, FaultKind::kStall);
  EXPECT_FALSE(c.header_error);
  // `none` exempts the request from the rules.
  EXPECT_EQ(inj.choose(0, "none").fault.kind, FaultKind::kNone);
}

TEST(FaultInjector, AMalformedHeaderIsReportedNotApplied) {
  const FaultInjector inj({parse_fault_rule("1:error=503")}, 7);
  const auto c = inj.choose(3, "explode");
  EXPECT_EQ(c.fault.kind, FaultKind::kNone);
  ASSERT_TRUE(c.header_error);
  EXPECT_NE(c.header_error->find("X-Llmload-Fault"), std::string::npos) << *c.header_error;
  EXPECT_NE(c.header_error->find("unknown kind 'explode'"), std::string::npos);
  EXPECT_TRUE(inj.choose(3, "").header_error);
}

TEST(FaultInjector, SameSeedAndSequenceSameChoice) {
  const std::vector<FaultRule> rules = {parse_fault_rule("0.3:error=503"),
                                        parse_fault_rule("0.3:reset@2")};
  const FaultInjector a(rules, 42);
  const FaultInjector b(rules, 42);
  const FaultInjector other_seed(rules, 43);
  int differ = 0;
  for (std::uint64_t seq = 0; seq < 2000; ++seq) {
    EXPECT_EQ(a.choose(seq, std::nullopt).fault, b.choose(seq, std::nullopt).fault);
    EXPECT_EQ(a.choose(seq, std::nullopt).fault, a.choose(seq, std::nullopt).fault);
    if (!(a.choose(seq, std::nullopt).fault == other_seed.choose(seq, std::nullopt).fault)) {
      ++differ;
    }
  }
  EXPECT_GT(differ, 200);  // another seed gives another pattern
}

TEST(FaultInjector, RateOneAlwaysFiresAndTheFirstRuleThatFiresWins) {
  const FaultInjector inj({parse_fault_rule("1:reset@1"), parse_fault_rule("1:error")}, 1);
  for (std::uint64_t seq = 0; seq < 1000; ++seq) {
    EXPECT_EQ(inj.choose(seq, std::nullopt).fault.kind, FaultKind::kReset);
  }
}

// Over 100k requests the faulted fraction is within 5 sigma of the rate; with two rules the
// second fires only where the first did not: (1 - r1) * r2.
TEST(FaultInjector, FractionFaultedMatchesTheRate) {
  constexpr int kN = 100000;
  const FaultInjector inj({parse_fault_rule("0.1:error=503"), parse_fault_rule("0.2:reset@3")},
                          2024);
  int errors = 0;
  int resets = 0;
  for (std::uint64_t seq = 0; seq < kN; ++seq) {
    const auto kind = inj.choose(seq, std::nullopt).fault.kind;
    errors += kind == FaultKind::kError;
    resets += kind == FaultKind::kReset;
  }
  const auto within = [](int hits, double p) {
    const double sigma = std::sqrt(kN * p * (1 - p));
    return std::abs(hits - kN * p) < 5 * sigma;
  };
  EXPECT_TRUE(within(errors, 0.1)) << errors;
  EXPECT_TRUE(within(resets, 0.9 * 0.2)) << resets;

  const FaultInjector rare({parse_fault_rule("0.01:stall=1ms")}, 5);
  int stalls = 0;
  for (std::uint64_t seq = 0; seq < kN; ++seq) {
    stalls += rare.choose(seq, std::nullopt).fault.kind == FaultKind::kStall;
  }
  EXPECT_TRUE(within(stalls, 0.01)) << stalls;
}

}  // namespace
}  // namespace llmload::server
