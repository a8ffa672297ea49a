#pragma once
// Shared helpers of the server integration tests.

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

}  // namespace llmload::testing
