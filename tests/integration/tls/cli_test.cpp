// The real `llmload run` against https:// through nginx in front of llmload-server.
//
// Each test first checks that `llmload run --help` lists the flags it uses (--ca-cert,
// --insecure, --connect-timeout) and fails, naming the missing flag, when not: a renamed flag is a
// failure here, never a silent skip. (Only a machine without nginx/openssl skips.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmload_run.hpp"
#include "subprocess.hpp"
#include "tls_env.hpp"

namespace llmload::testing {
namespace {

using namespace std::chrono_literals;

// The flags `llmload run --help` lacks, of those asked for ("" when it has them all).
std::string missing_flags(const std::vector<std::string>& flags) {
  static const std::string help = [] {
    auto r = run({binary_path("llmload"), "run", "--help"}, 30s);
    return r.out + r.err;
  }();
  std::string missing;
  for (const auto& f : flags) {
    if (help.find(f) == std::string::npos) missing += (missing.empty() ? "" : ", ") + f;
  }
  return missing;
}

#define REQUIRE_FLAGS(...)                                                                      \
  do {                                                                                          \
    const std::string missing_ = missing_flags({__VA_ARGS__});                                  \
    if (!missing_.empty()) GTEST_FAIL() << "llmload run --help lists no " << missing_;             \
  } while (false)

class TlsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = tls_tools_missing();
    if (skip_.empty()) env_ = new TlsEnv();
  }
  static void TearDownTestSuite() {
    delete env_;
    env_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  static std::vector<std::string> base_args(const std::string& url) {
    return {"--base-url", url,   "--scenario", "single-stream", "--num-requests", "20", "--input-tokens",
            "16",         "--output-tokens", "8", "--seed", "3"};
  }
  static TlsEnv* env_;
  static std::string skip_;
};
TlsEnv* TlsCli::env_ = nullptr;
std::string TlsCli::skip_;

void expect_all_ok(const LlmloadRun& out, int requests) {
  const auto& r = out.result;
  ASSERT_FALSE(r.is_null()) << out.proc.out << out.proc.err;
  EXPECT_EQ(r["completed"], requests) << out.proc.out;
  EXPECT_EQ(r["failed"], 0);
  EXPECT_EQ(r["total_output_tokens"], requests * 8);
  for (const auto& rec : out.records) {
    EXPECT_EQ(rec["error_class"], "none") << rec.dump();
    EXPECT_EQ(rec["output_tokens"], 8);
  }
  // A sequential run reuses its keep-alive TLS connection.
  if (r.contains("connections_opened")) {
    EXPECT_LT(r["connections_opened"].get<int>(), requests);
  }
}

TEST_F(TlsCli, SucceedsWithTheTestCa) {
  REQUIRE_FLAGS("--ca-cert");
  TempDir dir;
  auto args = base_args(env_->good_url());
  args.insert(args.end(), {"--ca-cert", env_->pki.ca_pem});
  auto out = run_llmload(dir, args, {}, 120s);
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.out << out.proc.err;
  expect_all_ok(out, 20);
}

TEST_F(TlsCli, FailsWithoutTheCaSayingHowToFixIt) {
  REQUIRE_FLAGS("--ca-cert", "--insecure");
  TempDir dir;
  auto out = run_llmload(dir, base_args(env_->good_url()), {}, 120s);
  EXPECT_NE(out.proc.exit_code, 0) << out.proc.out;
  const std::string all = out.proc.out + out.proc.err;
  EXPECT_NE(all.find("certificate verify failed"), std::string::npos) << all;
  EXPECT_NE(all.find("--ca-cert"), std::string::npos) << all;
  EXPECT_NE(all.find("--insecure"), std::string::npos) << all;
  // Whether the endpoint probe or the requests failed, a record says why: class connect.
  for (const auto& rec : out.records) EXPECT_EQ(rec["error_class"], "connect") << rec.dump();
}

TEST_F(TlsCli, SucceedsWithInsecure) {
  REQUIRE_FLAGS("--insecure");
  TempDir dir;
  auto args = base_args(env_->good_url());
  args.push_back("--insecure");
  auto out = run_llmload(dir, args, {}, 120s);
  ASSERT_EQ(out.proc.exit_code, 0) << out.proc.out << out.proc.err;
  expect_all_ok(out, 20);
}

TEST_F(TlsCli, BadCaCertFileIsRejectedNamingIt) {
  REQUIRE_FLAGS("--ca-cert");
  TempDir dir;
  const std::string missing = dir.file("no-such-ca.pem");
  auto args = base_args(env_->good_url());
  args.insert(args.end(), {"--ca-cert", missing});
  auto out = run_llmload(dir, args, {}, 60s);
  EXPECT_NE(out.proc.exit_code, 0);
  EXPECT_NE((out.proc.out + out.proc.err).find(missing), std::string::npos) << out.proc.err;
}

TEST_F(TlsCli, ConnectTimeoutDuringTheHandshake) {
  REQUIRE_FLAGS("--connect-timeout", "--ca-cert");
  SilentListener silent;
  TempDir dir;
  auto args = base_args("https://127.0.0.1:" + std::to_string(silent.port()));
  args.insert(args.end(), {"--ca-cert", env_->pki.ca_pem, "--connect-timeout", "300ms"});
  auto out = run_llmload(dir, args, {}, 60s);
  EXPECT_NE(out.proc.exit_code, 0);
  const std::string all = out.proc.out + out.proc.err;
  EXPECT_NE(all.find("timed out after 0.3 s (--connect-timeout)"), std::string::npos) << all;
  for (const auto& rec : out.records) EXPECT_EQ(rec["error_class"], "connect_timeout") << rec.dump();
}

}  // namespace
}  // namespace llmload::testing
