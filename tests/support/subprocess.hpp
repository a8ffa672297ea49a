#pragma once
// Test helper: runs one of the project's real binaries as a child process, reads its stdout and
// stderr, and kills it when the handle goes out of scope. POSIX only; tests only.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llmload::testing {

/// Absolute path of a built binary, from the LLMLOAD_BIN_DIR compile definition.
std::string binary_path(const std::string& name);

class Subprocess {
 public:
  /// Starts argv[0] (a path, or a name looked up on PATH) with the given arguments; stdout and stderr are captured separately.
  /// `env` entries ("K=V") are added to the inherited environment. Throws on failure to start.
  explicit Subprocess(std::vector<std::string> argv, std::vector<std::string> env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  /// Reads stdout until a line containing `needle` appears; returns that line, or nullopt if the
  /// process exits or `timeout` passes first.
  std::optional<std::string> wait_for_line(const std::string& needle, std::chrono::milliseconds timeout);

  /// Sends a signal (default SIGTERM).
  void signal(int sig);

  /// Waits for exit (up to `timeout`, then SIGKILL); returns the exit code, or 128+signal.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  /// Everything read so far (wait() drains the rest first).
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  int pid() const { return pid_; }

 private:
  void pump(int timeout_ms);
  int pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::size_t scanned_ = 0;
  std::optional<int> exit_code_;
};

/// Runs a command to completion (bounded by `timeout`) and returns {exit code, stdout, stderr}.
struct RunResult {
  int exit_code;
  std::string out;
  std::string err;
};
RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout = std::chrono::seconds(120),
              std::vector<std::string> env = {});

/// Starts `llmload-server` on 127.0.0.1 with a free port and extra args; returns its base URL
/// ("http://127.0.0.1:PORT") once it is listening.
struct ServerHandle {
  std::unique_ptr<Subprocess> proc;
  std::string base_url;
  int port = 0;
};
ServerHandle start_server(const std::vector<std::string>& extra_args);

/// A fresh empty temporary directory, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Whole file as a string (throws if unreadable).
std::string read_file(const std::string& path);

}  // namespace llmload::testing
