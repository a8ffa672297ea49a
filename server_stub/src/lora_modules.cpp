#include "llmload/server/lora_modules.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmload/server/server_config.hpp"

namespace llmload::server {
namespace {

using nlohmann::json;

[[noreturn]] void fail(std::string_view item, const std::string& what) {
  throw LoraModuleError(fmt::format("--lora-modules {}: {}", item, what));
}

std::string json_string_field(const json& object, const char* key, std::string_view item, bool required) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) fail(item, fmt::format("the JSON form needs \"{}\" (e.g. {{\"name\":\"a\",\"path\":\"/x\"}})", key));
    return {};
  }
  if (!it->is_string()) fail(item, fmt::format("\"{}\" must be a string", key));
  return it->get<std::string>();
}

LoraModule parse_json_module(std::string_view item) {
  json object;
  try {
    object = json::parse(item);
  } catch (const json::exception&) {
    fail(item, "not NAME=PATH and not a JSON object {\"name\":..,\"path\":..,\"base_model_name\":..}");
  }
  if (!object.is_object()) fail(item, "the JSON form must be an object {\"name\":..,\"path\":..}");
  for (const auto& [key, value] : object.items()) {
    (void)value;
    if (key != "name" && key != "path" && key != "base_model_name") {
      fail(item, fmt::format("unknown field \"{}\" (valid: name, path, base_model_name)", key));
    }
  }
  LoraModule module;
  module.name = json_string_field(object, "name", item, true);
  module.path = json_string_field(object, "path", item, true);
  module.base_model = json_string_field(object, "base_model_name", item, false);
  return module;
}

}  // namespace

const std::vector<std::int64_t>& lora_rank_choices() {
  static const std::vector<std::int64_t> kChoices = {1, 8, 16, 32, 64, 128, 256, 320, 512};
  return kChoices;
}

LoraModule parse_lora_module(std::string_view item, const std::vector<std::string>& models) {
  LoraModule module;
  // vLLM's rule: an '=' and no ',' is the old NAME=PATH form; anything else is JSON.
  if (item.find('=') != std::string_view::npos && item.find(',') == std::string_view::npos &&
      item.find('{') == std::string_view::npos) {
    const auto eq = item.find('=');
    module.name = std::string(item.substr(0, eq));
    module.path = std::string(item.substr(eq + 1));
  } else {
    module = parse_json_module(item);
  }
  if (module.name.empty()) fail(item, "the adapter name is empty: give NAME=PATH");
  if (module.path.empty()) fail(item, "the adapter path is empty: give NAME=PATH");
  if (module.base_model.empty()) {
    if (models.empty()) fail(item, "no --model to run the adapter on");
    module.base_model = models.front();
  } else if (std::find(models.begin(), models.end(), module.base_model) == models.end()) {
    fail(item, fmt::format("base_model_name '{}' is not a served model: add --model {} or name one of the --model "
                           "ids",
                           module.base_model, module.base_model));
  }
  return module;
}

void validate_lora_config(const LoraConfig& lora, const std::vector<std::string>& models) {
  std::set<std::string> names;
  for (const auto& m : lora.modules) {
    if (std::find(models.begin(), models.end(), m.name) != models.end()) {
      throw LoraModuleError(fmt::format("--lora-modules: adapter '{}' has the name of a --model; give the adapter "
                                        "another name",
                                        m.name));
    }
    if (!names.insert(m.name).second) {
      throw LoraModuleError(fmt::format("--lora-modules: adapter '{}' is given twice; each name must be unique",
                                        m.name));
    }
  }
  if (lora.max_loras < 1) {
    throw LoraModuleError(fmt::format("--max-loras {}: must be at least 1", lora.max_loras));
  }
  if (lora.max_cpu_loras < lora.max_loras) {
    throw LoraModuleError(fmt::format("--max-cpu-loras ({}) must be >= --max-loras ({}): raise --max-cpu-loras or "
                                      "leave it out (it defaults to --max-loras)",
                                      lora.max_cpu_loras, lora.max_loras));
  }
  const auto& ranks = lora_rank_choices();
  if (std::find(ranks.begin(), ranks.end(), lora.max_lora_rank) == ranks.end()) {
    throw LoraModuleError(fmt::format("--max-lora-rank {}: not one of vLLM's ranks (1, 8, 16, 32, 64, 128, 256, 320, "
                                      "512)",
                                      lora.max_lora_rank));
  }
}

std::int32_t lora_adapter_id(const LoraConfig& lora, std::string_view model) {
  for (std::size_t i = 0; i < lora.modules.size(); ++i) {
    if (lora.modules[i].name == model) return static_cast<std::int32_t>(i + 1);
  }
  return 0;
}

bool serves_model(const ServerConfig& config, std::string_view model) {
  return std::find(config.models.begin(), config.models.end(), model) != config.models.end() ||
         lora_adapter_id(config.lora, model) != 0;
}

}  // namespace llmload::server
