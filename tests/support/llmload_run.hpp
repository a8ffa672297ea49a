#pragma once
// Runs the real `llmload run` into a temporary directory and reads back what it wrote: the
// integration tests of the load generator and of the server's engine share this.

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "subprocess.hpp"

namespace llmload::testing {

struct LlmloadRun {
  RunResult proc;
  nlohmann::json result;                ///< result.json, or null when it was not written
  std::vector<nlohmann::json> records;  ///< requests.jsonl, one object per line
};

/// `llmload run --output DIR ARGS...` with extra environment entries ("K=V"), bounded by `timeout`.
LlmloadRun run_llmload(const TempDir& dir, const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(240));

}  // namespace llmload::testing
