#include "llmload/server/cli.hpp"

#include <gtest/gtest.h>

namespace llmload::server {
namespace {

using std::chrono::milliseconds;

TEST(ServerCli, Defaults) {
  const CliOutcome o = parse_command_line({});
  ASSERT_TRUE(o.config) << o.err;
  const ServerConfig& c = *o.config;
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 8000);
  EXPECT_EQ(c.models, std::vector<std::string>{"llmload-mock"});
  EXPECT_EQ(c.max_model_len, 8192);
  EXPECT_EQ(c.latency.model, "fixed");
  EXPECT_EQ(c.latency.ttft, milliseconds(50));
  EXPECT_EQ(c.latency.itl, milliseconds(10));
  EXPECT_EQ(c.latency.jitter, 0.0);
  EXPECT_EQ(c.latency.seed, 0u);
  EXPECT_EQ(c.io_threads, 1);
  EXPECT_EQ(c.log_level, "info");
}

TEST(ServerCli, AllFlags) {
  const CliOutcome o = parse_command_line({"--host", "0.0.0.0", "--port", "0", "--model", "a", "--model", "b",
                                           "--max-model-len", "4096", "--latency-model", "fixed", "--ttft", "1.5s",
                                           "--itl", "250us", "--jitter", "0.25", "--seed", "42", "--threads", "3",
                                           "--log-level", "debug"});
  ASSERT_TRUE(o.config) << o.err;
  const ServerConfig& c = *o.config;
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.max_model_len, 4096);
  EXPECT_EQ(c.latency.ttft, milliseconds(1500));
  EXPECT_EQ(c.latency.itl, std::chrono::microseconds(250));
  EXPECT_DOUBLE_EQ(c.latency.jitter, 0.25);
  EXPECT_EQ(c.latency.seed, 42u);
  EXPECT_EQ(c.io_threads, 3);
  EXPECT_EQ(c.log_level, "debug");
}

/// A bad flag: no config, a non-zero exit code, and an error naming the flag.
void expect_rejected(const std::vector<std::string>& args, const std::string& must_mention) {
  const CliOutcome o = parse_command_line(args);
  EXPECT_FALSE(o.config);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find(must_mention), std::string::npos) << o.err;
}

TEST(ServerCli, BadFlagsNameTheFlag) {
  expect_rejected({"--bogus"}, "--bogus");
  expect_rejected({"--port", "70000"}, "--port");
  expect_rejected({"--port", "x"}, "--port");
  expect_rejected({"--ttft", "abc"}, "--ttft");
  expect_rejected({"--itl", "10"}, "--itl");  // a unit is required
  expect_rejected({"--jitter", "2"}, "--jitter");
  expect_rejected({"--threads", "0"}, "--threads");
  expect_rejected({"--max-model-len", "0"}, "--max-model-len");
  expect_rejected({"--log-level", "loud"}, "--log-level");
  expect_rejected({"--model", ""}, "--model");
}

TEST(ServerCli, UnknownLatencyModelListsTheValidOnes) {
  const CliOutcome o = parse_command_line({"--latency-model", "engine"});
  EXPECT_FALSE(o.config);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("--latency-model"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("fixed"), std::string::npos) << o.err;
}

TEST(ServerCli, HelpDocumentsTheTokenRuleAndExitsZero) {
  const CliOutcome o = parse_command_line({"--help"});
  EXPECT_FALSE(o.config);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("whitespace-separated word"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--ttft"), std::string::npos);
}

TEST(ServerCli, Version) {
  const CliOutcome o = parse_command_line({"--version"});
  EXPECT_FALSE(o.config);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("llmload-server"), std::string::npos);
}

}  // namespace
}  // namespace llmload::server
