#include "llmload/analysis/client_cpu.hpp"

namespace llmload::analysis {

nlohmann::json client_cpu_json(double user_s, double system_s, double wall_s, std::int64_t requests,
                               const std::string& covers) {
  using nlohmann::json;
  const double cpu = user_s + system_s;
  return {{"user_s", user_s},
          {"system_s", system_s},
          {"wall_s", wall_s},
          {"core_share", wall_s > 0 ? json(cpu / wall_s) : json(nullptr)},
          {"per_request_us", requests > 0 ? json(cpu / static_cast<double>(requests) * 1e6) : json(nullptr)},
          {"covers", covers}};
}

}  // namespace llmload::analysis
