// What every connection of one llmload-server shares (connection.hpp): the state built at
// start-up, and the fixed model's slots (--max-num-seqs with --latency-model fixed).
// <utility> first: Boost 1.74's awaitable.hpp needs it under C++20.
#include <utility>

// GCC 12 at -O2 reports -Wmismatched-new-delete on Asio's coroutine frames (see connection.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "connection.hpp"

#include <stdexcept>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace llmload::server {
namespace {

namespace net = boost::asio;
using error_code = boost::system::error_code;

/// The configuration with the engine's profile resolved: the default profile when none was given,
/// and max_model_len taken from it (what the CLI does for flags).
ServerConfig resolved(ServerConfig config) {
  if (config.latency.model == "engine" && !config.profile) {
    config.profile = load_profile(std::string(kDefaultProfile));
    config.max_model_len = config.profile->engine.max_model_len;
  }
  return config;
}
}  // namespace

net::awaitable<void> FixedSlots::acquire() {
  std::shared_ptr<Waiter> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ < limit_) {
      ++running_;
      publish();
      co_return;
    }
    w = std::make_shared<Waiter>(co_await net::this_coro::executor);
    w->timer.expires_at(net::steady_timer::time_point::max());
    waiters_.push_back(w);
    publish();
  }
  for (;;) {
    error_code ec;
    co_await w->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    std::lock_guard<std::mutex> lock(mu_);
    if (w->granted) co_return;
    w->timer.expires_at(net::steady_timer::time_point::max());  // woken without the slot: wait again
  }
}

void FixedSlots::release() {
  std::shared_ptr<Waiter> w;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiters_.empty()) {
      --running_;
      publish();
      return;
    }
    w = std::move(waiters_.front());
    waiters_.pop_front();
    w->granted = true;  // the slot passes to it: running_ unchanged
    publish();
  }
  // On the waiter's own executor (its connection's thread): it is already waiting on the timer.
  net::post(w->timer.get_executor(), [w] { w->timer.cancel(); });
}

void FixedSlots::publish() {
  metrics_.set_scheduler_state(running_, static_cast<std::int64_t>(waiters_.size()), 0.0);
}

SharedState::SharedState(ServerConfig config_in, std::unique_ptr<LatencyModel> model_in, std::int64_t started_unix)
    : config(resolved(std::move(config_in))),
      model(std::move(model_in)),
      router(config, started_unix),
      metrics(MetricsLabels{config.models.empty() ? std::string("llmload-mock") : config.models.front()},
              config.max_model_len, config.profile ? config.profile->engine.block_size : 16,
              config.profile ? config.profile->num_blocks() : 0),
      faults(config.faults, config.latency.seed),
      fixed_slots(config.latency.model == "fixed" ? config.fixed_max_num_seqs : 0, metrics) {
  if (!model) {
    if (config.latency.model != "engine") {
      throw std::invalid_argument("llmload-server: no latency model for '" + config.latency.model + "'");
    }
    engine = make_server_engine(config, metrics);
  }
}

}  // namespace llmload::server
