#pragma once
// The process's open-file limit (RLIMIT_NOFILE): each connection holds one descriptor, so
// llmload-server and llmload raise their soft limit to the hard limit at start-up; the server keeps its
// --max-connections below what the limit allows (HttpServer::listen).

#include <cstdint>
#include <optional>
#include <string>

namespace llmload {

struct OpenFileLimitChange {
  std::uint64_t before = 0;  ///< the soft limit found
  std::uint64_t after = 0;   ///< the soft limit now
  std::uint64_t hard = 0;    ///< the hard limit (a "unlimited" hard limit reads as the kernel's nr_open)
  std::string error;         ///< why raising failed; empty on success or when there was nothing to do
};

/// Raises the soft RLIMIT_NOFILE to the hard limit. Never throws.
OpenFileLimitChange raise_open_file_limit();

/// The current soft RLIMIT_NOFILE; nullopt when unlimited or unknown.
std::optional<std::uint64_t> open_file_limit();

/// The CPU cores this process may run on: its affinity mask (as `nproc` counts them, so `taskset`
/// and cpusets are honoured), else the online cores; at least 1. What `--workers auto` and the
/// merge's parallel reading size themselves by.
long usable_cores();

}  // namespace llmload
