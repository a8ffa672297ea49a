#pragma once
// A scripted fake transport on a manual clock: a discrete-event simulation of a server, so
// pacing, recording and metrics are tested with exact times and no sockets.

#include <functional>
#include <map>
#include <string>

#include <fmt/format.h>

#include "llmload/loadgen/clock.hpp"
#include "llmload/loadgen/run_controller.hpp"
#include "llmload/loadgen/transport.hpp"

namespace llmload::testing {

/// How the fake server answers one request (times relative to start()).
struct Script {
  Nanos send_delay{0};  // client-side delay before the request is written (a stalled client/socket)
  Nanos ttft{std::chrono::milliseconds(50)};
  Nanos itl{std::chrono::milliseconds(10)};
  int tokens = 4;
  int tokens_per_event = 1;  // >1: several tokens per event (with per-chunk usage)
  int status = 200;
  bool send_usage = true;
  bool send_done = true;
  std::string error_body;  // for status != 200
  bool chat = false;
};

class FakeServer final : public Transport {
 public:
  using ScriptFn = std::function<Script(std::uint64_t request_number, TimePoint now)>;
  FakeServer(ManualClock& clock, ScriptFn script) : clock_(clock), script_(std::move(script)) {}

  void start(const HttpRequest& req, ResponseObserver& obs) override {
    requests.push_back(req);
    const std::uint64_t n = started_++;
    Script s = script_(n, clock_.now());
    ++in_flight_;
    max_in_flight = std::max(max_in_flight, in_flight_);
    const TimePoint t0 = clock_.now() + s.send_delay;
    at(t0, [&obs, t0] { obs.on_sent(t0); });
    if (s.status != 200) {
      at(t0 + s.ttft, [this, &obs, s, t = t0 + s.ttft] {
        obs.on_headers(t, s.status, "application/json");
        obs.on_body(t, s.error_body);
        finish(obs, t);
      });
      return;
    }
    at(t0 + s.ttft, [&obs, t = t0 + s.ttft] { obs.on_headers(t, 200, "text/event-stream"); });
    int sent = 0;
    int k = 0;
    while (sent < s.tokens) {
      const int n_ev = std::min(s.tokens_per_event, s.tokens - sent);
      sent += n_ev;
      const TimePoint t = t0 + s.ttft + k * s.itl;
      std::string ev;
      if (s.chat && k == 0) ev += "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
      const std::string usage =
          s.tokens_per_event > 1 ? fmt::format(",\"usage\":{{\"prompt_tokens\":7,\"completion_tokens\":{}}}", sent) : "";
      ev += s.chat ? fmt::format("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" w{}\"}}}}]{}}}\n\n", k, usage)
                   : fmt::format("data: {{\"choices\":[{{\"index\":0,\"text\":\" w{}\"}}]{}}}\n\n", k, usage);
      at(t, [&obs, t, ev] { obs.on_body(t, ev); });
      ++k;
    }
    const TimePoint end = t0 + s.ttft + (k - 1) * s.itl;
    std::string tail;
    if (s.send_usage) {
      tail += fmt::format("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":7,\"completion_tokens\":{}}}}}\n\n",
                          s.tokens);
    }
    if (s.send_done) tail += "data: [DONE]\n\n";
    at(end, [this, &obs, end, tail] {
      if (!tail.empty()) obs.on_body(end, tail);
      finish(obs, end);
    });
  }

  void cancel_all() override {}

  /// Runs the controller to completion in simulated time.
  void run(RunController& ctl) {
    ctl.begin();
    ctl.poll();
    int guard = 0;
    while (!ctl.finished() && ++guard < 10'000'000) {
      std::optional<TimePoint> next = ctl.wake_time();
      if (!events_.empty() && (!next || events_.begin()->first < *next)) next = events_.begin()->first;
      if (!next) break;  // deadlock: nothing can happen
      clock_.advance_to(*next);
      while (!events_.empty() && events_.begin()->first <= clock_.now()) {
        auto fn = std::move(events_.begin()->second);
        events_.erase(events_.begin());
        fn();
      }
      ctl.poll();
    }
  }

  std::vector<HttpRequest> requests;
  int max_in_flight = 0;

 private:
  void at(TimePoint t, std::function<void()> fn) { events_.emplace(t, std::move(fn)); }
  void finish(ResponseObserver& obs, TimePoint t) {
    --in_flight_;
    obs.on_complete(t, {});
  }

  ManualClock& clock_;
  ScriptFn script_;
  std::multimap<TimePoint, std::function<void()>> events_;
  std::uint64_t started_ = 0;
  int in_flight_ = 0;
};

}  // namespace llmload::testing
