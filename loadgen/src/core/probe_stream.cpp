#include "llmload/loadgen/probe_stream.hpp"

#include "llmload/loadgen/prompt.hpp"

namespace llmload {

ProbeSchedule::ProbeSchedule(double rate, std::uint64_t seed) : mean_gap_s_(rate > 0 ? 1.0 / rate : 0), rng_(seed) {}

void ProbeSchedule::begin(TimePoint start) {
  if (begun_) return;
  begun_ = true;
  next_ = start + exponential_gap(rng_.uniform(), mean_gap_s_);
}

void ProbeSchedule::advance() { next_ += exponential_gap(rng_.uniform(), mean_gap_s_); }

ProbeStream::ProbeStream(const ScenarioConfig& run, const std::string& base_path, const std::string& host_header,
                         TokenModel tokens)
    : cfg_(probe_scenario(run)),
      builder_(cfg_, base_path, host_header),
      tokens_(std::move(tokens)),
      seed_(probe_seed(run.seed)),
      schedule_(run.probe.rate, seed_) {}

std::optional<TimePoint> ProbeStream::due() const {
  if (stopped_ || !schedule_.begun()) return std::nullopt;
  return schedule_.next();
}

ProbeRelease ProbeStream::release(TimePoint run_start) {
  const TimePoint intended = schedule_.next();
  schedule_.advance();
  return make(released_++, intended - run_start);
}

WorkItem ProbeStream::item(std::uint64_t index) const {
  WorkItem item;
  item.prompt = tokens_.synthesize(cfg_.input_tokens, mix_seed(seed_ + 1 + index));
  item.input_tokens = cfg_.input_tokens;
  item.output_tokens = cfg_.output_tokens;
  return item;
}

ProbeRelease ProbeStream::make(std::uint64_t index, Nanos intended) const {
  const WorkItem item = this->item(index);
  ProbeRelease p;
  p.http = builder_.build(item);
  p.record.index = index;
  p.record.in_window = true;
  p.record.t_intended = intended;
  p.record.item = index;
  p.record.model = cfg_.model;
  p.record.requested_input_tokens = item.input_tokens;
  p.record.requested_output_tokens = item.output_tokens;
  return p;
}

}  // namespace llmload
