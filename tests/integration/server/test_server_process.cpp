// The llmload-server process: command line, start-up line, signals.
#include <csignal>
#include <regex>
#include <string>

#include "server_fixture.hpp"

namespace llmload::testing {
namespace {

TEST(ServerProcess, ListeningLineIsExactAndAlone) {
  auto server = start_server({});
  const std::string out = server.proc->out();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(^llmload-server listening on http://127\.0\.0\.1:(\d+)\n)")))
      << out;
  EXPECT_EQ(std::stoi(m[1]), server.port);
  EXPECT_NE(server.port, 0);
}

TEST(ServerProcess, BadFlagExitsNonZeroNamingTheFlag) {
  const RunResult r = run({binary_path("llmload-server"), "--no-such-flag"}, std::chrono::seconds(10));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--no-such-flag"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ServerProcess, BadValuesNameTheFlagAndTheFix) {
  RunResult r = run({binary_path("llmload-server"), "--latency-model", "vidur"}, std::chrono::seconds(10));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--latency-model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fixed"), std::string::npos) << r.err;
  r = run({binary_path("llmload-server"), "--ttft", "fast"}, std::chrono::seconds(10));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--ttft"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("50ms"), std::string::npos) << "the message shows the accepted form: " << r.err;
}

TEST(ServerProcess, PortInUseIsAClearError) {
  auto first = start_server({});
  const RunResult r = run({binary_path("llmload-server"), "--host", "127.0.0.1", "--port", std::to_string(first.port)},
                          std::chrono::seconds(10));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(std::to_string(first.port)), std::string::npos) << r.err;
}

TEST(ServerProcess, HelpExitsZero) {
  const RunResult r = run({binary_path("llmload-server"), "--help"}, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--max-model-len"), std::string::npos);
}

TEST(ServerProcess, SigtermStopsGracefullyWithExitZero) {
  auto server = start_server({});
  ASSERT_EQ(http_request(server.port, "GET", "/health").status, 200);
  server.proc->signal(SIGTERM);
  EXPECT_EQ(server.proc->wait(std::chrono::seconds(10)), 0) << server.proc->err();
}

TEST(ServerProcess, SigintDuringAStreamExitsZero) {
  auto server = start_server({"--latency-model", "fixed", "--ttft", "1ms", "--itl", "10ms", "--max-model-len", "200000"});
  HttpConnection c(server.port);
  c.send_request("POST", "/v1/completions", R"({"model":"llmload-mock","prompt":"x","max_tokens":100000,"stream":true})");
  (void)c.read_head();
  ASSERT_FALSE(c.next_chunk().data.empty());
  server.proc->signal(SIGINT);
  EXPECT_EQ(server.proc->wait(std::chrono::seconds(10)), 0) << server.proc->err();
  EXPECT_TRUE(c.wait_closed(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace llmload::testing
