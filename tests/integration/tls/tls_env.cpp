#include "tls_env.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

namespace llmload::testing {

namespace {

using namespace std::chrono_literals;

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A socket bound to 127.0.0.1 on an ephemeral port; returns {fd, port}.
std::pair<int, int> bind_loopback() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in a = loopback(0);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("bind 127.0.0.1:0 failed");
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return {fd, ntohs(a.sin_port)};
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {find_program("openssl")};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run(argv, 30s);
  if (r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error("openssl failed (" + cmd + "): " + r.out + r.err);
  }
}

}  // namespace

std::string find_program(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string d;
    while (std::getline(ss, d, ':')) {
      if (!d.empty()) dirs.push_back(d);
    }
  }
  for (const char* d : {"/usr/sbin", "/usr/local/sbin", "/sbin"}) dirs.emplace_back(d);
  for (const auto& d : dirs) {
    const std::string p = d + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string tls_tools_missing() {
  std::string missing;
  for (const char* tool : {"nginx", "openssl"}) {
    if (find_program(tool).empty()) missing += std::string(missing.empty() ? "" : ", ") + tool;
  }
  if (missing.empty()) return "";
  return "needs " + missing + " (Debian packages nginx and openssl; scripts/setup.sh installs them)";
}

int free_port() {
  auto [fd, port] = bind_loopback();
  ::close(fd);
  return port;
}

bool wait_listening(int port, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback(port);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TestPki make_pki(const TempDir& dir) {
  const std::string cnf = dir.file("pki.cnf");
  write_file(cnf, R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = llmload test
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[good_ext]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[other_ext]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:other.invalid
)");
  TestPki p;
  p.ca_pem = dir.file("ca.pem");
  const std::string ca_key = dir.file("ca.key");
  // EC P-256 keys: quick to make, and what most servers use.
  const std::vector<std::string> newkey = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::string> ca = {"req", "-x509", "-config", cnf, "-extensions", "ca_ext", "-days", "2", "-subj",
                                 "/CN=llmload test CA", "-keyout", ca_key, "-out", p.ca_pem};
  ca.insert(ca.end(), newkey.begin(), newkey.end());
  openssl(ca);
  auto leaf = [&](const std::string& name, const std::string& cn, std::string& cert, std::string& key) {
    cert = dir.file(name + ".pem");
    key = dir.file(name + ".key");
    const std::string csr = dir.file(name + ".csr");
    std::vector<std::string> req = {"req", "-new", "-config", cnf, "-subj", "/CN=" + cn, "-keyout", key, "-out", csr};
    req.insert(req.end(), newkey.begin(), newkey.end());
    openssl(req);
    openssl({"x509", "-req", "-in", csr, "-CA", p.ca_pem, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
             "-extfile", cnf, "-extensions", name + "_ext", "-out", cert});
  };
  leaf("good", "localhost", p.good_cert, p.good_key);
  leaf("other", "other.invalid", p.other_cert, p.other_key);
  return p;
}

TlsProxy::TlsProxy(const TempDir& dir, const TestPki& pki, int backend_port) {
  const std::string nginx = find_program("nginx");
  if (nginx.empty()) throw std::runtime_error("nginx not found");
  good_port_ = free_port();
  other_port_ = free_port();
  while (other_port_ == good_port_) other_port_ = free_port();
  short_keepalive_port_ = free_port();
  while (short_keepalive_port_ == good_port_ || short_keepalive_port_ == other_port_) short_keepalive_port_ = free_port();
  const std::string d = dir.path();
  auto server_block = [&](int port, const std::string& cert, const std::string& key,
                          const std::string& keepalive_timeout = "60s") {
    return "  server {\n"
           "    listen 127.0.0.1:" + std::to_string(port) + " ssl;\n"
           "    ssl_certificate " + cert + ";\n"
           "    ssl_certificate_key " + key + ";\n"
           "    keepalive_requests 10000;\n"
           "    keepalive_timeout " + keepalive_timeout + ";\n"
           "    location / {\n"
           "      proxy_pass http://backend;\n"
           "      proxy_http_version 1.1;\n"
           "      proxy_set_header Connection \"\";\n"
           "      proxy_buffering off;\n"
           "      proxy_read_timeout 60s;\n"
           "    }\n"
           "  }\n";
  };
  // One process (no master/worker split), so killing it leaves nothing behind; every path it
  // writes is in the temporary directory.
  const std::string conf = "daemon off;\n"
                           "master_process off;\n"
                           "worker_processes 1;\n"
                           "pid " + d + "/nginx.pid;\n"
                           "error_log " + d + "/nginx-error.log info;\n"
                           "events { worker_connections 512; }\n"
                           "http {\n"
                           "  access_log off;\n"
                           "  client_body_temp_path " + d + "/client_body;\n"
                           "  proxy_temp_path " + d + "/proxy;\n"
                           "  fastcgi_temp_path " + d + "/fastcgi;\n"
                           "  uwsgi_temp_path " + d + "/uwsgi;\n"
                           "  scgi_temp_path " + d + "/scgi;\n"
                           "  upstream backend {\n"
                           "    server 127.0.0.1:" + std::to_string(backend_port) + ";\n"
                           "    keepalive 32;\n"
                           "  }\n" +
                           server_block(good_port_, pki.good_cert, pki.good_key) +
                           server_block(other_port_, pki.other_cert, pki.other_key) +
                           server_block(short_keepalive_port_, pki.good_cert, pki.good_key, "200ms") + "}\n";
  write_file(dir.file("nginx.conf"), conf);
  proc_ = std::make_unique<Subprocess>(
      std::vector<std::string>{nginx, "-p", d, "-c", dir.file("nginx.conf"), "-e", dir.file("nginx-error.log")});
  if (!wait_listening(good_port_, 10s) || !wait_listening(other_port_, 2s) || !wait_listening(short_keepalive_port_, 2s)) {
    proc_->signal(SIGKILL);
    proc_->wait(2s);
    std::string log;
    try {
      log = read_file(dir.file("nginx-error.log"));
    } catch (const std::exception&) {
    }
    throw std::runtime_error("nginx did not start: " + proc_->err() + log);
  }
}

TlsProxy::~TlsProxy() {
  if (proc_) {
    proc_->signal(SIGTERM);
    proc_->wait(3s);
  }
}

TlsEnv::TlsEnv()
    : server(start_server({"--latency-model", "fixed", "--ttft", "20ms", "--itl", "5ms"})), pki(make_pki(dir)) {
  proxy = std::make_unique<TlsProxy>(dir, pki, server.port);
}

std::string TlsEnv::good_url(const std::string& host) const {
  return "https://" + host + ":" + std::to_string(proxy->good_port());
}

std::string TlsEnv::other_url(const std::string& host) const {
  return "https://" + host + ":" + std::to_string(proxy->other_port());
}

SilentListener::SilentListener() {
  std::tie(fd_, port_) = bind_loopback();
  if (::listen(fd_, 16) != 0) throw std::runtime_error("listen failed");
}

SilentListener::~SilentListener() { ::close(fd_); }

FullBacklogListener::FullBacklogListener() {
  std::tie(fd_, port_) = bind_loopback();
  if (::listen(fd_, 0) != 0) throw std::runtime_error("listen failed");
  // Backlog 0 holds one completed connection: park one there, never accepted.
  filler_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port_);
  if (::connect(filler_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
  // Now a probe connection must get no answer for a while.
  const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int rc = ::connect(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{probe, POLLOUT, 0};
    works_ = ::poll(&p, 1, 300) == 0;  // still connecting after 300 ms: SYNs are dropped
  }
  ::close(probe);
}

FullBacklogListener::~FullBacklogListener() {
  if (filler_ >= 0) ::close(filler_);
  ::close(fd_);
}

}  // namespace llmload::testing
