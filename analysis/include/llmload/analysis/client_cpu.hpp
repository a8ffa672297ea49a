// The client's own CPU while the load ran (result.json `client_cpu`): whether the client could
// have been the bottleneck. One formula for a run and for a merged (--workers, shards) one.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace llmload::analysis {

/// {user_s, system_s, wall_s, core_share: (user + system) / wall (null without a wall time),
/// per_request_us: (user + system) / requests in µs (null without requests), covers}.
nlohmann::json client_cpu_json(double user_s, double system_s, double wall_s, std::int64_t requests,
                               const std::string& covers);

}  // namespace llmload::analysis
