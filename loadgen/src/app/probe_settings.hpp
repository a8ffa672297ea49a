#pragma once
// The probe stream's settings (--probe-rate, --probe-input-tokens, --probe-output-tokens,
// --probe-baseline): parsed here for the settings table (settings.cpp).

#include <string>

#include "llmload/loadgen/scenario.hpp"

namespace llmload::app {

/// Applies a probe setting; false when `name` is not one. Throws ConfigError naming `origin`
/// and the fix for a bad value.
bool apply_probe_setting(const std::string& name, const std::string& value, const std::string& origin,
                         ScenarioConfig& cfg);

}  // namespace llmload::app
