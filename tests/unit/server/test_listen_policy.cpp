#include "llmload/server/listen_policy.hpp"

#include <gtest/gtest.h>

#include "llmload/server/http_server.hpp"

namespace llmload::server {
namespace {

TEST(ServerListenPolicy, LoopbackAddresses) {
  for (const char* ip : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"}) {
    EXPECT_TRUE(is_loopback_ip(ip)) << ip;
  }
  for (const char* ip : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.10", "128.0.0.1", "126.255.255.255", "::2",
                         "::ffff:10.0.0.1", "::127.0.0.1", "fe80::1", "localhost", "", "127.0.0.1x", "1.2.3"}) {
    EXPECT_FALSE(is_loopback_ip(ip)) << ip;
  }
}

TEST(ServerListenPolicy, RemoteNeedsTheFlag) {
  EXPECT_FALSE(remote_listen_refusal("127.0.0.1", "127.0.0.1", false));
  EXPECT_FALSE(remote_listen_refusal("localhost", "::1", false));
  EXPECT_FALSE(remote_listen_refusal("0.0.0.0", "0.0.0.0", true));
  const auto refusal = remote_listen_refusal("0.0.0.0", "0.0.0.0", false);
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->find("--allow-remote"), std::string::npos) << *refusal;
  EXPECT_NE(refusal->find("0.0.0.0"), std::string::npos) << *refusal;
}

TEST(ServerListenPolicy, ListenRefusesBeforeBinding) {
  ServerConfig config;
  config.host = "0.0.0.0";
  config.port = 0;
  HttpServer server(config, make_latency_model(config.latency));
  try {
    (void)server.listen(false);
    ADD_FAILURE() << "listen() accepted 0.0.0.0 without allow_remote";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--allow-remote"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace llmload::server
