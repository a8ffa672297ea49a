#pragma once
// Shared helpers of the server integration tests.

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <nlohmann/json.hpp>
#pragma GCC diagnostic pop

#include "http_client.hpp"
#include "subprocess.hpp"

namespace llmload::testing {

using nlohmann::json;

/// Checks the OpenAI error shape of a reply and returns its "error" object.
inline json expect_api_error(const HttpResponse& r, int status, const std::string& type) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  json body = json::parse(r.body, nullptr, false);
  if (body.is_discarded() || !body.contains("error")) {
    ADD_FAILURE() << "not an OpenAI error body: " << r.body;
    return json::object();
  }
  const json e = body["error"];
  EXPECT_EQ(e.value("type", ""), type) << r.body;
  EXPECT_EQ(e.value("code", 0), status) << r.body;
  EXPECT_TRUE(e.contains("message") && e["message"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param")) << r.body;
  return e;
}

/// Pumps the server's stdout/stderr for `ms` so that proc->err() is up to date.
inline void pump_output(Subprocess& proc, int ms) {
  (void)proc.wait_for_line("\x01never printed\x01", std::chrono::milliseconds(ms));
}

/// True in sanitizer builds (their memory and time overheads change what tests may expect).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

/// Raises this process's soft RLIMIT_NOFILE to `wanted` (at most the hard limit) if it is lower;
/// returns the soft limit now.
inline std::uint64_t raise_open_file_limit(std::uint64_t wanted) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < wanted) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? wanted : std::min<rlim_t>(wanted, rl.rlim_max);
    (void)setrlimit(RLIMIT_NOFILE, &rl);
    (void)getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur == RLIM_INFINITY ? wanted : static_cast<std::uint64_t>(rl.rlim_cur);
}

/// A process's resident set (VmRSS in /proc/<pid>/status), in KiB; -1 if unreadable.
inline std::int64_t rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      std::int64_t kib = -1;
      in >> kib;
      return kib;
    }
    in.ignore(4096, '\n');
  }
  return -1;
}

/// Stops the server with SIGTERM and expects exit status 0. In sanitizer builds this is also
/// where their reports surface: TSan and LSan make the exit status non-zero.
inline void expect_clean_exit(ServerHandle& server) {
  server.proc->signal(SIGTERM);
  const int code = server.proc->wait(std::chrono::seconds(20));
  EXPECT_EQ(code, 0) << server.proc->err();
  EXPECT_EQ(server.proc->err().find("Sanitizer"), std::string::npos) << server.proc->err();
  EXPECT_EQ(server.proc->err().find("internal error"), std::string::npos) << server.proc->err();
}

}  // namespace llmload::testing
