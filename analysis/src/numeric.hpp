#pragma once
// Numeric helpers shared by the analysis sources: one definition of each (internal header).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The latency histograms' highest trackable value, in microseconds (1 hour): larger values are
/// clamped to it.
inline constexpr std::int64_t kHighestUs = 3'600'000'000;

/// A duration in whole microseconds (rounded), clamped to [0, kHighestUs]: what the histograms record.
inline std::int64_t to_us(Nanos v) { return std::clamp<std::int64_t>((v.count() + 500) / 1000, 0, kHighestUs); }

/// A finite number, or null (JSON has no NaN or infinity).
inline nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace llmload::analysis
