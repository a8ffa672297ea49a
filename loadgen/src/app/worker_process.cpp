// A worker process of `llmload run --workers N`: see worker_process.hpp.
#include "worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "llmload/loadgen/config_error.hpp"
#include "stop_signal.hpp"

extern char** environ;

namespace llmload::app {
namespace {

int parse_field(std::string_view s, const char* what) {
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > 1000000) throw ConfigError(fmt::format("${} is malformed ({})", kWorkerRoleEnv, what));
    v = v * 10 + (c - '0');
  }
  if (s.empty()) throw ConfigError(fmt::format("${} is malformed ({})", kWorkerRoleEnv, what));
  return v;
}

// Reads the 8-byte start time from the parent; nullopt when a signal came first.
std::optional<WallTime> read_start(int fd) {
  std::int64_t ns = 0;
  std::size_t got = 0;
  while (got < sizeof ns) {
    if (stop_signal() != 0) return std::nullopt;  // wait_for_start sees the signal and stops
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, 50);
    if (r <= 0) continue;  // a timeout (check the signal again), or EINTR
    const ssize_t n = ::read(fd, reinterpret_cast<char*>(&ns) + got, sizeof ns - got);
    if (n == 0) throw ConfigError("the parent `llmload run --workers` exited before the common start: nothing sent");
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConfigError(fmt::format("reading the common start from the parent failed: {}", std::strerror(errno)));
    }
    got += static_cast<std::size_t>(n);
  }
  return WallTime(std::chrono::nanoseconds(ns));
}

}  // namespace

std::optional<WorkerRole> worker_role_from_env() {
  const char* v = std::getenv(kWorkerRoleEnv);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string s(v);
  WorkerRole role;
  std::size_t pos = 0;
  auto next = [&](const char* what) {
    const std::size_t slash = s.find('/', pos);
    if (slash == std::string::npos) throw ConfigError(fmt::format("${} is malformed ({})", kWorkerRoleEnv, what));
    const int f = parse_field(std::string_view(s).substr(pos, slash - pos), what);
    pos = slash + 1;
    return f;
  };
  role.index = next("index");
  role.count = next("count");
  role.ready_fd = next("ready fd");
  role.start_fd = next("start fd");
  role.output_dir = s.substr(pos);
  if (role.count < 2 || role.index >= role.count || role.output_dir.empty()) {
    throw ConfigError(fmt::format("${} is malformed", kWorkerRoleEnv));
  }
  return role;
}

RunHooks worker_hooks(const WorkerRole& role) {
  RunHooks hooks;
  hooks.print_report = false;
  hooks.gate_nothing_measured = false;  // the parent judges the merged run
  hooks.live_warnings = false;          // its setup's and end's warnings go to the log: the parent shows them
  hooks.ready = [role](std::optional<WallTime>) -> std::optional<WallTime> {
    const char byte = 'R';
    const bool told = ::write(role.ready_fd, &byte, 1) == 1;
    ::close(role.ready_fd);
    if (!told) throw ConfigError("the parent `llmload run --workers` is gone: not starting");
    const std::optional<WallTime> t = read_start(role.start_fd);
    ::close(role.start_fd);
    return t;
  };
  return hooks;
}

WorkerProcess::WorkerProcess(int index, int count, const std::string& output_dir, const std::string& log_path,
                             const std::vector<std::string>& argv)
    : index_(index), log_path_(log_path) {
  int rp[2];
  int sp[2];
  if (::pipe2(rp, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(sp, O_CLOEXEC) != 0) {
    ::close(rp[0]);
    ::close(rp[1]);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Everything the child needs is built before fork: after it, only system calls.
  const std::string role = fmt::format("{}={}/{}/{}/{}/{}", kWorkerRoleEnv, index, count, rp[1], sp[0], output_dir);
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, kWorkerRoleEnv, std::strlen(kWorkerRoleEnv)) != 0) env_strings.emplace_back(*e);
  }
  env_strings.push_back(role);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  const pid_t parent = ::getpid();

  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);  // the terminal's Ctrl-C reaches the parent only, which forwards it once
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::fcntl(rp[1], F_SETFD, 0);
    ::fcntl(sp[0], F_SETFD, 0);
    if (null_in >= 0) ::dup2(null_in, 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    ::execve("/proc/self/exe", argp.data(), envp.data());
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(rp[1]);
  ::close(sp[0]);
  if (log >= 0) ::close(log);
  if (null_in >= 0) ::close(null_in);
  ready_fd_ = rp[0];
  start_fd_ = sp[1];
  if (pid_ < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(fork_errno)));
  ::setpgid(pid_, pid_);
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  if (ready_fd_ >= 0) ::close(ready_fd_);
  if (start_fd_ >= 0) ::close(start_fd_);
}

bool WorkerProcess::poll_ready() {
  if (ready_ || ready_fd_ < 0) return ready_;
  pollfd p{ready_fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) > 0) {
    char byte = 0;
    ready_ = ::read(ready_fd_, &byte, 1) == 1;
    ::close(ready_fd_);
    ready_fd_ = -1;
  }
  return ready_;
}

bool WorkerProcess::send_start(WallTime t) {
  if (start_fd_ < 0) return false;
  const std::int64_t ns = t.time_since_epoch().count();
  const bool ok = ::write(start_fd_, &ns, sizeof ns) == static_cast<ssize_t>(sizeof ns);
  ::close(start_fd_);
  start_fd_ = -1;
  return ok;
}

void WorkerProcess::signal(int sig) {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, sig);
}

bool WorkerProcess::reap() {
  if (exit_code_) return true;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r != pid_) return false;
  exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return true;
}

bool WorkerProcess::reap_within(int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    if (reap()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return reap();
}

std::string log_tail(const std::string& path, std::size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind(kWarningLinePrefix, 0) == 0) continue;
    lines.push_back(line);
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += "    " + l + "\n";
  return out;
}

}  // namespace llmload::app
