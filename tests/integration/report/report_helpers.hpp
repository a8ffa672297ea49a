#pragma once
// Helpers of the report's integration tests (report_test.cpp, correctness_test.cpp): running the
// real binaries, reading summary.csv, picking elements out of report.html, and loading the page in
// headless Chromium.

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "subprocess.hpp"

namespace llmload::report_test {

namespace fs = std::filesystem;
using llmload::testing::RunResult;
using llmload::testing::TempDir;
using nlohmann::json;

void write_text(const fs::path& p, const std::string& text);
/// The real `llmload` with these arguments.
RunResult llmload(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::seconds(120));

std::vector<std::string> split_csv_line(const std::string& line);
/// summary.csv as one column-name -> value map per row (its header checked against summary_csv_columns()).
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& p);

/// The <figure> element with this id, as text ("" when absent).
std::string figure(const std::string& html, const std::string& id);
/// Number of points of the longest series path in a figure (its data-n).
int max_series_points(const std::string& fig);
/// Every way a page could load something must be absent (see the definition).
void expect_no_external_resources(const std::string& html);
/// The element with this id (its opening tag up to the matching close of the same tag name, without
/// nesting of the same tag), as text ("" when absent).
std::string element(const std::string& html, const std::string& id);
std::size_t count(const std::string& text, const std::string& what);
/// The html_escape of the report (for comparing printed text with the page).
std::string escaped(const std::string& s);

/// The chromium on PATH ("" when none).
std::string find_chromium();
/// Loads a copy of the page in headless Chromium with a probe injected first in <head>: it records
/// uncaught errors and console.error calls, and after `load` writes them, the resources the page
/// fetched (Resource Timing) and the page's own ready flag into <pre id="__probe">. All traffic
/// goes to a proxy on a closed loopback port, so nothing could leave the machine anyway.
struct Rendered {
  std::string dom;
  json probe;
  std::string log;  // Chromium's stderr (console messages with --enable-logging)
};
std::vector<std::string> chromium_args(const std::string& chromium, const TempDir& profile);
Rendered render(const std::string& chromium, const fs::path& html_file);
/// No errors, no fetches, the script ready, at least min_figures charts, hover and legend working.
void expect_clean_render(const Rendered& r, int min_figures);
/// A full-page screenshot of a report in headless Chromium, kept where
/// LLMLOAD_REPORT_SCREENSHOT_DIR says (to look at it) as `name`.
void screenshot(const std::string& chromium, const fs::path& html, const std::string& name, const std::string& size);

}  // namespace llmload::report_test
