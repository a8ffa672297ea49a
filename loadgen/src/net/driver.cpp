#include <utility>  // before Asio (Boost 1.74 + C++20)

#include "llmload/loadgen/net/driver.hpp"
#include "response_collector.hpp"
#include "llmload/loadgen/net/asio_transport.hpp"

#include <csignal>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/stream_decoder.hpp"

namespace llmload::net {

namespace asio = boost::asio;

void drive(asio::io_context& ioc, RunController& controller, const DriveOptions& options) {
  asio::steady_timer timer(ioc);
  asio::steady_timer drain_timer(ioc);
  asio::steady_timer tick_timer(ioc);
  asio::steady_timer hard_timer(ioc);
  asio::signal_set signals(ioc);
  int signals_seen = 0;
  bool stopped = false;

  std::function<void()> pump;
  auto stop_all = [&] {
    if (stopped) return;
    stopped = true;
    timer.cancel();
    drain_timer.cancel();
    tick_timer.cancel();
    hard_timer.cancel();
    signals.cancel();
  };
  bool pump_posted = false;
  // At most this many request starts per turn of the event loop: when many requests are due at
  // once (lock-step completions, an offline start), reads already waiting in between get their
  // arrival times taken first. The requests keep their intended times either way.
  constexpr std::size_t kStartsPerTurn = 16;
  auto post_pump = [&] {
    if (pump_posted) return;
    pump_posted = true;
    asio::post(ioc, [&] {
      pump_posted = false;
      pump();
    });
  };
  pump = [&] {
    for (;;) {
      if (stopped) return;
      if (controller.poll(kStartsPerTurn)) return post_pump();
      if (controller.finished()) return stop_all();
      const auto wake = controller.wake_time();
      if (!wake) {
        timer.cancel();
        return;
      }
      const TimePoint now = std::chrono::time_point_cast<Nanos>(MonoClock::now());
      if (options.spin_lead.count() > 0 && *wake > now && *wake - now <= options.spin_lead) {
        // Due within the lead: spin to the due time, then release (the loop's next turn). A
        // release due now or past that poll() did not start (a cap on requests in flight, the
        // per-turn bound) goes through the timer below, never a busy loop.
        while (MonoClock::now() < *wake) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        }
        continue;
      }
      timer.expires_at(options.spin_lead.count() > 0 && *wake > now ? *wake - options.spin_lead : *wake);
      timer.async_wait([&](boost::system::error_code ec) {
        if (!ec) pump();
      });
      return;
    }
  };
  // A completion re-polls through the event loop, not inside the completion handler: reads that
  // are already waiting (other streams' tokens, with their arrival times) go first, and a burst of
  // completions releases its follow-up requests in one poll.
  controller.on_progress = [&] { post_pump(); };

  std::function<void()> arm_signals = [&] {
    signals.async_wait([&](boost::system::error_code ec, int sig) {
      if (ec) return;
      ++signals_seen;
      if (options.on_signal) options.on_signal(sig);
      if (signals_seen == 1) {
        fmt::print(stderr, "\nllmload: {} received: stopping; waiting up to {:.0f} s for {} requests in flight "
                   "(press Ctrl-C again to stop at once)\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM", std::chrono::duration<double>(options.drain_timeout).count(),
                   controller.in_flight());
        controller.interrupt();
        drain_timer.expires_after(options.drain_timeout);
        drain_timer.async_wait([&](boost::system::error_code e) {
          if (!e) controller.abort();
        });
        // Re-armed before pump(): when nothing is in flight the run ends in pump(), whose stop_all()
        // cancels this wait with the others (armed after it, the wait kept ioc.run() going until a
        // second signal).
        arm_signals();
        pump();
      } else {
        fmt::print(stderr, "llmload: second signal: aborting {} requests in flight\n", controller.in_flight());
        controller.abort();
      }
    });
  };
  if (options.handle_signals) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    arm_signals();
  }
  std::function<void()> arm_tick = [&] {
    tick_timer.expires_after(options.tick_interval);
    tick_timer.async_wait([&](boost::system::error_code ec) {
      if (ec || stopped) return;
      options.on_tick();
      post_pump();  // the tick may have stopped the controller
      arm_tick();
    });
  };
  asio::post(ioc, [&] {
    controller.begin();
    if (options.stop_requested && options.stop_requested()) controller.interrupt();
    if (options.hard_limit) {
      hard_timer.expires_after(*options.hard_limit);
      hard_timer.async_wait([&](boost::system::error_code ec) {
        if (ec || stopped) return;
        controller.cut_at_max_duration();
        post_pump();
      });
    }
    pump();
    if (options.on_tick && options.tick_interval.count() > 0 && !stopped) arm_tick();
  });
  // One handler at a time: a send that falls due while a burst of ready reads is handled (a
  // hundred streams' tokens from one epoll wait take milliseconds) is released between two of
  // them, not after the whole burst and the timer's turn. Its schedule lag stays about one
  // handler long (docs/benchmarks.md, open-loop validity); the check is one clock read per handler.
  // The same check between two sockets read in one handler (AsioTransport reads all the sockets
  // one wake-up found ready in one go).
  const auto due = [&] {
    if (stopped) return false;
    const auto wake = controller.wake_time();
    return wake && *wake <= std::chrono::time_point_cast<Nanos>(MonoClock::now());
  };
  set_dispatch_yield(due);
  struct ClearYield {
    ~ClearYield() { set_dispatch_yield({}); }
  } clear_yield;
  ioc.restart();
  while (ioc.run_one() > 0) {
    if (due()) pump();
  }
  controller.on_progress = nullptr;
}

ModelsInfo probe_models(asio::io_context& ioc, Transport& transport, const std::string& base_url,
                        const std::string& base_path, const std::string& host_header, const std::string& api_key,
                        const std::vector<std::pair<std::string, std::string>>& headers, bool model_given) {
  HttpRequest req;
  req.method = "GET";
  req.target = base_path + "/v1/models";
  req.set_headers(host_header, {{"Accept", "application/json"}}, api_key, headers);
  ResponseCollector c;
  transport.start(req, c);
  ioc.restart();
  ioc.run();
  const std::string tried = fmt::format("GET {}{}", base_url, "/v1/models");
  if (!c.complete || !c.error.ok()) {
    const std::string why = c.complete ? c.error.message : "no answer";
    // TLS failures already say how to fix them.
    const bool tls_advice = why.find("--ca-cert") != std::string::npos || why.find("--insecure") != std::string::npos;
    throw ConfigError(fmt::format("cannot reach the endpoint ({}): {}{}", tried, why,
                                  tls_advice ? "" : ". Is the server running, and is --base-url right?"));
  }
  ModelsInfo info;
  // Not a model list: an error without the model (the list is where it comes from), else what the
  // probe saw, for a warning.
  const auto not_a_list = [&](std::string what) {
    if (!model_given) throw ConfigError(what + (c.status == 401 || c.status == 403 ? "" : "; or pass --model"));
    info.problem = std::move(what);
    return info;
  };
  if (c.status == 401 || c.status == 403) {
    return not_a_list(fmt::format("the endpoint refused the API key ({} returned HTTP {}: {}): set --api-key or "
                                  "OPENAI_API_KEY",
                                  tried, c.status, error_message_from_body(c.body)));
  }
  if (c.status >= 300 && c.status < 400) {
    return not_a_list(fmt::format("{} returned HTTP {}: the server redirects to '{}' and llmload does not follow "
                                  "redirects: give that address (without /v1/models) as --base-url",
                                  tried, c.status, c.location.empty() ? std::string("(no Location)") : c.location));
  }
  if (!c.content_encoding.empty() && c.content_encoding != "identity") {
    return not_a_list(fmt::format("{} answered compressed (Content-Encoding: {}) though llmload asked for no "
                                  "compression: turn compression off for this route (a proxy or gateway in front of "
                                  "the server?)",
                                  tried, c.content_encoding));
  }
  if (c.status != 200) {
    return not_a_list(fmt::format("no model list: {} returned HTTP {}: {}", tried, c.status,
                                  error_message_from_body(c.body)));
  }
  auto j = nlohmann::json::parse(c.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array()) {
    return not_a_list(fmt::format("no model list: {} did not return one ({{\"data\": [...]}}): {}", tried,
                                  error_message_from_body(c.body, 120)));
  }
  info.raw = c.body;
  for (const auto& m : j["data"]) {
    if (m.is_object() && m.contains("id") && m["id"].is_string()) info.ids.push_back(m["id"].get<std::string>());
  }
  return info;
}

std::optional<std::int64_t> tokenize_count(asio::io_context& ioc, Transport& transport, const TokenizeTarget& target,
                                           const std::string& prompt) {
  nlohmann::json body = {{"model", target.model}};
  if (target.chat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
    body["add_generation_prompt"] = true;
  } else {
    body["prompt"] = prompt;
  }
  HttpRequest req;
  req.method = "POST";
  req.target = target.base_path + "/tokenize";
  req.set_headers(target.host_header, {{"Content-Type", "application/json"}, {"Accept", "application/json"}},
                  target.api_key, target.headers);
  req.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ResponseCollector c;
  transport.start(req, c);
  ioc.restart();
  ioc.run();
  if (!c.complete || !c.error.ok()) {
    throw ConfigError(fmt::format("POST {}/tokenize failed: {}", target.base_path,
                                  c.complete ? c.error.message : "no answer"));
  }
  if (c.status != 200) return std::nullopt;
  auto j = nlohmann::json::parse(c.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto it = j.find("count");
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

}  // namespace llmload::net
