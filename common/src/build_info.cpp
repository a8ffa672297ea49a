#include "llmload/common/build_info.hpp"

#include <sys/utsname.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "llmload_git_commit.h"

namespace llmload {

const char* git_commit() { return LLMLOAD_GIT_COMMIT; }

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
  {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("model name", 0) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) h.cpu_model = trim(line.substr(colon + 1));
        break;
      }
    }
  }
  utsname u{};
  if (uname(&u) == 0) h.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  std::map<std::string, int> models;  // "NVIDIA H100 80GB HBM3" -> count
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream f(d.path() / "information");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("Model:", 0) == 0) {
        ++models[trim(line.substr(6))];
        break;
      }
    }
  }
  for (const auto& [model, n] : models) {
    if (!h.gpus.empty()) h.gpus += ", ";
    h.gpus += (n > 1 ? std::to_string(n) + " x " : std::string()) + model;
  }
  if (h.gpus.empty()) h.gpus = "none";
  return h;
}

}  // namespace llmload
