#pragma once
// When each generated token of a request is due. The HTTP layer asks the model for a
// TokenTimeline when a request has been fully read (time t0) and writes token k at
// t0 + timeline.next_due() (the k-th call). Offsets are absolute from t0, so timer slack in the
// writer never accumulates.
//
// This is the seam where a continuous-batching engine simulator replaces the fixed model later.
// Threading: a LatencyModel is shared by all io threads and must be safe to call concurrently
// (start() is const); a TokenTimeline belongs to one request and is used from one coroutine.

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "llmload/server/rng.hpp"
#include "llmload/server/server_config.hpp"

namespace llmload::server {

/// What the model knows about a request when it starts.
struct GenerationShape {
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 1;  ///< >= 1; the mock always generates exactly this many
};

/// The due times of one request's tokens, in order.
class TokenTimeline {
 public:
  virtual ~TokenTimeline() = default;
  /// Offset from t0 at which the next token is due. Called once per token (output_tokens times);
  /// results are non-decreasing and non-negative.
  virtual std::chrono::nanoseconds next_due() = 0;
};

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;
  /// Starts the timeline of one request; `rng` is that request's own random stream.
  virtual std::unique_ptr<TokenTimeline> start(const GenerationShape& shape, Rng rng) const = 0;
  /// The name used on the command line (--latency-model).
  virtual std::string_view name() const = 0;
};

/// "fixed": token 0 is due at TTFT, token k at TTFT + k x ITL. With jitter j > 0 the TTFT and
/// each ITL are scaled by their own factor drawn uniform in [1-j, 1+j] from the request's rng.
class FixedLatencyModel final : public LatencyModel {
 public:
  /// Throws std::invalid_argument for negative durations or jitter outside [0, 1].
  FixedLatencyModel(std::chrono::nanoseconds ttft, std::chrono::nanoseconds itl, double jitter);
  std::unique_ptr<TokenTimeline> start(const GenerationShape& shape, Rng rng) const override;
  std::string_view name() const override { return "fixed"; }

 private:
  std::chrono::nanoseconds ttft_;
  std::chrono::nanoseconds itl_;
  double jitter_;
};

/// Thrown for an unknown model name; the message lists the valid names.
class UnknownLatencyModel : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Names accepted by make_latency_model, in the order --help lists them.
const std::vector<std::string>& latency_model_names();

/// Builds the model `config.model` names; nullptr for "engine" (the HTTP server then runs the
/// engine simulator, engine/runtime.hpp). Throws UnknownLatencyModel / std::invalid_argument.
std::unique_ptr<LatencyModel> make_latency_model(const LatencyConfig& config);

/// All due offsets of a request at once (tests and tools; the server streams them lazily).
std::vector<std::chrono::nanoseconds> due_offsets(const LatencyModel& model, const GenerationShape& shape, Rng rng);

}  // namespace llmload::server
