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
  EXPECT_EQ(parse_duration("10", "ms"), Nanos(10ms));
  // Issue 16: a bare number was taken as seconds though the help says durations take a unit.
  try {
    parse_duration("10");
    ADD_FAILURE() << "a bare number was accepted";
  } catch (const DurationParseError& e) {
    EXPECT_NE(std::string(e.what()).find("add it, e.g. 10s"), std::string::npos) << e.what();
  }
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

// Issue 16: a password in the URL was printed in the refusal; a query right after the port was
// reported as a bad port.
TEST(Url, ErrorsNeverShowCredentialsOrQueriesAndSayWhatIsWrong) {
  auto message = [](const char* url) {
    try {
      parse_base_url(url);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string creds = message("http://user:hunter2secret@127.0.0.1:8000/v1");
  EXPECT_EQ(creds.find("hunter2secret"), std::string::npos) << creds;
  EXPECT_EQ(creds.find("user"), std::string::npos) << creds;
  EXPECT_NE(creds.find("credentials in the URL"), std::string::npos) << creds;
  EXPECT_NE(creds.find("http://<credentials>@127.0.0.1:8000/v1"), std::string::npos) << creds;
  const std::string query = message("http://127.0.0.1:8000?api_key=sk-abcdefgh12345678");
  EXPECT_NE(query.find("query strings"), std::string::npos) << query;
  EXPECT_EQ(query.find("port"), std::string::npos) << query;
  EXPECT_EQ(query.find("sk-abcdefgh"), std::string::npos) << query;
  EXPECT_NE(message("http://127.0.0.1:8000/v1#frag").find("#<fragment>"), std::string::npos);
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

// Issue 16: a key given twice silently kept the last; a directory was an internal error;
// /dev/zero was read until memory ran out; 0 as a rate ran concurrency 1; a framing header was
// sent twice.
TEST(ScenarioText, DuplicateKeysOversizeFilesAndDirectoriesAreRefused) {
  auto error_of = [](auto&& f) {
    try {
      f();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ScenarioConfig c;
  const std::string dup = error_of([&] { app::apply_scenario_text("model: a\nseed: 1\nmodel: b\n", "d.yaml", c); });
  EXPECT_NE(dup.find("given twice (first on line 1)"), std::string::npos) << dup;
  const std::string spelled = error_of([&] { app::apply_scenario_text("{\"input-tokens\": 5, \"input_tokens\": 6}", "d.json", c); });
  EXPECT_NE(spelled.find("given twice"), std::string::npos) << spelled;
  const std::string dir = error_of([&] { app::apply_scenario_file("/tmp", c); });
  EXPECT_NE(dir.find("is a directory"), std::string::npos) << dir;
  const std::string zero = error_of([&] { app::apply_scenario_file("/dev/zero", c); });
  EXPECT_NE(zero.find("larger than 1024 KiB"), std::string::npos) << zero;
  const std::string rate = error_of([&] { app::apply_setting("request-rate", "0", "--request-rate", c); });
  EXPECT_NE(rate.find("above 0"), std::string::npos) << rate;
  for (const char* framing : {"Content-Length: 5", "host: x", "Transfer-Encoding: chunked", "Connection: close"}) {
    const std::string h = error_of([&] { app::apply_setting("header", framing, "--header", c); });
    EXPECT_NE(h.find("is set by llmload"), std::string::npos) << framing << ": " << h;
  }
  const std::string bare = error_of([&] { app::apply_setting("duration", "10", "--duration", c); });
  EXPECT_NE(bare.find("add it, e.g. 10s"), std::string::npos) << bare;
}

}  // namespace
}  // namespace llmload
