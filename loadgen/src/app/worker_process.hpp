#pragma once
// One worker of `llmload run --workers N` (workers.hpp): a child process running this same binary
// with the parent's arguments, told its part by an environment variable, and the handshake that
// starts every worker together. The parent spawns the workers; each prepares (probes the server,
// calibrates, builds its part of the schedule), says it is ready through a pipe and waits on a
// second pipe for the common start time, which the parent sends once every worker is ready.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/loadgen/shard.hpp"
#include "run_command.hpp"

namespace llmload::app {

/// Internal: set by the parent in each worker's environment ("INDEX/COUNT/READY_FD/START_FD/DIR").
inline constexpr const char* kWorkerRoleEnv = "LLMLOAD_WORKER_ROLE";

/// What a worker process is told by its parent.
struct WorkerRole {
  int index = 0;
  int count = 1;
  int ready_fd = -1;  // the worker writes one byte here when it is ready
  int start_fd = -1;  // the parent writes the start (ns since the epoch, 8 bytes) here
  std::string output_dir;
};

/// The role of this process when it is a worker (kWorkerRoleEnv set); throws ConfigError when the
/// variable is malformed.
std::optional<WorkerRole> worker_role_from_env();

/// The hooks of a worker's run: no console report, no nothing-measured verdict (the parent judges
/// the merged run), and the ready/start handshake with the parent.
RunHooks worker_hooks(const WorkerRole& role);

/// A worker process as the parent sees it.
class WorkerProcess {
 public:
  /// Starts /proc/self/exe with `argv` (the parent's own, unredacted) in its own process group,
  /// stdout and stderr to `log_path`, SIGTERM when the parent dies. Throws std::runtime_error.
  WorkerProcess(int index, int count, const std::string& output_dir, const std::string& log_path,
                const std::vector<std::string>& argv);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  /// Non-blocking: true once the worker said it is ready.
  bool poll_ready();
  /// Sends the common start; false when the worker is gone.
  bool send_start(WallTime t);
  void signal(int sig);
  /// Non-blocking: true once the process has exited (exit_code() then set: its status, or
  /// 128 + the signal that killed it).
  bool reap();
  /// Waits for the exit, at most `ms` milliseconds.
  bool reap_within(int ms);

  bool ready() const { return ready_; }
  const std::optional<int>& exit_code() const { return exit_code_; }
  int index() const { return index_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

 private:
  int index_;
  pid_t pid_ = -1;
  int ready_fd_ = -1;  // parent's read end
  int start_fd_ = -1;  // parent's write end
  bool ready_ = false;
  std::optional<int> exit_code_;
  std::string log_path_;
};

/// How a worker's log (its stderr) begins a warning line: the parent shows each one once.
inline constexpr std::string_view kWarningLinePrefix = "llmload: warning: ";

/// The last `max_lines` lines of a worker's log (its stderr), for an error message, its warning
/// lines left out (the parent has shown them already).
std::string log_tail(const std::string& path, std::size_t max_lines = 8);

}  // namespace llmload::app
