#pragma once
// The report's probe-stream section (--probe-rate; docs/report.md "Probe stream"): a run's
// `probe` section, or a trials artifact's medians across trials, as a table (HTML), a list
// (summary.md) and summary.csv columns.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmload::analysis::report_html {

/// The "Probe stream" section (id <prefix>probe); "" when the result has no probe section.
std::string probe_html(const nlohmann::json& result, const std::string& prefix, int h);
void probe_md(std::string& o, const nlohmann::json& result, const std::string& h);

/// summary.csv's probe columns and a row's values (NaN where unknown: no probe stream).
std::vector<std::string> probe_csv_columns();
std::vector<double> probe_csv_values(const nlohmann::json& result);

}  // namespace llmload::analysis::report_html
