#include "subprocess.hpp"

#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace llmload::testing {

std::string binary_path(const std::string& name) { return std::string(LLMLOAD_BIN_DIR) + "/" + name; }

Subprocess::Subprocess(std::vector<std::string> argv, std::vector<std::string> env) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (auto& e : env) {
    // An entry replaces the inherited one of the same name (two PATH= entries: which one a
    // program sees depends on the program).
    const auto eq = e.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("Subprocess: environment entry '" + e + "' has no '='");
    const std::string key = e.substr(0, eq + 1);
    envs.erase(std::remove_if(envs.begin(), envs.end(), [&](const std::string& x) { return x.rfind(key, 0) == 0; }),
               envs.end());
    envs.push_back(e);
  }
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& e : envs) envp.push_back(e.data());
    envp.push_back(nullptr);
    // A bare name (curl, python3) is looked up on PATH, like a shell would.
    execvpe(args[0], args.data(), envp.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  fcntl(err_fd_, F_SETFL, O_NONBLOCK);
}

Subprocess::~Subprocess() {
  if (!exit_code_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

void Subprocess::pump(int timeout_ms) {
  pollfd fds[2];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  if (n == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return;
  }
  if (poll(fds, static_cast<nfds_t>(n), timeout_ms) <= 0) return;
  char buf[65536];
  for (int i = 0; i < n; ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const bool is_out = fds[i].fd == out_fd_;
    ssize_t r = read(fds[i].fd, buf, sizeof buf);
    if (r > 0) {
      (is_out ? out_ : err_).append(buf, static_cast<std::size_t>(r));
    } else if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      close(fds[i].fd);
      (is_out ? out_fd_ : err_fd_) = -1;
    }
  }
}

std::optional<std::string> Subprocess::wait_for_line(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::size_t pos;
    while ((pos = out_.find('\n', scanned_)) != std::string::npos) {
      std::string line = out_.substr(scanned_, pos - scanned_);
      scanned_ = pos + 1;
      if (line.find(needle) != std::string::npos) return line;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    if (out_fd_ < 0) {
      return std::nullopt;
    }
    pump(50);
  }
}

void Subprocess::signal(int sig) {
  if (!exit_code_ && pid_ > 0) kill(pid_, sig);
}

int Subprocess::wait(std::chrono::milliseconds timeout) {
  if (exit_code_) return *exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    pump(20);
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
  }
  while (out_fd_ >= 0 || err_fd_ >= 0) pump(20);
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return *exit_code_;
}

RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout, std::vector<std::string> env) {
  Subprocess p(std::move(argv), std::move(env));
  int code = p.wait(timeout);
  return {code, p.out(), p.err()};
}

ServerHandle start_server(const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {binary_path("llmload-server"), "--host", "127.0.0.1", "--port", "0"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  ServerHandle h;
  h.proc = std::make_unique<Subprocess>(argv);
  auto line = h.proc->wait_for_line("listening on", std::chrono::seconds(20));
  if (!line) {
    h.proc->wait(std::chrono::seconds(2));
    throw std::runtime_error("llmload-server did not start: " + h.proc->err());
  }
  std::smatch m;
  static const std::regex re(R"((http://127\.0\.0\.1:(\d+)))");
  if (!std::regex_search(*line, m, re)) throw std::runtime_error("cannot parse server line: " + *line);
  h.base_url = m[1];
  h.port = std::stoi(m[2]);
  return h;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "llmload-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace llmload::testing
