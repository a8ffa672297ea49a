#pragma once
// result.json `tokens`: the tokens requested against those the server counted (or llmload
// estimated), and the requests that ended early, over the measured requests that succeeded.

#include <vector>

#include <nlohmann/json.hpp>

#include "llmload/analysis/record_range.hpp"
#include "llmload/analysis/request_record.hpp"

namespace llmload::analysis {

/// Requested versus server-counted tokens, and requests that ended early (docs/artifact.md,
/// `tokens`). Warmup and failed requests are left out.
nlohmann::json token_accounting(RecordRange records);

}  // namespace llmload::analysis
