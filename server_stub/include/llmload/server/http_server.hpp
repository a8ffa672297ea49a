#pragma once
// The HTTP/1.1 front end (Boost.Beast on Boost.Asio, C++20 coroutines). Asio stays out of this
// header (pimpl) so that only http_server.cpp (listener) and connection.cpp (one connection) pay
// for it.
//
// Threading: listen() and run() are called from one thread (the owner); run() blocks. With
// config.io_threads = 1 the owner's thread runs everything; with N > 1 it runs the accept loop,
// and N threads each run an io_context of their own, to which accepted connections are dealt in
// turn (a connection stays on its thread: no strand, no io_context shared between threads, so no
// thread waits on another's lock or wake-up). stop() may be called from any thread. Each
// connection is one coroutine.
// What connections share (config, router, latency model, counters) is immutable or atomic.
//
// Limits (see docs/server.md): header/body/keep-alive deadlines per connection, at most
// config.max_connections open connections (more get 503), heads up to config.header_limit bytes
// and config.header_fields_limit fields, bodies up to config.body_limit bytes.

#include <cstdint>
#include <memory>
#include <string>

#include "llmload/server/latency_model.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

class HttpServer {
 public:
  /// `model` is null for the engine model (config.latency.model == "engine"): the server then
  /// runs the engine simulator. Throws std::runtime_error for --device cuda without a usable GPU.
  HttpServer(ServerConfig config, std::unique_ptr<LatencyModel> model);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Resolves and binds config.host:config.port and starts listening; returns the bound port.
  /// With `handle_signals`, SIGINT and SIGTERM (from here on) make run() return.
  /// Throws std::runtime_error (the message names the address) when it cannot listen, and,
  /// before binding anything, when the address is not loopback and !config.allow_remote (the
  /// message names --allow-remote). Lowers max_connections to fit the current RLIMIT_NOFILE.
  std::uint16_t listen(bool handle_signals);

  /// "http://HOST:PORT" of the bound socket (after listen()).
  std::string url() const;

  /// With the engine model: its profile, KV capacity and step timer, for the start-up log; else "".
  std::string engine_description() const;

  /// Serves until stop() or a handled signal. Open connections are closed when it returns.
  void run();

  /// Makes run() return soon: stops accepting and stops the io threads. Thread-safe.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmload::server
