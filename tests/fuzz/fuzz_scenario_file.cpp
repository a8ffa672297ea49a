// Fuzz target: scenario files (YAML or JSON; JSON is parsed as YAML), as `llmload run
// --scenario-file` reads them: apply_scenario_text, then ScenarioConfig::validate() and the
// summary. Only ConfigError (the documented error, reported to the user) may escape; anything
// else is a crash. Inputs that would make it read a file (api_key_file) are skipped.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <yaml-cpp/yaml.h>

#include "fuzz_check.hpp"
#include "llmload/loadgen/config_error.hpp"
#include "llmload/loadgen/scenario.hpp"
#include "settings.hpp"

namespace {

// `api_key_file: PATH` makes apply_scenario_text read PATH. A fuzzer must not read files, so
// such inputs are skipped: the key can only be spelled with "file" in the text or through a
// YAML escape ('\\'); then the top-level keys are checked exactly as settings.cpp reads them.
bool names_a_file_to_read(const std::string& text) {
  if (text.find("file") == std::string::npos && text.find('\\') == std::string::npos) return false;
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return false;
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) continue;
      std::string key = kv.first.as<std::string>();
      std::replace(key.begin(), key.end(), '_', '-');
      if (key == "api-key-file") return true;
    }
  } catch (const YAML::Exception&) {
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (names_a_file_to_read(text)) return 0;
  llmload::ScenarioConfig cfg;
  try {
    llmload::app::apply_scenario_text(text, "fuzz.yaml", cfg);
  } catch (const llmload::ConfigError& e) {
    // Errors name the file.
    if (std::string(e.what()).find("fuzz.yaml") == std::string::npos) std::fprintf(stderr, "error: %s\n", e.what());
    FUZZ_CHECK(std::string(e.what()).find("fuzz.yaml") != std::string::npos);
    return 0;
  }
  try {
    cfg.validate();
  } catch (const llmload::ConfigError&) {
    return 0;
  }
  // A valid configuration: the settings that validate() promises.
  FUZZ_CHECK(cfg.num_requests || cfg.duration);
  FUZZ_CHECK(cfg.input_tokens >= 1 && cfg.output_tokens >= 1 && cfg.concurrency >= 1);
  FUZZ_CHECK(cfg.api_key.empty());  // never from a file
  (void)llmload::app::scenario_summary(cfg);
  return 0;
}
