#include "llmload/loadgen/run_controller.hpp"

#include <algorithm>

#include "llmload/loadgen/redact.hpp"

namespace llmload {

/// One request in flight: its tracker, and a hand-back to the controller on completion.
class RunController::Slot final : public ResponseObserver {
 public:
  Slot(RunController& owner, std::uint64_t index, RequestTracker tracker)
      : owner_(owner), index_(index), tracker_(std::move(tracker)) {}
  void on_sent(TimePoint t) override { tracker_.on_sent(t); }
  void on_header_field(std::string_view name, std::string_view value) override {
    tracker_.on_header_field(name, value);
  }
  void on_headers(TimePoint t, int status, std::string_view ct) override { tracker_.on_headers(t, status, ct); }
  bool on_body(TimePoint t, std::string_view bytes) override { return tracker_.on_body(t, bytes); }
  void on_complete(TimePoint t, const TransportError& e) override {
    tracker_.on_complete(t, e);
    owner_.complete(index_, t);  // may destroy *this later (deferred), never during this call
  }
  RequestTracker& tracker() { return tracker_; }

 private:
  RunController& owner_;
  std::uint64_t index_;
  RequestTracker tracker_;
};

RunController::RunController(const ScenarioConfig& cfg, const Clock& clock, Pacer& pacer, Transport& transport,
                             const RequestBuilder& builder)
    : cfg_(cfg), clock_(clock), pacer_(pacer), transport_(transport), builder_(builder) {}

RunController::~RunController() = default;

void RunController::begin() {
  start_ = clock_.now();
  pacer_.begin(start_);
}

void RunController::poll() {
  graveyard_.clear();
  while (true) {
    const TimePoint now = clock_.now();
    auto rel = pacer_.next(now);
    if (!rel) break;
    analysis::RequestRecord rec;
    rec.index = rel->index;
    rec.warmup = rel->warmup;
    rec.in_window = !rel->warmup;
    rec.t_intended = rel->intended - start_;
    rec.requested_input_tokens = cfg_.input_tokens;
    rec.requested_output_tokens = cfg_.output_tokens;
    auto slot = std::make_unique<Slot>(*this, rel->index, RequestTracker(std::move(rec), start_, cfg_.endpoint, cfg_.stream));
    Slot& ref = *slot;
    trackers_.emplace(rel->index, std::move(slot));
    max_in_flight_ = std::max(max_in_flight_, trackers_.size());
    transport_.start(builder_.build(rel->index), ref);
  }
}

bool RunController::finished() const { return pacer_.exhausted() && trackers_.empty(); }

void RunController::interrupt() {
  interrupted_ = true;
  pacer_.stop();
}

void RunController::abort() {
  interrupt();
  transport_.cancel_all();
}

void RunController::complete(std::uint64_t index, TimePoint t) {
  auto it = trackers_.find(index);
  if (it == trackers_.end()) return;
  const auto& tracker = it->second->tracker();
  analysis::RequestRecord rec = tracker.record();
  // A server may echo the API key back in an error: it never reaches any output.
  rec.error_message = redact(std::move(rec.error_message), cfg_.api_key);
  acc_.add(rec, tracker.chunks());
  if (!rec.warmup) {
    const TimePoint done = start_ + rec.t_done.value_or(t - start_);
    if (!last_measured_done_ || done > *last_measured_done_) last_measured_done_ = done;
  }
  last_event_ = t;
  records_.push_back(std::move(rec));
  graveyard_.push_back(std::move(it->second));
  trackers_.erase(it);
  pacer_.on_complete(t);
  if (on_progress) on_progress();
}

analysis::Window RunController::window() const {
  analysis::Window w;
  auto ws = pacer_.window_start();
  if (!ws) {
    w.method = "no measured request was issued";
    return w;
  }
  w.start = *ws - start_;
  if (auto we = pacer_.window_end()) {
    TimePoint end = *we;
    if (last_event_ && *last_event_ < end) end = *last_event_;
    w.end = end - start_;
    w.method = cfg_.warmup.none() ? "duration from the first request"
               : cfg_.warmup.by_time() ? "duration after a time warmup"
                                       : "duration after a warmup of N requests";
  } else {
    w.end = last_measured_done_ ? *last_measured_done_ - start_ : w.start;
    w.method = cfg_.warmup.none() ? "from the first request to the last completion"
                                  : "from the first request after warmup to the last completion";
  }
  if (interrupted_) w.method += " (run interrupted)";
  if (w.end < w.start) w.end = w.start;
  return w;
}

analysis::RunMetrics RunController::metrics() const {
  const bool server = cfg_.kind == ScenarioKind::kServer;
  const auto view = server ? analysis::LatencyView::kResponse : analysis::LatencyView::kService;
  return acc_.finalize(window(), server, cfg_.slo, view, records_);
}

}  // namespace llmload
