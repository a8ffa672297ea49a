#pragma once
// JSON helpers of the server-metrics code (prometheus.cpp, prometheus_recording.cpp): internal.

#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

namespace llmload::analysis::prom {

inline nlohmann::json num_or_null(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

inline nlohmann::json num_or_null(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

// Rounded to a multiple of `unit` (1e-6: microseconds of seconds, nanoseconds of ms), as the
// nearest double to the decimal, so that the JSON prints 0.020233, not 0.020232999999999998.
inline double round_to(double v, double unit) {
  const double scale = std::round(1.0 / unit);
  return std::round(v * scale) / scale;
}

}  // namespace llmload::analysis::prom
