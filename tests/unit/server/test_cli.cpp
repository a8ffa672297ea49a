#include "llmload/server/cli.hpp"

#include <gtest/gtest.h>

#include <utility>

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
  EXPECT_EQ(c.max_model_len, 8192);  // the default profile's
  EXPECT_EQ(c.latency.model, "engine");
  ASSERT_TRUE(c.profile);
  EXPECT_EQ(c.profile->name, "llama-3-8b-h100");
  EXPECT_EQ(c.device, "auto");
  EXPECT_EQ(c.max_waiting, 0);
  EXPECT_TRUE(c.faults.empty());
  EXPECT_TRUE(c.api_key.empty());
  EXPECT_EQ(c.latency.ttft, milliseconds(50));
  EXPECT_EQ(c.latency.itl, milliseconds(10));
  EXPECT_EQ(c.latency.jitter, 0.0);
  EXPECT_EQ(c.latency.seed, 0u);
  EXPECT_EQ(c.io_threads, 1);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.header_timeout, std::chrono::seconds(30));
  EXPECT_EQ(c.body_timeout, std::chrono::seconds(60));
  EXPECT_EQ(c.keepalive_timeout, std::chrono::seconds(120));
  EXPECT_EQ(c.max_connections, 10000);
  EXPECT_FALSE(c.allow_remote);
}

TEST(ServerCli, LimitFlags) {
  const CliOutcome o = parse_command_line({"--header-timeout", "1.5s", "--body-timeout", "250ms", "--keepalive-timeout",
                                           "2m", "--max-connections", "7", "--allow-remote"});
  ASSERT_TRUE(o.config) << o.err;
  const ServerConfig& c = *o.config;
  EXPECT_EQ(c.header_timeout, milliseconds(1500));
  EXPECT_EQ(c.body_timeout, milliseconds(250));
  EXPECT_EQ(c.keepalive_timeout, std::chrono::minutes(2));
  EXPECT_EQ(c.max_connections, 7);
  EXPECT_TRUE(c.allow_remote);
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
  expect_rejected({"--latency-model", "fixed", "--ttft", "abc"}, "--ttft");
  expect_rejected({"--latency-model", "fixed", "--itl", "10"}, "--itl");  // a unit is required
  expect_rejected({"--latency-model", "fixed", "--jitter", "2"}, "--jitter");
  expect_rejected({"--threads", "0"}, "--threads");
  expect_rejected({"--max-model-len", "0"}, "--max-model-len");
  expect_rejected({"--log-level", "loud"}, "--log-level");
  expect_rejected({"--model", ""}, "--model");
  expect_rejected({"--header-timeout", "0s"}, "--header-timeout");
  expect_rejected({"--body-timeout", "30"}, "--body-timeout");  // a unit is required
  expect_rejected({"--keepalive-timeout", "-1s"}, "--keepalive-timeout");
  expect_rejected({"--max-connections", "0"}, "--max-connections");
}

TEST(ServerCli, UnknownLatencyModelListsTheValidOnes) {
  const CliOutcome o = parse_command_line({"--latency-model", "vidur"});
  EXPECT_FALSE(o.config);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("--latency-model"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("fixed"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("engine"), std::string::npos) << o.err;
}

TEST(ServerCli, EngineFlagsOverrideTheProfile) {
  const CliOutcome o = parse_command_line({"--profile", "tiny", "--max-num-seqs", "3", "--max-num-batched-tokens", "64",
                                           "--kv-cache-tokens", "3000", "--block-size", "32", "--max-model-len", "1000",
                                           "--no-enable-prefix-caching", "--device", "cpu", "--max-waiting", "5"});
  ASSERT_TRUE(o.config) << o.err;
  const ServerConfig& c = *o.config;
  ASSERT_TRUE(c.profile);
  EXPECT_EQ(c.profile->name, "tiny");
  EXPECT_EQ(c.profile->engine.max_num_seqs, 3);
  EXPECT_EQ(c.profile->engine.max_num_batched_tokens, 64);
  EXPECT_EQ(c.profile->kv_cache_tokens(), 2976);  // whole blocks of 32
  EXPECT_EQ(c.profile->engine.block_size, 32);
  EXPECT_FALSE(c.profile->engine.enable_prefix_caching);
  EXPECT_EQ(c.max_model_len, 1000);
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.max_waiting, 5);
  // Without --max-model-len the profile's own.
  const CliOutcome d = parse_command_line({"--profile", "tiny"});
  ASSERT_TRUE(d.config) << d.err;
  EXPECT_EQ(d.config->max_model_len, 2048);
}

// The fixed model takes --max-num-seqs as a number of slots (requests beyond it queue, FIFO).
TEST(ServerCli, FixedModelTakesMaxNumSeqsAsSlots) {
  const CliOutcome o = parse_command_line({"--latency-model", "fixed", "--max-num-seqs", "8"});
  ASSERT_TRUE(o.config) << o.err;
  EXPECT_EQ(o.config->fixed_max_num_seqs, 8);
  EXPECT_FALSE(o.config->profile);
  const CliOutcome d = parse_command_line({"--latency-model", "fixed"});
  ASSERT_TRUE(d.config) << d.err;
  EXPECT_EQ(d.config->fixed_max_num_seqs, 0);  // no limit
}

TEST(ServerCli, ModelSpecificFlagsAreRejectedWithTheOtherModel) {
  expect_rejected({"--ttft", "10ms"}, "--latency-model fixed");
  expect_rejected({"--latency-model", "fixed", "--profile", "tiny"}, "--profile");
  expect_rejected({"--latency-model", "fixed", "--max-waiting", "3"}, "--max-waiting");
  expect_rejected({"--profile", "no-such-model"}, "tiny");  // lists the built-ins
  expect_rejected({"--profile", "tiny", "--kv-cache-tokens", "100"}, "--kv-cache-tokens");  // below max_model_len
  expect_rejected({"--device", "tpu"}, "--device");
  expect_rejected({"--enable-prefix-caching", "--no-enable-prefix-caching"}, "prefix-caching");
}

TEST(ServerCli, FaultsAndApiKey) {
  const CliOutcome o = parse_command_line({"--fault", "0.5:error=503", "--fault", "0.1:stall=1s@2", "--api-key", "k"});
  ASSERT_TRUE(o.config) << o.err;
  ASSERT_EQ(o.config->faults.size(), 2u);
  EXPECT_EQ(o.config->faults[0].fault.kind, FaultKind::kError);
  EXPECT_EQ(o.config->faults[0].fault.status, 503);
  EXPECT_DOUBLE_EQ(o.config->faults[1].rate, 0.1);
  EXPECT_EQ(o.config->api_key, "k");
  expect_rejected({"--fault", "2:error"}, "--fault");
  expect_rejected({"--fault", "0.1:explode"}, "--fault");
  expect_rejected({"--api-key-file", "/nonexistent/key"}, "--api-key-file");
}

TEST(ServerCli, HelpDocumentsTheTokenRuleAndExitsZero) {
  const CliOutcome o = parse_command_line({"--help"});
  EXPECT_FALSE(o.config);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("whitespace-separated word"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--ttft"), std::string::npos);
  // The limits show their defaults.
  const std::pair<const char*, const char*> defaults[] = {
      {"--header-timeout", "=30s"}, {"--body-timeout", "=60s"}, {"--keepalive-timeout", "=120s"},
      {"--max-connections", "=10000"}};
  for (const auto& [flag, value] : defaults) {
    const auto at = o.out.find(flag);
    ASSERT_NE(at, std::string::npos) << flag;
    const std::string line = o.out.substr(at, o.out.find('\n', at) - at);
    EXPECT_NE(line.find(value), std::string::npos) << line;
  }
  EXPECT_NE(o.out.find("--allow-remote"), std::string::npos);
}

TEST(ServerCli, Version) {
  const CliOutcome o = parse_command_line({"--version"});
  EXPECT_FALSE(o.config);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_NE(o.out.find("llmload-server"), std::string::npos);
}

TEST(ServerCli, OutputModelFlags) {
  CliOutcome o = parse_command_line({});
  ASSERT_TRUE(o.config) << o.err;
  EXPECT_TRUE(o.config->output.answers);
  EXPECT_EQ(o.config->output.wrong_answer_rate, 0.0);
  EXPECT_EQ(o.config->output.divergence_rate, 0.0);
  EXPECT_FALSE(o.config->output.wrong_answer_preempted.has_value());

  o = parse_command_line({"--wrong-answer-rate", "0.2", "--wrong-answer-batch-slope", "0.01", "--wrong-answer-preempted",
                          "0.5", "--divergence-rate", "0.001", "--divergence-batch-slope", "0.0005", "--seed", "9"});
  ASSERT_TRUE(o.config) << o.err;
  const OutputModelConfig& m = o.config->output;
  EXPECT_TRUE(m.answers);
  EXPECT_EQ(m.wrong_answer_rate, 0.2);
  EXPECT_EQ(m.wrong_answer_batch_slope, 0.01);
  EXPECT_EQ(m.wrong_answer_preempted, 0.5);
  EXPECT_EQ(m.divergence_rate, 0.001);
  EXPECT_EQ(m.divergence_batch_slope, 0.0005);

  o = parse_command_line({"--answers", "off", "--divergence-rate", "1"});
  ASSERT_TRUE(o.config) << o.err;
  EXPECT_FALSE(o.config->output.answers);
}

TEST(ServerCli, BadOutputModelFlagsExitTwoNamingTheFlag) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--answers", "maybe"}, {"--wrong-answer-rate", "1.5"}, {"--wrong-answer-rate", "-0.1"},
        {"--wrong-answer-batch-slope", "x"}, {"--wrong-answer-preempted", "2"}, {"--divergence-rate", "-1"},
        {"--divergence-batch-slope", "1.01"}, {"--divergence-rate", "nan"}}) {
    const CliOutcome o = parse_command_line(args);
    EXPECT_FALSE(o.config) << args[0] << " " << args[1];
    EXPECT_EQ(o.exit_code, 2) << args[0] << " " << args[1];
    EXPECT_NE(o.err.find(args[0].substr(0, 12)), std::string::npos) << o.err;
  }
  const CliOutcome off = parse_command_line({"--answers", "off", "--wrong-answer-rate", "0.1"});
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("--wrong-answer-rate applies to answers"), std::string::npos) << off.err;
}

}  // namespace
}  // namespace llmload::server
