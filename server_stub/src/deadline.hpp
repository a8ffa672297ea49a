#pragma once
// Private to llmload-server's HTTP layer (connection.cpp): a deadline for a connection's socket
// operations. Includes Asio; keep it out of public headers.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include <chrono>
#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

namespace llmload::server {

/// A deadline for a connection's socket operations. When it passes, the socket's pending
/// operations are cancelled (they complete with operation_aborted) and expired() turns true.
/// Unlike beast::tcp_stream's timeout it leaves the socket open, so a 408 can still be sent.
/// An operation started after expiry would not be cancelled: callers check expired() before
/// each socket operation (Connection::read, Connection::send).
/// Threading: everything, the timer's handler included, runs on the connection's executor.
class Deadline {
 public:
  explicit Deadline(boost::asio::ip::tcp::socket& socket)
      : state_(std::make_shared<State>(State{&socket, 0, false})), timer_(socket.get_executor()) {}

  void arm(std::chrono::nanoseconds after) {
    ++state_->generation;
    state_->expired = false;
    timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(after));
    // The handler may run after this Deadline is gone (the timer's destructor cannot take back
    // a handler already queued), hence the weak_ptr; a stale handler is told by its generation.
    timer_.async_wait([weak = std::weak_ptr<State>(state_),
                       generation = state_->generation](const boost::system::error_code& ec) {
      if (ec) return;
      const auto state = weak.lock();
      if (!state || state->generation != generation) return;
      state->expired = true;
      boost::system::error_code ignored;
      state->socket->cancel(ignored);
    });
  }

  void disarm() {
    ++state_->generation;
    state_->expired = false;
    timer_.cancel();
  }

  bool expired() const { return state_->expired; }

 private:
  struct State {
    boost::asio::ip::tcp::socket* socket;
    std::uint64_t generation;
    bool expired;
  };
  std::shared_ptr<State> state_;
  boost::asio::steady_timer timer_;
};

}  // namespace llmload::server
