#include <gtest/gtest.h>

#include <sstream>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/url.hpp"

namespace llmload {
namespace {

using namespace std::chrono_literals;

TEST(Duration, ParsesUnitsAndRejectsGarbage) {
  EXPECT_EQ(parse_duration("50ms"), Nanos(50ms));
  EXPECT_EQ(parse_duration("1.5s"), Nanos(1500ms));
  EXPECT_EQ(parse_duration("2m"), Nanos(120s));
  EXPECT_EQ(parse_duration("250us"), Nanos(250us));
  EXPECT_EQ(parse_duration("10"), Nanos(10s));
  EXPECT_EQ(parse_duration("10", "ms"), Nanos(10ms));
  for (const char* bad : {"", "ms", "-1s", "5 parsecs", "1e400s", "nan s"}) {
    EXPECT_THROW(parse_duration(bad), DurationParseError) << bad;
  }
  EXPECT_THROW(parse_duration("10", ""), DurationParseError);
}

TEST(Url, ParsesBaseUrls) {
  auto u = parse_base_url("http://127.0.0.1:8000");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, "8000");
  EXPECT_EQ(u.path, "");
  EXPECT_EQ(parse_base_url("http://localhost:8000/v1/").path, "");
  EXPECT_EQ(parse_base_url("http://h/proxy/v1").path, "/proxy");
  EXPECT_EQ(parse_base_url("http://h").port, "80");
  EXPECT_EQ(parse_base_url("http://h").host_header(), "h");
  EXPECT_EQ(parse_base_url("http://[::1]:9000").host, "::1");
  EXPECT_EQ(parse_base_url("https://h").port, "443");
  EXPECT_EQ(parse_base_url("https://h").scheme, "https");
  EXPECT_EQ(parse_base_url("https://h:8443/v1").host_header(), "h:8443");
  for (const char* bad : {"127.0.0.1:8000", "ftp://h", "http://", "http://h:99999", "http://h:abc", "http://u:p@h",
                          "https://"}) {
    EXPECT_THROW(parse_base_url(bad), ConfigError) << bad;
  }
}

TEST(Prompt, ExactWordCountAndDeterministic) {
  for (std::int64_t n : {1, 2, 17, 1000}) {
    auto p = synthesize_prompt(n, 5);
    std::istringstream in(p);
    std::int64_t words = 0;
    std::string w;
    while (in >> w) ++words;
    EXPECT_EQ(words, n);
  }
  EXPECT_EQ(synthesize_prompt(50, 1), synthesize_prompt(50, 1));
  EXPECT_NE(synthesize_prompt(50, 1), synthesize_prompt(50, 2));
}

}  // namespace
}  // namespace llmload

#include "settings.hpp"

namespace llmload {
namespace {

TEST(ScenarioText, YamlAndJsonGiveTheSameSettings) {
  ScenarioConfig a;
  ScenarioConfig b;
  app::apply_scenario_text("scenario: server\nrequest_rate: 12.5\ninput-tokens: 64\nslo:\n  ttft: 1s\n  percentile: 90\n",
                           "a.yaml", a);
  app::apply_scenario_text(R"({"scenario": "server", "request_rate": 12.5, "input_tokens": 64, "slo": "ttft:1s,p90"})",
                           "b.json", b);
  EXPECT_EQ(a.kind, ScenarioKind::kServer);
  EXPECT_EQ(a.request_rate, b.request_rate);
  EXPECT_EQ(a.input_tokens, 64);
  EXPECT_EQ(b.input_tokens, 64);
  ASSERT_TRUE(a.slo && b.slo);
  EXPECT_EQ(a.slo->to_string(), b.slo->to_string());
}

TEST(ScenarioText, ErrorsNameTheFileTheKeyAndTheFix) {
  ScenarioConfig c;
  try {
    app::apply_scenario_text("scenario: server\nrequest_rate: fast\n", "s.yaml", c);
    FAIL();
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("s.yaml"), std::string::npos) << m;
    EXPECT_NE(m.find("request_rate"), std::string::npos) << m;
    EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  }
  // Found by fuzzing: a NUL byte cut every message short; now it is refused up front.
  try {
    app::apply_scenario_text(std::string("scenario: ser\0ver\n", 18), "n.yaml", c);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("NUL"), std::string::npos) << e.what();
  }
  // Found by fuzzing: errors of parsers that name the flag (a bad stage plan) did not name the file.
  try {
    app::apply_scenario_text("seed: 1\nstages: 8s\n", "st.yaml", c);
    FAIL();
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("scenario file 'st.yaml', key 'stages' (line 2)"), std::string::npos) << m;
    EXPECT_NE(m.find("give KIND:VALUE@DURATION"), std::string::npos) << m;
  }
  EXPECT_THROW(app::apply_scenario_text("- a\n- b\n", "l.yaml", c), ConfigError);
  EXPECT_THROW(app::apply_scenario_text("concurrency: [1, 2]\n", "m.yaml", c), ConfigError);
}

}  // namespace
}  // namespace llmload
