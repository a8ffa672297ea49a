#include "llmload/server/latency_model.hpp"

#include <cmath>
#include <string>

namespace llmload::server {
namespace {

using std::chrono::nanoseconds;

class FixedTimeline final : public TokenTimeline {
 public:
  FixedTimeline(nanoseconds ttft, nanoseconds itl, double jitter, Rng rng)
      : ttft_(ttft), itl_(itl), jitter_(jitter), rng_(rng) {}

  nanoseconds next_due() override {
    const nanoseconds step = emitted_ == 0 ? ttft_ : itl_;
    due_ += scaled(step);
    ++emitted_;
    return due_;
  }

 private:
  nanoseconds scaled(nanoseconds d) {
    if (jitter_ <= 0.0) return d;
    // Drawn even when d is zero so that the stream of draws does not depend on the durations.
    const double factor = rng_.uniform(1.0 - jitter_, 1.0 + jitter_);
    return nanoseconds(std::llround(static_cast<double>(d.count()) * factor));
  }

  nanoseconds ttft_;
  nanoseconds itl_;
  double jitter_;
  Rng rng_;
  nanoseconds due_{0};
  std::int64_t emitted_ = 0;
};

}  // namespace

FixedLatencyModel::FixedLatencyModel(nanoseconds ttft, nanoseconds itl, double jitter)
    : ttft_(ttft), itl_(itl), jitter_(jitter) {
  if (ttft.count() < 0 || itl.count() < 0) throw std::invalid_argument("fixed latency model: durations must be >= 0");
  if (!(jitter >= 0.0 && jitter <= 1.0)) {
    throw std::invalid_argument("fixed latency model: jitter must be in [0, 1], got " + std::to_string(jitter));
  }
}

std::unique_ptr<TokenTimeline> FixedLatencyModel::start(const GenerationShape& /*shape*/, Rng rng) const {
  return std::make_unique<FixedTimeline>(ttft_, itl_, jitter_, rng);
}

const std::vector<std::string>& latency_model_names() {
  static const std::vector<std::string> names = {"engine", "fixed"};
  return names;
}

std::unique_ptr<LatencyModel> make_latency_model(const LatencyConfig& config) {
  if (config.model == "fixed") return std::make_unique<FixedLatencyModel>(config.ttft, config.itl, config.jitter);
  if (config.model == "engine") return nullptr;  // no per-request timeline: the engine runtime times tokens
  std::string valid;
  for (const auto& n : latency_model_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw UnknownLatencyModel("unknown latency model '" + config.model + "'; valid: " + valid);
}

std::vector<nanoseconds> due_offsets(const LatencyModel& model, const GenerationShape& shape, Rng rng) {
  auto timeline = model.start(shape, rng);
  std::vector<nanoseconds> out;
  out.reserve(static_cast<std::size_t>(shape.output_tokens > 0 ? shape.output_tokens : 0));
  for (std::int64_t k = 0; k < shape.output_tokens; ++k) out.push_back(timeline->next_due());
  return out;
}

}  // namespace llmload::server
