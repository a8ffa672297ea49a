#include "llmload/loadgen/run_controller.hpp"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "llmload/common/duration.hpp"
#include "llmload/loadgen/redact.hpp"
#include "llmload/loadgen/shard_plan.hpp"
#include "llmload/loadgen/structured_check.hpp"
#include "llmload/tokenizer/tokenizer.hpp"

namespace llmload {

/// One request in flight: its tracker, and a hand-back to the controller on completion.
class RunController::Slot final : public ResponseObserver {
 public:
  Slot(RunController& owner, std::uint64_t index, RequestTracker tracker)
      : owner_(owner), index_(index), tracker_(std::move(tracker)) {}
  void on_sent(TimePoint t) override {
    if (trace) trace->sent(t);
    tracker_.on_sent(t);
  }
  void on_header_field(std::string_view name, std::string_view value) override {
    tracker_.on_header_field(name, value);
  }
  bool wants_raw_head() const override { return trace != nullptr; }
  void on_raw_head(std::string_view head) override {
    if (trace) trace->head(head);
  }
  void on_headers(TimePoint t, int status, std::string_view ct) override {
    if (trace) trace->headers(t, status, ct);
    tracker_.on_headers(t, status, ct);
  }
  bool on_body(TimePoint t, std::string_view bytes) override {
    if (trace) trace->body(t, bytes);
    return tracker_.on_body(t, bytes);
  }
  void on_complete(TimePoint t, const TransportError& e) override {
    tracker_.on_complete(t, e);
    if (trace) {
      trace->complete(t, e);
      owner_.http_trace_->write(*trace);
      trace.reset();
    }
    // May destroy *this later (deferred), never during this call.
    if (probe) {
      owner_.complete_probe(index_);
    } else {
      owner_.complete(index_, t);
    }
  }
  RequestTracker& tracker() { return tracker_; }
  std::optional<TimePoint> deadline() const override { return tracker_.deadline(); }
  TransportError on_deadline(TimePoint now) override { return tracker_.on_deadline(now); }
  void set_prompt(std::string p, std::int64_t tokens) {
    prompt_ = std::move(p);
    prompt_tokens_ = tokens;
  }
  std::string& prompt() { return prompt_; }
  /// The tools or response schema the request carried (nullptr: text only).
  std::shared_ptr<const StructuredSpec> structured;
  std::int64_t prompt_tokens() const { return prompt_tokens_; }
  /// 0-based among the run's measured requests in release order; -1 for warmup.
  std::int64_t ordinal = -1;
  std::unique_ptr<HttpExchangeTrace> trace;  // --trace-http: this exchange is traced
  bool probe = false;  // a probe of the probe stream, not a request of the load

 private:
  std::string prompt_;
  std::int64_t prompt_tokens_ = 0;  // sessions: the user prompt of this turn, for the next turn's history
  RunController& owner_;
  std::uint64_t index_;
  RequestTracker tracker_;
};

RunController::RunController(const ScenarioConfig& cfg, const Clock& clock, Pacer& pacer, Transport& transport,
                             const RequestBuilder& builder)
    : cfg_(cfg), clock_(clock), pacer_(pacer), transport_(transport), builder_(builder), secrets_(cfg.secrets()),
      store_(cfg.warmup.automatic) {
  if (!cfg.models.empty()) models_.emplace(cfg.models, cfg.model_weights, cfg.seed);
  if (cfg.structured.any()) structured_.emplace(cfg.structured, data_seed(cfg.seed));
}

RunController::~RunController() = default;

void RunController::begin() {
  if (cfg_.sequential && cfg_.slo && !cfg_.slo->empty()) {
    sequential_ = std::make_unique<analysis::SequentialSlo>(*cfg_.slo, verdict_view());
  }
  start_ = clock_.now();
  pacer_.begin(start_);
}

bool RunController::poll(std::size_t max_starts) {
  graveyard_.clear();
  if (probes_) start_due_probes(clock_.now());
  for (std::size_t started = 0;; ++started) {
    if (started >= max_starts) return true;
    const TimePoint now = clock_.now();
    auto rel = pacer_.next(now);
    if (!rel) {
      // The window may have opened with this poll's releases (a warmup of N requests).
      if (probes_) start_due_probes(now);
      break;
    }
    analysis::RequestRecord rec;
    rec.index = rel->index;
    rec.warmup = rel->warmup;
    rec.in_window = !rel->warmup;
    rec.t_intended = rel->intended - start_;
    rec.session = shard_plan_ != nullptr ? shard_plan_->global_session(rel->session) : rel->session;
    rec.turn = rel->turn;
    rec.stage = rel->stage;
    // The whole run's request (a shard's local index mapped) names the item; a request alone is
    // dealt its model and tools by that item (so a consistency reference, which offsets the
    // items, deals them as the run did). A session stays on one model (its adapter holds the
    // conversation) and one set of tools, dealt by its id (the whole run's: ShardPlan::global_session).
    const std::uint64_t request = shard_plan_ != nullptr ? shard_plan_->global(rel->index) : rel->index;
    rec.item = request + cfg_.item_offset;
    const std::uint64_t deal_key =
        rec.session >= 0 ? (std::uint64_t{1} << 63) | static_cast<std::uint64_t>(rec.session) : rec.item;
    if (models_) rec.model = models_->pick(deal_key);
    WorkItem item = builder_.item(rec.item);
    if (rec.session >= 0 && rel->turn > 0 && item.prefix_chars > 0) {
      // The shared prefix opens a conversation, like a system prompt: it travels in the history,
      // not again in every turn's new message (each turn carried another group's prefix).
      item.prompt.erase(0, item.prefix_chars);
      item.input_tokens -= item.prefix_tokens;
      item.prefix_group.reset();
      item.prefix_chars = 0;
      item.prefix_tokens = 0;
    }
    if (!item.structured && structured_) item.structured = structured_->pick(deal_key);
    if (item.structured) rec.structured = structured_kind(*item.structured);
    rec.requested_input_tokens = item.input_tokens;
    rec.requested_output_tokens = item.output_tokens;
    note_grading(rec, item);
    const std::vector<Turn>* history = &no_history_;
    std::int64_t new_input_tokens = item.input_tokens;
    if (rec.session >= 0) {
      auto& conv = sessions_[rec.session];
      // The conversation so far travels with the new turn; its tokens count as requested input
      // (earlier prompts as requested, earlier answers as received).
      rec.requested_input_tokens = 0;
      conv.history.clear();
      for (const auto& t : conv.turns) {
        rec.requested_input_tokens += t.user_tokens + t.assistant_tokens;
        conv.history.push_back(t.turn);
      }
      history = &conv.history;
      // After tool calls the new input is their results, not the item's prompt (an agent loop).
      if (continues_tool_calls(*history)) {
        new_input_tokens = 0;
        for (const auto& c : history->back().tool_calls) {
          new_input_tokens += static_cast<std::int64_t>(tool_result_text(c).size() / 4 + 1);
        }
        item.prompt.clear();
      }
      rec.requested_input_tokens += new_input_tokens;
    }
    TrackerOptions topts;
    topts.api = cfg_.endpoint;
    topts.stream = cfg_.stream;
    topts.capture_text = rel->session >= 0 || tokenizer_ != nullptr || !rec.grader.empty() || cfg_.save_outputs ||
                         cfg_.consistency || item.structured != nullptr;
    topts.first_token_timeout = cfg_.first_token_timeout;
    topts.inter_token_timeout = cfg_.inter_token_timeout;
    HttpRequest http = builder_.build(item, *history, rec.model);
    auto slot = std::make_unique<Slot>(*this, rel->index, RequestTracker(std::move(rec), start_, topts));
    if (rel->session >= 0) slot->set_prompt(std::move(item.prompt), new_input_tokens);
    slot->structured = std::move(item.structured);
    if (!rel->warmup) slot->ordinal = measured_released_++;
    if (http_trace_ && http_trace_->take()) slot->trace = std::make_unique<HttpExchangeTrace>(rel->index, http, start_);
    Slot& ref = *slot;
    trackers_.emplace(rel->index, std::move(slot));
    max_in_flight_ = std::max(max_in_flight_, trackers_.size());
    transport_.start(http, ref);
  }
  return false;
}

bool RunController::finished() const { return pacer_.exhausted() && trackers_.empty() && probe_slots_.empty(); }

std::optional<TimePoint> RunController::wake_time() const {
  std::optional<TimePoint> w = pacer_.wake_time();
  if (probes_) {
    if (auto due = probes_->due(); due && (!w || *due < *w)) w = due;
  }
  return w;
}

void RunController::interrupt() {
  interrupted_ = true;
  pacer_.stop();
}

void RunController::abort() {
  interrupt();
  aborted_ = true;
  transport_.cancel_all();
}

void RunController::classify_client_cancel(analysis::RequestRecord& rec) const {
  if (rec.error != analysis::ErrorClass::kCanceled) return;
  // Canceled because the run was stopped (early, or by the user): the client's decision, its own
  // outcome, not a failure of the server.
  if (stopped_early_) {
    rec.error = analysis::ErrorClass::kStoppedEarly;
    rec.error_message = fmt::format("canceled by the early stop ({})", *stopped_early_);
  } else if (aborted_) {
    rec.error = analysis::ErrorClass::kStoppedEarly;
    rec.error_message = "canceled when the run was stopped (a second signal, or the drain after the first ran out)";
  }
}

void RunController::stop_early(std::string reason) {
  if (stopped_early_) return;
  stopped_early_ = std::move(reason);
  stopped_at_ = clock_.now();
  pacer_.stop();
}

void RunController::stop_now(std::string reason) {
  stop_early(std::move(reason));
  transport_.cancel_all();
}

void RunController::cut_at_max_duration() {
  if (trackers_.empty() || !cfg_.max_duration) return;
  cut_at_max_duration_ = true;
  stop_now(fmt::format("--max-duration {} reached: the {} requests still in flight were canceled",
                       format_duration(*cfg_.max_duration), trackers_.size()));
}

bool RunController::max_duration_reached() const { return cut_at_max_duration_ || pacer_.max_duration_reached(); }

void RunController::complete(std::uint64_t index, TimePoint t) {
  auto it = trackers_.find(index);
  if (it == trackers_.end()) return;
  const auto& tracker = it->second->tracker();
  analysis::RequestRecord rec = tracker.record();
  classify_client_cancel(rec);
  // A server may echo the API key back in an error: it never reaches any output.
  rec.error_message = secrets_.for_output(std::move(rec.error_message));
  const std::vector<analysis::ChunkArrival> counted =
      tokenizer_ && rec.ok() ? count_with_tokenizer(rec, tracker) : std::vector<analysis::ChunkArrival>{};
  grade_and_keep_output(rec, tracker, it->second->ordinal);
  if (it->second->structured && rec.ok()) judge_structured_output(rec, tracker, *it->second->structured);
  const std::vector<analysis::ChunkArrival>& chunks = counted.empty() ? tracker.chunks() : counted;
  acc_.add(rec, chunks);
  if (sequential_ && sequential_->on_complete(it->second->ordinal, rec)) {
    // Conclusive: stop issuing; what is in flight completes and is measured, as after the last
    // request of a --num-requests run.
    pacer_.stop();
  }
  if (rec.session >= 0) {
    auto& conv = sessions_[rec.session];
    // The answer goes back in the history, not the reasoning before it: only its tokens are the
    // next turn's input (counting the reasoning made requested input 24% over the server's count).
    conv.turns.push_back(SessionTurn{Turn{std::move(it->second->prompt()), tracker.output_text(), tracker.tool_calls(),
                                          tracker.response_id()},
                                     it->second->prompt_tokens(),
                                     std::max<std::int64_t>(0, rec.output_tokens - rec.reasoning_tokens)});
    if (rec.turn + 1 >= cfg_.turns) sessions_.erase(rec.session);
  }
  if (!rec.warmup) {
    const TimePoint done = start_ + rec.t_done.value_or(t - start_);
    if (!last_measured_done_ || done > *last_measured_done_) last_measured_done_ = done;
    if (!last_measured_intended_ || rec.t_intended > *last_measured_intended_) last_measured_intended_ = rec.t_intended;
  }
  last_event_ = t;
  if (on_record) on_record(rec);
  store_.append(rec, chunks);
  graveyard_.push_back(std::move(it->second));
  trackers_.erase(it);
  pacer_.on_complete(index, t);
  if (on_progress) on_progress();
}

void RunController::start_due_probes(TimePoint now) {
  // Probes measure the load's measurement window: from its start (the run's start with --warmup
  // auto, whose detected warmup later drops those before it) until the load stops.
  if (!probes_->begun()) {
    if (cfg_.warmup.automatic) {
      probes_->begin(start_);
    } else if (auto ws = pacer_.window_start()) {
      probes_->begin(*ws);
    }
  }
  const auto we = pacer_.window_end();
  const bool load_over = interrupted_ || stopped_early_ || (pacer_.exhausted() && trackers_.empty()) || (we && now >= *we);
  if (load_over) probes_->stop();
  // A few at most per poll (a probe stream is a few per second): the load's releases go first.
  constexpr int kMaxProbeStarts = 4;
  for (int n = 0; n < kMaxProbeStarts; ++n) {
    const auto due = probes_->due();
    if (!due || *due > now) return;
    ProbeRelease p = probes_->release(start_);
    const std::uint64_t index = p.record.index;
    TrackerOptions topts;
    topts.api = cfg_.endpoint;
    topts.stream = cfg_.stream;
    topts.first_token_timeout = cfg_.first_token_timeout;
    topts.inter_token_timeout = cfg_.inter_token_timeout;
    auto slot = std::make_unique<Slot>(*this, index, RequestTracker(std::move(p.record), start_, topts));
    slot->probe = true;
    Slot& ref = *slot;
    probe_slots_.emplace(index, std::move(slot));
    transport_.start(p.http, ref);
  }
}

void RunController::complete_probe(std::uint64_t index) {
  auto it = probe_slots_.find(index);
  if (it == probe_slots_.end()) return;
  const RequestTracker& tracker = it->second->tracker();
  analysis::RequestRecord rec = tracker.record();
  classify_client_cancel(rec);
  rec.error_message = secrets_.for_output(std::move(rec.error_message));
  probes_->complete(rec, tracker.chunks());
  graveyard_.push_back(std::move(it->second));
  probe_slots_.erase(it);
  if (on_progress) on_progress();
}

std::vector<analysis::ChunkArrival> RunController::count_with_tokenizer(analysis::RequestRecord& rec,
                                                                       const RequestTracker& tracker) const {
  // Reasoning and answer are counted apart, as the server generated them: completion_tokens
  // includes both (OpenAI's reasoning_tokens are part of it, as are vLLM's).
  const auto reasoning = static_cast<std::int64_t>(tokenizer_->count(tracker.reasoning_text()));
  const auto n = static_cast<std::int64_t>(tokenizer_->count(tracker.output_text())) + reasoning;
  if (reasoning > 0 && rec.reasoning_tokens_source != "usage") {
    rec.reasoning_tokens = reasoning;
    rec.reasoning_tokens_source = "tokenizer";
  }
  if (rec.tokens_from_usage) {
    rec.client_output_tokens = n;
    return {};
  }
  rec.output_tokens = n;
  rec.tokens_from_tokenizer = true;
  rec.ended_early = rec.requested_output_tokens > 0 && n < rec.requested_output_tokens;
  // Without usage every event weighed one token: each is weighed by its own text instead, so ITL
  // is token-weighted as TPOT is (docs/metrics.md).
  return tracker.chunks_counted([this](std::string_view s) { return tokenizer_->count(s); });
}

void RunController::judge_structured_output(analysis::RequestRecord& rec, const RequestTracker& tracker,
                                            const StructuredSpec& spec) const {
  const StructuredJudgement j = judge_structured(spec, tracker.tool_calls(), tracker.output_text());
  rec.structured_verdict = j.verdict;
  rec.structured_error = secrets_.for_output(j.error);
  // A complete tool call or JSON answer ends where its JSON ends, whatever max_tokens allowed:
  // not "ended early" (min_tokens cannot pad JSON).
  if (j.verdict == "valid") rec.ended_early = false;
  // The calls as received; their arguments kept whole only with --save-outputs (they can be long).
  constexpr std::size_t kMaxArguments = 256;
  for (const auto& c : tracker.tool_calls()) {
    rec.tool_call_names.push_back(c.name);
    std::string args = c.arguments;
    if (!cfg_.save_outputs && args.size() > kMaxArguments) {
      std::size_t cut = kMaxArguments;
      while (cut > 0 && (static_cast<unsigned char>(args[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
      args.resize(cut);
      args += "…";
    }
    rec.tool_call_arguments.push_back(secrets_.for_output(std::move(args)));
  }
}

void RunController::note_grading(analysis::RequestRecord& rec, const WorkItem& item) const {
  rec.grader = cfg_.grader.empty() ? item.grader : cfg_.grader;
  // A grader needs a reference to grade against, except json (validity alone).
  if (item.reference.empty() && rec.grader.rfind("json", 0) != 0) rec.grader.clear();
  if (rec.grader.empty()) return;
  rec.subset = item.subset;
  rec.reference = item.reference;
}

void RunController::grade_and_keep_output(analysis::RequestRecord& rec, const RequestTracker& tracker,
                                          std::int64_t ordinal) const {
  if (!rec.grader.empty() && rec.ok()) {
    auto spec = graders_.find(rec.grader);
    if (spec == graders_.end()) spec = graders_.emplace(rec.grader, analysis::GraderSpec::parse(rec.grader)).first;
    analysis::GradeResult g = analysis::grade_output(spec->second, tracker.output_text(), rec.reference);
    rec.grade = g.grade;
    rec.extracted = std::move(g.extracted);
    // exact and json extract the whole answer: requests.jsonl keeps its start (--save-outputs keeps all).
    constexpr std::size_t kMaxExtracted = 256;
    if (rec.extracted.size() > kMaxExtracted) {
      std::size_t cut = kMaxExtracted;
      while (cut > 0 && (static_cast<unsigned char>(rec.extracted[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
      rec.extracted.resize(cut);
      rec.extracted += "…";
    }
  }
  // The outputs a consistency comparison needs (the first measured ones), or all of them with
  // --save-outputs; the reference is kept for `llmload score` only with the outputs.
  const bool compared = cfg_.consistency && ordinal >= 0 && ordinal < cfg_.consistency_requests;
  if (rec.ok() && (cfg_.save_outputs || compared)) {
    rec.output_text = tracker.output_text();
    if (tracker.server_tokens().from != ServerTokens::From::kNone) {
      rec.server_tokens_from = to_string(tracker.server_tokens().from);
      rec.server_tokens = tracker.server_tokens().tokens;
    }
  }
  if (!cfg_.save_outputs) rec.reference.clear();
}

analysis::Window RunController::planned_window() const {
  analysis::Window w;
  const WarmupSpec& wu = cfg_.warmup;
  w.warmup_method = wu.automatic ? "auto" : wu.by_time() ? "time" : wu.requests > 0 ? "requests" : "none";
  w.warmup_requests = wu.requests;
  w.warmup_duration = wu.duration;
  if (last_measured_done_) w.drain_end = *last_measured_done_ - start_;
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
    w.method = wu.none() || wu.automatic ? "duration from the first request"
               : wu.by_time()            ? "duration after a time warmup"
                                         : "duration after a warmup of N requests";
    if (cfg_.duration && *we - *ws > *cfg_.duration) w.method += ", extended until the minimums were met";
  } else if (wu.automatic) {
    // The drain (in-flight falling after the last release) is not part of the window.
    w.end = last_measured_intended_.value_or(w.start);
    w.method = "from the first request to the end of issuing (the last measured request's intended time)";
  } else {
    w.end = last_measured_done_ ? *last_measured_done_ - start_ : w.start;
    w.method = wu.none() ? "from the first request to the last completion"
                         : "from the first request after warmup to the last completion";
  }
  if (max_duration_reached()) w.method += " (cut at --max-duration)";
  if (stopped_at_) {
    // Stopped early: the window ends where issuing stopped; the drain after it is not measured.
    w.end = std::min(w.end, *stopped_at_ - start_);
    w.method += fmt::format(" (stopped early: {})", *stopped_early_);
  }
  if (interrupted_) w.method += " (run interrupted)";
  if (w.end < w.start) w.end = w.start;
  return w;
}

void RunController::settle() const {
  if (settled_ || !cfg_.warmup.automatic || !finished()) return;
  settled_ = true;
  analysis::Window w = planned_window();
  // The series cover the run up to the end of issuing: the window's planned end.
  analysis::WarmupDetection d = analysis::detect_warmup(analysis::RecordRange(store_), w.end);
  const std::string end_rule = pacer_.window_end() ? "the duration's end" : "the end of issuing (the last measured request's intended time)";
  if (d.found && d.start > w.start) {
    const Nanos cut = std::min(d.start, w.end);
    store_.mark_warmup_before(cut);
    w.start = cut;
    w.method = fmt::format("warmup auto: from the start of steady state at {:.3f} s (MSER-5 over {} intervals of {} ms, "
                           "decided by '{}') to {}",
                           std::chrono::duration<double>(cut).count(), d.intervals, d.interval.count() / 1'000'000,
                           d.summary.deciding_series, end_rule);
  } else if (d.found) {
    w.method = fmt::format("warmup auto: steady state from the first request (MSER-5 over {} intervals of {} ms) to {}",
                           d.intervals, d.interval.count() / 1'000'000, end_rule);
  } else {
    w.method = fmt::format("warmup auto found no steady state, the whole run is kept: from the first request to {}",
                           end_rule);
  }
  if (max_duration_reached()) w.method += " (cut at --max-duration)";
  if (stopped_early_) w.method += fmt::format(" (stopped early: {})", *stopped_early_);
  if (interrupted_) w.method += " (run interrupted)";
  w.detection = std::move(d);
  auto acc = std::make_unique<analysis::MetricsAccumulator>();
  store_.for_each_chunks([&](std::size_t, const analysis::RequestRecord& r,
                             std::span<const analysis::ChunkArrival> chunks) { acc->add(r, chunks); });
  auto_acc_ = std::move(acc);
  auto_window_ = std::move(w);
}

analysis::RecordRange RunController::records() const {
  settle();
  return analysis::RecordRange(store_);
}

bool RunController::records_relabeled() const {
  settle();
  return store_.relabeled();
}

analysis::Window RunController::window() const {
  settle();
  return auto_window_ ? *auto_window_ : planned_window();
}

analysis::ValidityOptions RunController::validity_options() const {
  analysis::ValidityOptions o;
  o.max_error_rate = cfg_.max_error_rate;
  o.percentiles = cfg_.metric_percentiles;
  if (cfg_.slo && !cfg_.slo->empty()) o.percentiles.push_back(cfg_.slo->percentile);
  o.min_duration = cfg_.min_duration;
  o.min_requests = cfg_.min_requests;
  o.max_duration = cfg_.max_duration;
  o.max_duration_reached = max_duration_reached();
  // A shard's sample is part of the run's: the merged run is judged on those.
  o.check_samples = !cfg_.shard.sharded();
  o.max_inflight = cfg_.max_inflight;
  return o;
}

analysis::LatencyView RunController::verdict_view() const {
  // Open-loop load (server, or a plan with rate stages) is judged in the response-time view.
  bool server = cfg_.kind == ScenarioKind::kServer;
  for (const auto& st : cfg_.arrivals.stages) server = server || (cfg_.kind == ScenarioKind::kStages && !st.concurrency);
  return server ? analysis::LatencyView::kResponse : analysis::LatencyView::kService;
}

analysis::RunMetrics RunController::metrics(std::optional<double> client_core_share) const {
  const auto view = verdict_view();
  const bool server = view == analysis::LatencyView::kResponse;
  settle();
  const analysis::MetricsAccumulator& acc = auto_acc_ ? *auto_acc_ : acc_;
  analysis::ValidityOptions vo = validity_options();
  vo.client_core_share = client_core_share;
  analysis::RunMetrics m = acc.finalize(window(), server, cfg_.slo, view, records(), vo);
  m.stopped_early = stopped_early_;
  return m;
}

}  // namespace llmload
