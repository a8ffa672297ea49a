#include "llmload/loadgen/pacer.hpp"

#include <algorithm>
#include <deque>
#include <queue>
#include <unordered_map>
#include <utility>

#include "llmload/loadgen/prompt.hpp"
#include "llmload/loadgen/shard_plan.hpp"

namespace llmload {
namespace {

// The measurement window shared by the pacers: it starts with the first measured release (or
// at the end of a time warmup) and, for duration-bounded runs, lasts `window_duration_`, longer
// when the minimums kept the run issuing (RunLimits).
class WindowedPacer : public Pacer {
 public:
  WindowedPacer(std::optional<Nanos> window_duration, RunLimits limits)
      : window_duration_(window_duration), limits_(limits) {}
  std::optional<TimePoint> window_start() const override { return window_start_; }
  std::optional<TimePoint> window_end() const override {
    if (!window_start_ || !window_duration_) return std::nullopt;
    TimePoint end = *window_start_ + *window_duration_;
    if (limits_.min_duration) end = std::max(end, *window_start_ + *limits_.min_duration);
    if (last_extension_) end = std::max(end, *last_extension_);
    if (limits_.max_duration) end = std::min(end, run_start_ + *limits_.max_duration);
    return std::max(end, *window_start_);
  }
  bool max_duration_reached() const override { return max_reached_; }

 protected:
  // The end of the window the scenario itself asks for (duration-bounded runs).
  std::optional<TimePoint> nominal_end() const {
    if (!window_start_ || !window_duration_) return std::nullopt;
    return *window_start_ + *window_duration_;
  }
  // At or past the hard maximum at `t`: nothing more is released (remembered for the artifact).
  bool past_max(TimePoint t) {
    if (limits_.max_duration && t >= run_start_ + *limits_.max_duration) {
      max_reached_ = true;
      return true;
    }
    return false;
  }
  // Every minimum holds at `t` with `measured` measured requests released (a window not started
  // yet has lasted nothing).
  bool minimums_met(TimePoint t, std::int64_t measured) const {
    if (limits_.min_requests && measured < *limits_.min_requests) return false;
    if (limits_.min_duration && (!window_start_ || t < *window_start_ + *limits_.min_duration)) return false;
    return true;
  }
  // A measured request intended at `t` goes out only because a minimum was unmet.
  void note_extension(TimePoint t) { last_extension_ = last_extension_ ? std::max(*last_extension_, t) : t; }

  std::optional<Nanos> window_duration_;
  RunLimits limits_;
  TimePoint run_start_{};
  std::optional<TimePoint> window_start_;
  std::optional<TimePoint> last_extension_;
  bool max_reached_ = false;
};

// Warmup by count (release index) or by time (intended time before start + duration).
bool is_warmup(const WarmupSpec& w, std::uint64_t index, TimePoint intended, TimePoint start) {
  return w.by_time() ? intended < start + w.duration : static_cast<std::int64_t>(index) < w.requests;
}
TimePoint first_window_start(const WarmupSpec& w, TimePoint intended, TimePoint start) {
  return w.by_time() ? start + w.duration : intended;
}

std::optional<TimePoint> earliest(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

class OpenLoopPacer final : public WindowedPacer {
 public:
  OpenLoopPacer(Schedule schedule, std::optional<std::int64_t> max_inflight, std::optional<Nanos> window_duration,
                WarmupSpec warmup, RunLimits limits, std::function<Nanos()> more)
      : WindowedPacer(window_duration, limits),
        schedule_(std::move(schedule)),
        max_inflight_(max_inflight),
        warmup_(warmup),
        more_(std::move(more)),
        nominal_size_(schedule_.arrivals.size()) {}

  void begin(TimePoint start) override {
    start_ = start;
    run_start_ = start;
    extend();
    cut_at_max();
  }

  std::optional<Release> next(TimePoint now) override {
    if (exhausted()) return std::nullopt;
    const TimePoint due = start_ + schedule_.arrivals[next_];
    if (due > now) return std::nullopt;
    if (max_inflight_ && in_flight_ >= *max_inflight_) return std::nullopt;
    if (past_max(now)) {
      // Held back (by the in-flight cap or a late client) until the hard maximum: not released.
      schedule_.arrivals.resize(next_);
      extension_done_ = true;
      return std::nullopt;
    }
    const bool warm = static_cast<std::int64_t>(next_) < schedule_.warmup_requests;
    if (!warm && !window_start_) {
      window_start_ = schedule_.window_start ? start_ + *schedule_.window_start : first_window_start(warmup_, due, start_);
    }
    if (next_ >= nominal_size_) note_extension(due);
    ++in_flight_;
    Release r{next_++, due, warm};
    extend();
    cut_at_max();
    return r;
  }

  std::optional<TimePoint> wake_time() const override {
    if (exhausted()) return std::nullopt;
    if (max_inflight_ && in_flight_ >= *max_inflight_) return std::nullopt;
    return start_ + schedule_.arrivals[next_];
  }

  void on_complete(std::uint64_t, TimePoint) override {
    if (in_flight_ > 0) --in_flight_;
  }
  bool exhausted() const override { return stopped_ || next_ >= schedule_.arrivals.size(); }
  void stop() override { stopped_ = true; }

 private:
  // Past the schedule's end while a minimum is unmet: one more arrival of the same process.
  // Decided on the arrival's intended time, so a seed gives the same run.
  void extend() {
    if (!more_ || extension_done_ || next_ < schedule_.arrivals.size()) return;
    const Nanos t = more_();
    const auto measured = std::max<std::int64_t>(0, static_cast<std::int64_t>(next_) - schedule_.warmup_requests);
    if (minimums_met(start_ + t, measured)) {
      extension_done_ = true;
      return;
    }
    schedule_.arrivals.push_back(t);
  }
  // Arrivals intended at or after max_duration are never released.
  void cut_at_max() {
    if (next_ < schedule_.arrivals.size() && past_max(start_ + schedule_.arrivals[next_])) {
      schedule_.arrivals.resize(next_);
      extension_done_ = true;
    }
  }

  Schedule schedule_;
  std::optional<std::int64_t> max_inflight_;
  WarmupSpec warmup_;
  std::function<Nanos()> more_;
  std::size_t nominal_size_;  // arrivals of the schedule itself; later ones are the minimums' extension
  bool extension_done_ = false;
  TimePoint start_{};
  std::size_t next_ = 0;
  std::int64_t in_flight_ = 0;
  bool stopped_ = false;
};

class ClosedLoopPacer final : public WindowedPacer {
 public:
  ClosedLoopPacer(std::int64_t concurrency, std::optional<std::int64_t> num_requests,
                  std::optional<Nanos> window_duration, WarmupSpec warmup, RunLimits limits)
      : WindowedPacer(window_duration, limits), concurrency_(concurrency), num_requests_(num_requests), warmup_(warmup) {}

  void begin(TimePoint start) override {
    start_ = start;
    run_start_ = start;
    // Every slot is free at the start.
    for (std::int64_t i = 0; i < concurrency_; ++i) free_since_.push_back(start);
  }

  std::optional<Release> next(TimePoint now) override {
    if (exhausted() || free_since_.empty()) return std::nullopt;
    if (past_max(now)) {
      done_ = true;
      return std::nullopt;
    }
    const TimePoint intended = free_since_.front();
    const bool warm = is_warmup(warmup_, next_, intended, start_);
    if (!warm && !window_start_) window_start_ = first_window_start(warmup_, intended, start_);
    if (!warm) {
      const auto end = nominal_end();
      const bool bound_reached = (end && now >= *end) || (num_requests_ && measured_ >= *num_requests_);
      if (bound_reached) {
        // The scenario's own bound is reached; the minimums may keep the run going.
        if (minimums_met(now, measured_)) {
          done_ = true;
          return std::nullopt;
        }
        note_extension(intended);
      }
      ++measured_;
    }
    free_since_.pop_front();
    return Release{next_++, intended, warm};
  }

  std::optional<TimePoint> wake_time() const override {
    // Only completions release more; a duration-bounded run ends at the first release attempt
    // after the window's end.
    return std::nullopt;
  }

  void on_complete(std::uint64_t, TimePoint now) override {
    if (!exhausted()) free_since_.push_back(now);
  }
  bool exhausted() const override { return stopped_ || done_; }
  void stop() override { stopped_ = true; }

 private:
  std::int64_t concurrency_;
  std::optional<std::int64_t> num_requests_;
  WarmupSpec warmup_;
  TimePoint start_{};
  std::deque<TimePoint> free_since_;
  std::uint64_t next_ = 0;
  std::int64_t measured_ = 0;
  bool stopped_ = false;
  bool done_ = false;
};

// ---- scenario stages ----

class StagedPacer final : public WindowedPacer {
 public:
  explicit StagedPacer(const ScenarioConfig& cfg)
      : WindowedPacer(std::nullopt, RunLimits{std::nullopt, std::nullopt, cfg.max_duration}),
        stages_(cfg.arrivals.stages),
        process_(cfg.arrivals),
        seed_(arrival_seed(cfg.seed)),
        max_inflight_(cfg.max_inflight),
        warmup_(cfg.warmup),
        shard_(cfg.shard),
        rule_(partition_rule(cfg)),
        shard_seed_(shard_seed(cfg.seed)) {
    process_.ramp = "none";  // ramps apply to the server scenario only
    process_.ramp_duration = Nanos(0);
    Nanos t(0);
    for (const auto& s : stages_) {
      begins_.push_back(t);
      t += s.duration;
      ends_.push_back(t);
    }
    plan_end_ = t;
  }

  void begin(TimePoint start) override {
    start_ = start;
    run_start_ = start;
    advance_stream();
  }

  std::optional<Release> next(TimePoint now) override {
    if (exhausted()) return std::nullopt;
    while (true) {
      const std::optional<TimePoint> a = arrival_due();
      const std::optional<TimePoint> f = free_.empty() ? std::nullopt : std::optional<TimePoint>(free_.front());
      const std::optional<TimePoint> cand = earliest(a, f);
      // A stage boundary at or before the next candidate comes first (arrivals of a stage lie
      // strictly before its end, and free slots strictly before the active stage's end).
      if (entered_ <= stages_.size()) {
        const TimePoint b = boundary(entered_);
        if (b <= now && (!cand || b <= *cand)) {
          enter_next();
          continue;
        }
      }
      if (!cand || *cand > now) {
        if (entered_ > stages_.size() && !next_arrival_) done_ = true;
        return std::nullopt;
      }
      if (past_max(*cand) || past_max(now)) {
        done_ = true;
        return std::nullopt;
      }
      const bool take_arrival = a && (!f || *a <= *f);
      Release r{next_index_, *cand, is_warmup(warmup_, next_index_, *cand, start_)};
      if (take_arrival) {
        r.stage = static_cast<std::int32_t>(arrival_stage_);
        advance_stream();
      } else {
        r.stage = static_cast<std::int32_t>(active_conc_);
        free_.pop_front();
      }
      if (!r.warmup && !window_start_) window_start_ = first_window_start(warmup_, r.intended, start_);
      ++next_index_;
      ++in_flight_;
      return r;
    }
  }

  std::optional<TimePoint> wake_time() const override {
    if (exhausted()) return std::nullopt;
    std::optional<TimePoint> t = arrival_due();
    if (!free_.empty()) t = earliest(t, free_.front());
    if (entered_ <= stages_.size()) t = earliest(t, boundary(entered_));
    return t;
  }

  void on_complete(std::uint64_t, TimePoint now) override {
    // Stages that began before this completion begin first: at their start the request was
    // still in flight.
    if (!exhausted()) {
      while (entered_ <= stages_.size() && boundary(entered_) <= now) enter_next();
    }
    if (in_flight_ > 0) --in_flight_;
    if (exhausted() || active_conc_ < 0) return;
    const auto i = static_cast<std::size_t>(active_conc_);
    if (now < start_ + ends_[i] && in_flight_ + static_cast<std::int64_t>(free_.size()) < concurrency_of(i)) {
      free_.push_back(now);
    }
  }

  bool exhausted() const override { return stopped_ || done_; }
  void stop() override { stopped_ = true; }

  std::optional<TimePoint> window_end() const override {
    if (!window_start_) return std::nullopt;
    TimePoint end = start_ + plan_end_;
    if (limits_.max_duration) end = std::min(end, run_start_ + *limits_.max_duration);
    return std::max(end, *window_start_);
  }

 private:
  std::int64_t concurrency_of(std::size_t i) const { return static_cast<std::int64_t>(stages_[i].value); }
  TimePoint boundary(std::size_t k) const { return start_ + (k < stages_.size() ? begins_[k] : plan_end_); }
  bool capped() const { return max_inflight_ && in_flight_ >= *max_inflight_; }
  std::optional<TimePoint> arrival_due() const {
    if (!next_arrival_ || capped()) return std::nullopt;
    return start_ + *next_arrival_;
  }

  // Enters stage `entered_` (or the end of the plan when it equals the stage count).
  void enter_next() {
    const std::size_t i = entered_++;
    free_.clear();
    active_conc_ = -1;
    if (i >= stages_.size() || !stages_[i].concurrency) return;
    active_conc_ = static_cast<std::int64_t>(i);
    const TimePoint b = start_ + begins_[i];
    for (std::int64_t k = in_flight_; k < concurrency_of(i); ++k) free_.push_back(b);
  }

  // Moves next_arrival_ to the following open-loop arrival, across rate stages.
  void advance_stream() {
    while (true) {
      if (stream_) {
        const Nanos t = begins_[stream_stage_] + stream_->next();
        if (t < ends_[stream_stage_]) {
          // Sharded: the stage's stream is the single run's; arrivals another shard owns are skipped.
          const std::uint64_t k = drawn_++;
          if (shard_of(rule_, mix_seed(shard_seed_ ^ (stream_stage_ + 1)), k, shard_.count) != shard_.index) continue;
          next_arrival_ = t;
          arrival_stage_ = stream_stage_;
          return;
        }
        stream_.reset();
      }
      std::size_t k = stream_started_ ? stream_stage_ + 1 : 0;
      while (k < stages_.size() && stages_[k].concurrency) ++k;
      if (k >= stages_.size()) {
        next_arrival_.reset();
        stream_stage_ = stages_.size();
        stream_started_ = true;
        return;
      }
      stream_stage_ = k;
      stream_started_ = true;
      stream_.emplace(process_, stages_[k].value, mix_seed(seed_ + 0x9E3779B97F4A7C15ULL * (k + 1)));
      drawn_ = 0;
    }
  }

  std::vector<ArrivalConfig::Stage> stages_;
  ArrivalConfig process_;
  std::uint64_t seed_;
  std::optional<std::int64_t> max_inflight_;
  WarmupSpec warmup_;
  ShardSpec shard_;
  PartitionRule rule_;
  std::uint64_t shard_seed_;
  std::vector<Nanos> begins_, ends_;
  Nanos plan_end_{0};
  TimePoint start_{};

  // Open-loop arrivals: one stream per rate stage, generated lazily.
  std::optional<ArrivalStream> stream_;
  std::uint64_t drawn_ = 0;  // arrivals drawn from stream_ so far (the thinning hash's k)
  std::size_t stream_stage_ = 0;
  bool stream_started_ = false;
  std::optional<Nanos> next_arrival_;  // offset from start
  std::size_t arrival_stage_ = 0;

  // Closed loop: the active concurrency stage and its free slots (the time each became free).
  std::size_t entered_ = 0;  // stages entered so far; stages_.size() + 1 once the plan has ended
  std::int64_t active_conc_ = -1;
  std::deque<TimePoint> free_;

  std::uint64_t next_index_ = 0;
  std::int64_t in_flight_ = 0;
  bool stopped_ = false;
  bool done_ = false;
};

// ---- multi-turn sessions ----

// Where open-loop sessions start: offsets from the run's start, non-decreasing.
class StartSource {
 public:
  virtual ~StartSource() = default;
  virtual std::optional<Nanos> peek() const = 0;
  virtual void pop() = 0;
};

class VectorStarts final : public StartSource {
 public:
  explicit VectorStarts(std::vector<Nanos> v) : v_(std::move(v)) {}
  std::optional<Nanos> peek() const override {
    if (i_ >= v_.size()) return std::nullopt;
    return v_[i_];
  }
  void pop() override { ++i_; }

 private:
  std::vector<Nanos> v_;
  std::size_t i_ = 0;
};

class StreamStarts final : public StartSource {
 public:
  explicit StreamStarts(ArrivalStream s) : s_(std::move(s)), next_(s_.next()) {}
  std::optional<Nanos> peek() const override { return next_; }
  void pop() override { next_ = s_.next(); }

 private:
  ArrivalStream s_;
  Nanos next_;
};

// A shard's part of another source's session starts: the starts the partition deals to it.
class ShardedStarts final : public StartSource {
 public:
  ShardedStarts(std::unique_ptr<StartSource> inner, const ScenarioConfig& cfg)
      : inner_(std::move(inner)), shard_(cfg.shard), rule_(partition_rule(cfg)), seed_(shard_seed(cfg.seed)) {
    skip_foreign();
  }
  std::optional<Nanos> peek() const override { return inner_->peek(); }
  void pop() override {
    inner_->pop();
    ++k_;
    skip_foreign();
  }

 private:
  void skip_foreign() {
    while (inner_->peek() && shard_of(rule_, seed_, k_, shard_.count) != shard_.index) {
      inner_->pop();
      ++k_;
    }
  }
  std::unique_ptr<StartSource> inner_;
  ShardSpec shard_;
  PartitionRule rule_;
  std::uint64_t seed_;
  std::uint64_t k_ = 0;  // index of inner_->peek() in the global start stream
};

class SessionPacer final : public WindowedPacer {
 public:
  struct Options {
    std::int64_t turns = 1;
    Nanos think{0};
    std::int64_t sessions_at_once = 0;  // > 0: closed loop over sessions; 0: open loop from `starts`
    std::optional<std::int64_t> max_inflight;  // open loop only
    std::optional<std::int64_t> num_requests;
    std::optional<Nanos> window_duration;
    WarmupSpec warmup;
    // Fixed window start (offset from run start): a shard's part of open-loop session starts
    // uses the global first start, so its window (and the cut at its end) is the single run's.
    std::optional<Nanos> window_start;
  };

  SessionPacer(Options o, RunLimits limits, std::unique_ptr<StartSource> starts)
      : WindowedPacer(o.window_duration, limits), o_(o), starts_(std::move(starts)) {}

  void begin(TimePoint start) override {
    start_ = start;
    run_start_ = start;
    for (std::int64_t i = 0; i < o_.sessions_at_once; ++i) free_.push_back(start);
  }

  std::optional<Release> next(TimePoint now) override {
    if (exhausted()) return std::nullopt;
    while (true) {
      const std::optional<TimePoint> f =
          follow_.empty() ? std::nullopt : std::optional<TimePoint>(follow_.top().due);
      const std::optional<TimePoint> s = start_due();
      if (!f && !s) {
        // Nothing pending: only a completion could add something, and none can (nothing in
        // flight) or whatever it adds would fall after the window (or the hard maximum).
        const auto end = nominal_end();
        if (inflight_.empty() || (end && now >= *end && minimums_met(now, measured_)) || past_max(now)) done_ = true;
        return std::nullopt;
      }
      const bool take_follow = f && (!s || *f <= *s);
      const TimePoint due = take_follow ? *f : *s;
      if (past_max(due) || past_max(now)) {
        done_ = true;
        return std::nullopt;
      }
      if (auto end = nominal_end(); end && due >= *end && minimums_met(due, measured_)) {
        // Cut: nothing is released at or after the window's end (once the minimums hold).
        if (take_follow) {
          follow_.pop();
        } else if (closed()) {
          free_.pop_front();
        } else {
          starts_done_ = true;  // later starts are later still
        }
        continue;
      }
      if (due > now || capped()) return std::nullopt;
      const bool warm = is_warmup(o_.warmup, next_index_, due, start_);
      if (!warm) {
        if (!window_start_) {
          window_start_ = o_.window_start ? start_ + *o_.window_start : first_window_start(o_.warmup, due, start_);
        }
        const auto end = nominal_end();
        if ((o_.num_requests && measured_ >= *o_.num_requests) || (end && due >= *end)) {
          if (minimums_met(due, measured_)) {
            done_ = true;
            return std::nullopt;
          }
          note_extension(due);
        }
        ++measured_;
      }
      Release r{next_index_++, due, warm};
      if (take_follow) {
        r.session = follow_.top().session;
        r.turn = follow_.top().turn;
        follow_.pop();
      } else {
        r.session = next_session_++;
        r.turn = 0;
        if (closed()) {
          free_.pop_front();
        } else {
          starts_->pop();
        }
      }
      inflight_.emplace(r.index, std::make_pair(r.session, r.turn));
      return r;
    }
  }

  std::optional<TimePoint> wake_time() const override {
    if (exhausted() || capped()) return std::nullopt;
    std::optional<TimePoint> t = start_due();
    if (!follow_.empty()) t = earliest(t, follow_.top().due);
    return t;
  }

  void on_complete(std::uint64_t index, TimePoint now) override {
    auto it = inflight_.find(index);
    if (it == inflight_.end()) return;
    const auto [session, turn] = it->second;
    inflight_.erase(it);
    if (exhausted()) return;
    if (turn + 1 < o_.turns) {
      follow_.push(FollowUp{now + o_.think, seq_++, session, turn + 1});
    } else if (closed()) {
      free_.push_back(now);  // the session is over: its slot starts a new one
    }
  }

  bool exhausted() const override { return stopped_ || done_; }
  void stop() override { stopped_ = true; }

 private:
  struct FollowUp {
    TimePoint due;
    std::uint64_t seq;
    std::int64_t session;
    std::int64_t turn;
  };
  struct Later {
    bool operator()(const FollowUp& a, const FollowUp& b) const {
      return a.due != b.due ? a.due > b.due : a.seq > b.seq;
    }
  };

  bool closed() const { return o_.sessions_at_once > 0; }
  bool capped() const {
    return !closed() && o_.max_inflight && static_cast<std::int64_t>(inflight_.size()) >= *o_.max_inflight;
  }
  std::optional<TimePoint> start_due() const {
    if (closed()) {
      if (free_.empty()) return std::nullopt;
      return free_.front();
    }
    if (starts_done_ || !starts_) return std::nullopt;
    auto off = starts_->peek();
    if (!off) return std::nullopt;
    return start_ + *off;
  }

  Options o_;
  std::unique_ptr<StartSource> starts_;
  bool starts_done_ = false;
  std::deque<TimePoint> free_;  // closed loop: session slots free since
  std::priority_queue<FollowUp, std::vector<FollowUp>, Later> follow_;
  std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> inflight_;  // index -> (session, turn)
  TimePoint start_{};
  std::uint64_t next_index_ = 0;
  std::uint64_t seq_ = 0;
  std::int64_t next_session_ = 0;
  std::int64_t measured_ = 0;
  bool stopped_ = false;
  bool done_ = false;
};

}  // namespace

RunLimits run_limits(const ScenarioConfig& cfg) {
  RunLimits l;
  l.max_duration = cfg.max_duration;
  // A stage plan, a trace and a shard's part of a run have their own length.
  if (cfg.kind == ScenarioKind::kStages || cfg.timed_arrivals || cfg.shard.sharded()) return l;
  l.min_requests = cfg.min_requests;
  // A sequential run keeps issuing past its first look until the controller stops it (conclusive).
  if (cfg.sequential) l.min_requests = std::max(cfg.min_requests.value_or(0), cfg.sequential_cap);
  // Offline releases everything at the start: its length follows from the request count.
  if (cfg.kind != ScenarioKind::kOffline) l.min_duration = cfg.min_duration;
  return l;
}

std::unique_ptr<Pacer> make_open_loop_pacer(Schedule schedule, std::optional<std::int64_t> max_inflight,
                                            std::optional<Nanos> window_duration, WarmupSpec warmup,
                                            RunLimits limits, std::function<Nanos()> more) {
  return std::make_unique<OpenLoopPacer>(std::move(schedule), max_inflight, window_duration, warmup, limits,
                                         std::move(more));
}

std::unique_ptr<Pacer> make_closed_loop_pacer(std::int64_t concurrency, std::optional<std::int64_t> num_requests,
                                              std::optional<Nanos> window_duration, WarmupSpec warmup,
                                              RunLimits limits) {
  return std::make_unique<ClosedLoopPacer>(concurrency, num_requests, window_duration, warmup, limits);
}

std::unique_ptr<Pacer> make_staged_pacer(const ScenarioConfig& cfg) { return std::make_unique<StagedPacer>(cfg); }

std::unique_ptr<Pacer> make_session_pacer(const ScenarioConfig& cfg, const std::vector<Nanos>* timed_starts) {
  const RunLimits limits = run_limits(cfg);
  SessionPacer::Options o;
  o.turns = cfg.turns;
  o.think = cfg.think_time;
  o.num_requests = cfg.num_requests;
  o.window_duration = cfg.duration;
  o.warmup = cfg.warmup;
  std::unique_ptr<StartSource> starts;
  switch (cfg.kind) {
    case ScenarioKind::kSingleStream: o.sessions_at_once = 1; break;
    case ScenarioKind::kConcurrency: o.sessions_at_once = cfg.concurrency; break;
    case ScenarioKind::kOffline: {
      o.max_inflight = cfg.max_inflight;
      // Enough sessions for the minimum too.
      const std::int64_t measured = std::max(cfg.num_requests.value_or(0), limits.min_requests.value_or(0));
      const std::int64_t requests = cfg.warmup.requests + measured;
      const std::int64_t sessions = (requests + cfg.turns - 1) / cfg.turns;
      starts = std::make_unique<VectorStarts>(std::vector<Nanos>(static_cast<std::size_t>(sessions), Nanos(0)));
      break;
    }
    case ScenarioKind::kServer:
    case ScenarioKind::kStages:
      o.max_inflight = cfg.max_inflight;
      if (timed_starts != nullptr) {
        starts = std::make_unique<VectorStarts>(schedule_from_arrivals(*timed_starts, WarmupSpec{}).arrivals);
      } else {
        starts = std::make_unique<StreamStarts>(ArrivalStream(cfg.arrivals, cfg.request_rate, arrival_seed(cfg.seed)));
      }
      // Sharded: this shard's part of the global session starts (counts were split by shard_config).
      // Without warmup the global window starts at the first global session start.
      if (cfg.shard.sharded()) {
        if (cfg.warmup.none()) o.window_start = starts->peek();
        starts = std::make_unique<ShardedStarts>(std::move(starts), cfg);
      }
      break;
  }
  return std::make_unique<SessionPacer>(o, limits, std::move(starts));
}

std::unique_ptr<Pacer> make_pacer(const ScenarioConfig& cfg, const std::vector<Nanos>* timed_arrivals) {
  if (cfg.kind == ScenarioKind::kStages) return make_staged_pacer(cfg);
  if (cfg.turns > 1) return make_session_pacer(cfg, timed_arrivals);
  const RunLimits limits = run_limits(cfg);
  if (cfg.open_loop()) {
    if (cfg.kind == ScenarioKind::kOffline && limits.min_requests && cfg.num_requests.value_or(0) < *limits.min_requests) {
      // Offline releases everything at the start: the minimum is simply more requests.
      ScenarioConfig more = cfg;
      more.num_requests = limits.min_requests;
      return make_open_loop_pacer(build_schedule(more, timed_arrivals), cfg.max_inflight, cfg.duration, cfg.warmup,
                                  limits);
    }
    Schedule schedule = build_schedule(cfg, timed_arrivals);
    if (cfg.shard.sharded()) {
      // This shard's part of the global schedule (plan_shard also returns which requests those are).
      schedule = partition_schedule(schedule, cfg.shard, partition_rule(cfg), shard_seed(cfg.seed), cfg.warmup).schedule;
    }
    std::function<Nanos()> more;
    if (cfg.kind == ScenarioKind::kServer && (limits.min_duration || limits.min_requests)) {
      // The minimums continue the same arrival process past the schedule's end: the stream the
      // schedule was drawn from, advanced past the arrivals it holds.
      auto stream = std::make_shared<ArrivalStream>(cfg.arrivals, cfg.request_rate, arrival_seed(cfg.seed));
      for (std::size_t i = 0; i < schedule.arrivals.size(); ++i) stream->next();
      more = [stream] { return stream->next(); };
    }
    return make_open_loop_pacer(std::move(schedule), cfg.max_inflight, cfg.duration, cfg.warmup, limits,
                                std::move(more));
  }
  const std::int64_t c = cfg.kind == ScenarioKind::kSingleStream ? 1 : cfg.concurrency;
  return make_closed_loop_pacer(c, cfg.num_requests, cfg.duration, cfg.warmup, limits);
}

}  // namespace llmload
