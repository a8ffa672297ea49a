#include "llmload/common/process_limits.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

namespace llmload {
namespace {

/// Linux refuses an "unlimited" RLIMIT_NOFILE; the real ceiling is fs.nr_open.
std::uint64_t finite(rlim_t value) {
  if (value != RLIM_INFINITY) return static_cast<std::uint64_t>(value);
  std::uint64_t nr_open = 1048576;  // the kernel's default
  std::ifstream in("/proc/sys/fs/nr_open");
  in >> nr_open;
  return nr_open;
}

}  // namespace

OpenFileLimitChange raise_open_file_limit() {
  OpenFileLimitChange change;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    change.error = std::string("getrlimit: ") + std::strerror(errno);
    return change;
  }
  change.before = finite(rl.rlim_cur);
  change.hard = finite(rl.rlim_max);
  change.after = change.before;
  if (rl.rlim_cur == rl.rlim_max || change.before >= change.hard) return change;
  rl.rlim_cur = static_cast<rlim_t>(change.hard);
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    change.error = std::string("setrlimit: ") + std::strerror(errno);
    return change;
  }
  change.after = change.hard;
  return change;
}

std::optional<std::uint64_t> open_file_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(rl.rlim_cur);
}

long usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    if (const int n = CPU_COUNT(&set); n > 0) return n;
  }
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) return online;
  return std::max(1L, static_cast<long>(std::thread::hardware_concurrency()));
}

}  // namespace llmload
