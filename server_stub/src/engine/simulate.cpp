#include "llmload/server/engine/simulate.hpp"

#include <stdexcept>
#include <unordered_map>

namespace llmload::server {

double SimRequest::tpot() const {
  if (token_times.size() < 2) return 0;
  return (token_times.back() - token_times.front()) / static_cast<double>(token_times.size() - 1);
}

std::vector<double> SimRequest::itls() const {
  std::vector<double> out;
  for (std::size_t i = 1; i < token_times.size(); ++i) out.push_back(token_times[i] - token_times[i - 1]);
  return out;
}

SimResult simulate(const SchedulerConfig& config, const CostModel& cost, const std::vector<SimArrival>& arrivals) {
  return simulate(config, cost, arrivals, {});
}

SimResult simulate(const SchedulerConfig& config, const CostModel& cost, const std::vector<SimArrival>& arrivals,
                   const std::vector<std::shared_ptr<OutputDecider>>& outputs) {
  if (!outputs.empty() && outputs.size() != arrivals.size()) {
    throw std::invalid_argument("simulate: give one output decider per arrival, or none");
  }
  Scheduler scheduler(config, cost);
  SimResult result;
  result.requests.resize(arrivals.size());
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    if (i > 0 && arrivals[i].time_s < arrivals[i - 1].time_s) {
      throw std::invalid_argument("simulate: arrivals must be in time order");
    }
    result.requests[i].id = arrivals[i].request.id;
    result.requests[i].arrival_s = arrivals[i].time_s;
    index[arrivals[i].request.id] = i;
  }
  double now = 0;
  std::size_t next = 0;
  while (next < arrivals.size() || scheduler.has_work()) {
    if (!scheduler.has_work() && now < arrivals[next].time_s) now = arrivals[next].time_s;
    for (; next < arrivals.size() && arrivals[next].time_s <= now; ++next) {
      scheduler.add(arrivals[next].request, outputs.empty() ? nullptr : outputs[next]);
    }
    const Step step = scheduler.step();
    const double start = now;
    now += step.cost.predicted_seconds;
    for (const auto& e : step.events) {
      SimRequest& r = result.requests[index.at(e.id)];
      switch (e.kind) {
        case StepEvent::Kind::kScheduled:
          r.scheduled_s = start;
          r.cached_tokens = e.cached_tokens;
          break;
        case StepEvent::Kind::kToken:
          r.token_times.push_back(now);
          break;
        case StepEvent::Kind::kPreempted:
          ++r.preemptions;
          break;
      }
    }
    const SchedulerStats stats = scheduler.stats();
    result.steps.push_back(
        SimStep{start, step.cost.predicted_seconds, step.cost, step.running, step.waiting, step.preemptions,
                stats.kv_cache_usage(), step.lora_loads});
    result.preemptions_total += step.preemptions;
    result.prefix_hit_tokens += step.prefix_hit_tokens;
    result.prefix_queried_tokens += step.prefix_queried_tokens;
    if (step.cost.tokens == 0) throw std::logic_error("simulate: the scheduler made a step with no tokens");
  }
  result.end_s = now;
  return result;
}

}  // namespace llmload::server
