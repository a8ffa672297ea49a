#include "llmload_run.hpp"

#include <filesystem>
#include <sstream>

namespace llmload::testing {

LlmloadRun run_llmload(const TempDir& dir, const std::vector<std::string>& args, const std::vector<std::string>& env,
                       std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {binary_path("llmload"), "run", "--output", dir.path()};
  argv.insert(argv.end(), args.begin(), args.end());
  LlmloadRun out;
  out.proc = run(argv, timeout, env);
  if (std::filesystem::exists(dir.file("result.json"))) {
    out.result = nlohmann::json::parse(read_file(dir.file("result.json")));
  }
  if (std::filesystem::exists(dir.file("requests.jsonl"))) {
    std::istringstream in(read_file(dir.file("requests.jsonl")));
    std::string line;
    while (std::getline(in, line)) out.records.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace llmload::testing
