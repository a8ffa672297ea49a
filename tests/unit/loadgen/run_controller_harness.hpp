#pragma once
// What the RunController tests share (run_controller_test.cpp, run_controller_phases_test.cpp):
// a controller on a manual clock against the scripted FakeServer, and small helpers.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fake_server.hpp"
#include "llmload/loadgen/pacer.hpp"
#include "llmload/loadgen/run_controller.hpp"

namespace llmload::run_controller_test {

using testing::FakeServer;

struct Harness {
  explicit Harness(ScenarioConfig c, FakeServer::ScriptFn fn) : cfg(std::move(c)), server(clock, std::move(fn)) {
    cfg.model = "m";
    cfg.validate();
    pacer = make_pacer(cfg);
    builder = std::make_unique<RequestBuilder>(cfg, "", "h");
    ctl = std::make_unique<RunController>(cfg, clock, *pacer, server, *builder);
  }
  analysis::RunMetrics run() {
    server.run(*ctl);
    EXPECT_TRUE(ctl->finished());
    return ctl->metrics();
  }
  ScenarioConfig cfg;
  ManualClock clock;
  FakeServer server;
  std::unique_ptr<Pacer> pacer;
  std::unique_ptr<RequestBuilder> builder;
  std::unique_ptr<RunController> ctl;
};

inline ScenarioConfig concurrency(std::int64_t c, std::int64_t n) {
  ScenarioConfig cfg;
  cfg.kind = ScenarioKind::kConcurrency;
  cfg.concurrency = c;
  cfg.num_requests = n;
  return cfg;
}

inline double ms(std::int64_t us) { return static_cast<double>(us) / 1e3; }

inline std::vector<std::string> codes(const analysis::RunMetrics& m) {
  std::vector<std::string> out;
  for (const auto& r : m.validity_reasons) out.push_back(r.code);
  return out;
}
inline bool has_code(const analysis::RunMetrics& m, const std::string& code) {
  const auto c = codes(m);
  return std::find(c.begin(), c.end(), code) != c.end();
}

}  // namespace llmload::run_controller_test
