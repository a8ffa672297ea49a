#pragma once
// Private to llmload-server's HTTP layer (connection.cpp): how one request's tokens travel from
// the engine thread to its connection's coroutine. Includes Asio; keep it out of public headers.
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "llmload/server/engine/runtime.hpp"

namespace llmload::server {

/// One request's tokens, handed from the engine thread to the connection's coroutine. The engine
/// calls the EngineListener methods; the coroutine waits in next(). A wake-up is a handler posted
/// to the connection's executor that cancels the coroutine's wait: it runs either before the
/// coroutine looks at the queue (which then sees the token) or after it started waiting.
class EngineStream final : public EngineListener, public std::enable_shared_from_this<EngineStream> {
 public:
  explicit EngineStream(boost::asio::any_io_executor executor) : executor_(std::move(executor)), timer_(executor_) {}

  struct Facts {
    std::optional<EngineClock::time_point> scheduled;
    std::int64_t cached_tokens = 0;
    std::int64_t preemptions = 0;
  };
  struct Next {
    bool failed = false;
    bool client_gone = false;  ///< failed because the client disconnected: nobody to answer
    std::string reason;
  };

  void on_scheduled(EngineClock::time_point at, std::int64_t cached_tokens) override {
    std::lock_guard lock(mutex_);
    facts_.scheduled = at;
    facts_.cached_tokens = cached_tokens;
  }
  void on_token(std::int64_t /*index*/, bool /*last*/, EngineClock::time_point /*at*/) override {
    {
      std::lock_guard lock(mutex_);
      ++tokens_ready_;
    }
    wake();
  }
  void on_preempted() override {
    std::lock_guard lock(mutex_);
    ++facts_.preemptions;
  }
  void on_failed(const std::string& reason) override {
    {
      std::lock_guard lock(mutex_);
      if (!failed_) failed_ = reason;
    }
    wake();
  }

  /// The connection saw the client close (connection executor).
  void client_gone() {
    {
      std::lock_guard lock(mutex_);
      if (!failed_) {
        failed_ = "the client disconnected";
        client_gone_ = true;
      }
    }
    wake();
  }

  /// Whether the request is still being served by its connection. Cleared when it ends, so that
  /// a disconnect watcher that fires later does nothing. Connection executor only.
  bool attached() const { return attached_; }
  void detach() { attached_ = false; }

  /// Waits for the next token (or the failure). Runs on the connection's executor.
  boost::asio::awaitable<Next> next() {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (tokens_ready_ > tokens_taken_) {
          ++tokens_taken_;
          co_return Next{};
        }
        if (failed_) co_return Next{true, client_gone_, *failed_};
      }
      timer_.expires_at(EngineClock::time_point::max());
      boost::system::error_code ec;
      co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }
  }

  Facts facts() const {
    std::lock_guard lock(mutex_);
    return facts_;
  }

 private:
  void wake() {
    boost::asio::post(executor_, [self = shared_from_this()] { self->timer_.cancel(); });
  }

  boost::asio::any_io_executor executor_;
  boost::asio::steady_timer timer_;  // used on executor_ only
  mutable std::mutex mutex_;
  std::int64_t tokens_ready_ = 0;  // guarded by mutex_
  std::int64_t tokens_taken_ = 0;  // guarded by mutex_
  std::optional<std::string> failed_;  // guarded by mutex_
  bool client_gone_ = false;            // guarded by mutex_
  Facts facts_;                         // guarded by mutex_
  bool attached_ = true;                // connection executor only
};

}  // namespace llmload::server
