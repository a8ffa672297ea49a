#pragma once
// Test environment for TLS: a throwaway CA and server certificates made with the openssl
// command, Debian's nginx terminating TLS in front of the real llmload-server, and loopback
// listeners that never answer (for connect timeouts). 127.0.0.1 only.

#include <chrono>
#include <memory>
#include <string>

#include "subprocess.hpp"

namespace llmload::testing {

/// Absolute path of a program on PATH or in the sbin folders (Debian's nginx is /usr/sbin/nginx,
/// often not on a user's PATH); "" when not found.
std::string find_program(const std::string& name);

/// Why the TLS environment cannot be built here (which program is missing, and how to get it),
/// or "" when nginx and openssl are both there.
std::string tls_tools_missing();

/// A free TCP port on 127.0.0.1 (bound, then released: a small race, fine for tests).
int free_port();

/// True once something accepts TCP connections on 127.0.0.1:port; polls for up to `timeout`.
bool wait_listening(int port, std::chrono::milliseconds timeout);

/// A throwaway CA and two server certificates it signed: "good" names 127.0.0.1 (IP) and
/// localhost (DNS); "other" names only other.invalid. Files in `dir`. Throws std::runtime_error
/// with openssl's output on failure.
struct TestPki {
  std::string ca_pem;
  std::string good_cert;
  std::string good_key;
  std::string other_cert;
  std::string other_key;
};
TestPki make_pki(const TempDir& dir);

/// nginx (one process, as the current user, everything under `dir`) terminating TLS on loopback
/// ports, and proxying to 127.0.0.1:backend_port unbuffered over keep-alive HTTP/1.1: the good
/// certificate, the other certificate, and the good one again with idle keep-alive connections
/// closed after 200 ms. Killed on destruction.
class TlsProxy {
 public:
  TlsProxy(const TempDir& dir, const TestPki& pki, int backend_port);
  ~TlsProxy();
  TlsProxy(const TlsProxy&) = delete;
  TlsProxy& operator=(const TlsProxy&) = delete;
  int good_port() const { return good_port_; }
  int other_port() const { return other_port_; }
  int short_keepalive_port() const { return short_keepalive_port_; }

 private:
  std::unique_ptr<Subprocess> proc_;
  int good_port_ = 0;
  int other_port_ = 0;
  int short_keepalive_port_ = 0;
};

/// llmload-server (fixed latency: TTFT 20 ms, ITL 5 ms) behind nginx with the test PKI.
struct TlsEnv {
  TlsEnv();
  TempDir dir;
  ServerHandle server;
  TestPki pki;
  std::unique_ptr<TlsProxy> proxy;
  std::string good_url(const std::string& host = "127.0.0.1") const;
  std::string other_url(const std::string& host = "127.0.0.1") const;
};

/// A loopback listener that never accepts: the kernel completes TCP connections into its backlog,
/// then nothing is ever read or written (a TLS handshake never gets an answer).
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A loopback listener whose accept queue is full (backlog 0, one connection parked in it): Linux
/// then drops new SYNs, so a connect gets no answer at all. `works()` is false when this kernel
/// answered a probe connection anyway (the test should skip then).
class FullBacklogListener {
 public:
  FullBacklogListener();
  ~FullBacklogListener();
  FullBacklogListener(const FullBacklogListener&) = delete;
  FullBacklogListener& operator=(const FullBacklogListener&) = delete;
  int port() const { return port_; }
  bool works() const { return works_; }

 private:
  int fd_ = -1;
  int filler_ = -1;
  int port_ = 0;
  bool works_ = false;
};

}  // namespace llmload::testing
