// `llmload report` end to end: real artifacts from the real `llmload run` against the real
// llmload-server on loopback, the report written by the real binary, and report.html rendered in
// headless Chromium (no console errors, no network requests, the charts present with data), plus
// checks of summary.csv / summary.md against result.json, sweeps, partial and corrupt artifacts.
// The Chromium checks skip when no chromium is installed (scripts/setup.sh installs it).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llmload/analysis/html_report.hpp"
#include "subprocess.hpp"

namespace {

namespace fs = std::filesystem;
using llmload::testing::binary_path;
using llmload::testing::read_file;
using llmload::testing::RunResult;
using llmload::testing::ServerHandle;
using llmload::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

RunResult llmload(const std::vector<std::string>& args, std::chrono::milliseconds timeout = 120s) {
  std::vector<std::string> argv = {binary_path("llmload")};
  argv.insert(argv.end(), args.begin(), args.end());
  return llmload::testing::run(argv, timeout);
}

/// A short open-loop run of the real client against the shared server.
void real_run(const std::string& url, const fs::path& out, const std::string& rate, const std::string& n,
              const std::string& warmup) {
  const RunResult r = llmload({"run", "--base-url", url, "--scenario", "server", "--request-rate", rate, "--num-requests", n,
                               "--warmup", warmup, "--input-tokens", "64", "--output-tokens", "24", "--seed", "3",
                               "--slo", "ttft:150ms,tpot:40ms", "--output", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(fs::exists(out / "result.json"));
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(cur);
  return f;
}

/// summary.csv as one column-name -> value map per row.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& p) {
  std::istringstream in(read_file(p.string()));
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  EXPECT_EQ(header, llmload::analysis::summary_csv_columns());
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    EXPECT_EQ(f.size(), header.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < f.size(); ++i) row[header[i]] = f[i];
    rows.push_back(row);
  }
  return rows;
}

/// The <figure> element with this id, as text ("" when absent).
std::string figure(const std::string& html, const std::string& id) {
  const auto start = html.find("<figure class=\"chart\" id=\"" + id + "\"");
  if (start == std::string::npos) return {};
  const auto end = html.find("</figure>", start);
  return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

/// Number of points of the longest series path in a figure (its data-n).
int max_series_points(const std::string& fig) {
  static const std::regex re(R"re(<path class="series" d="M[^"]*"[^>]*data-n="(\d+)")re");
  int best = 0;
  for (std::sregex_iterator it(fig.begin(), fig.end(), re), end; it != end; ++it) best = std::max(best, std::stoi((*it)[1]));
  return best;
}

/// Every way a page could load something: the attributes that take a URL must be fragment-only
/// (#...), no <link>, no @import, url(...) only to an in-document fragment, no script src.
void expect_no_external_resources(const std::string& html) {
  static const std::regex tag(R"re(<[a-zA-Z][^<>]*>)re");
  static const std::regex attr(R"re(\s(src|href|xlink:href|action|poster|srcset|data|formaction|background|ping)\s*=\s*["']?([^"'\s>]*))re",
                               std::regex::icase);
  std::size_t tags = 0;
  for (std::sregex_iterator t(html.begin(), html.end(), tag), end; t != end; ++t) {
    ++tags;
    const std::string text = (*t)[0];
    for (std::sregex_iterator it(text.begin(), text.end(), attr); it != end; ++it) {
      const std::string value = (*it)[2];
      EXPECT_TRUE(!value.empty() && value[0] == '#') << "resource attribute in " << text;
    }
  }
  EXPECT_GT(tags, 100u);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("<iframe"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  for (auto pos = html.find("url("); pos != std::string::npos; pos = html.find("url(", pos + 4)) {
    EXPECT_EQ(html.substr(pos, 5), "url(#") << html.substr(pos, 60);
  }
  for (const char* api : {"fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "sendBeacon", "import("}) {
    EXPECT_EQ(html.find(api), std::string::npos) << api;
  }
}

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
    std::string d;
    while (std::getline(dirs, d, ':')) {
      const fs::path p = fs::path(d) / name;
      std::error_code ec;
      if (fs::exists(p, ec) && !fs::is_directory(p, ec)) return p.string();
    }
  }
  return {};
}

/// Loads a copy of the page in headless Chromium with a probe injected first in <head>: it records
/// uncaught errors and console.error calls, and after `load` writes them, the resources the page
/// fetched (Resource Timing) and the page's own ready flag into <pre id="__probe">. All traffic
/// goes to a proxy on a closed loopback port, so nothing could leave the machine anyway.
struct Rendered {
  std::string dom;
  json probe;
  std::string log;  // Chromium's stderr (console messages with --enable-logging)
};

std::vector<std::string> chromium_args(const std::string& chromium, const TempDir& profile) {
  return {chromium,
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--disable-dev-shm-usage",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-default-apps",
          "--disable-sync",
          "--disable-extensions",
          "--proxy-server=127.0.0.1:1",
          "--user-data-dir=" + profile.path(),
          "--enable-logging=stderr",
          "--v=0"};
}

Rendered render(const std::string& chromium, const fs::path& html_file) {
  TempDir work;
  std::string html = read_file(html_file.string());
  const std::string probe = R"(<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
(function () { var ce = console.error; console.error = function () {
  window.__errors.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); return ce.apply(console, arguments); }; })();
window.addEventListener('load', function () { setTimeout(function () {
  // Exercise the page's script: hover the first chart, click its first legend entry.
  var readout = null, toggled = null, fig = document.querySelector('figure.chart');
  if (fig) {
    var svg = fig.querySelector('svg.plot'), r = svg.getBoundingClientRect();
    svg.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true }));
    readout = fig.querySelector('.readout').textContent;
    var item = fig.querySelector('.legend-item');
    if (item) {
      item.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      toggled = fig.querySelector('.series-group[data-series="' + item.getAttribute('data-series') + '"]').classList.contains('off');
    }
  }
  var p = document.createElement('pre'); p.id = '__probe';
  p.textContent = JSON.stringify({ errors: window.__errors, readout: readout, toggled: toggled,
    resources: performance.getEntriesByType('resource').map(function (r) { return r.name; }),
    ready: document.documentElement.getAttribute('data-report-ready'),
    figures: document.querySelectorAll('figure.chart').length,
    svgs: document.querySelectorAll('figure.chart svg').length });
  document.body.appendChild(p); }, 0); });
</script>)";
  const auto head = html.find("<head>");
  EXPECT_NE(head, std::string::npos);
  html.insert(head + 6, probe);
  const fs::path copy = fs::path(work.path()) / "probe.html";
  write_text(copy, html);
  auto argv = chromium_args(chromium, work);
  argv.push_back("--virtual-time-budget=5000");
  argv.push_back("--dump-dom");
  argv.push_back("file://" + copy.string());
  const RunResult r = llmload::testing::run(argv, 90s);
  Rendered out;
  out.dom = r.out;
  out.log = r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  static const std::regex pre(R"re(<pre id="__probe">([^<]*)</pre>)re");
  std::smatch m;
  if (std::regex_search(out.dom, m, pre)) {
    std::string text = m[1];
    // The DOM dump escapes &, < and > in text.
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
      for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) text.replace(pos, from.size(), to);
    }
    out.probe = json::parse(text, nullptr, false);
  }
  return out;
}

void expect_clean_render(const Rendered& r, int min_figures) {
  ASSERT_TRUE(r.probe.is_object()) << "the probe did not report; DOM:\n" << r.dom.substr(0, 2000) << "\nlog:\n" << r.log;
  EXPECT_TRUE(r.probe["errors"].empty()) << r.probe["errors"].dump(2);
  EXPECT_TRUE(r.probe["resources"].empty()) << "the page fetched: " << r.probe["resources"].dump(2);
  EXPECT_EQ(r.probe["ready"], "1") << "the report's script did not finish";
  EXPECT_GE(r.probe["figures"].get<int>(), min_figures);
  EXPECT_EQ(r.probe["figures"], r.probe["svgs"]);
  // Hovering a chart prints the values under the pointer; a legend click hides its series.
  EXPECT_TRUE(r.probe["readout"].is_string() && r.probe["readout"].get<std::string>().find(": ") != std::string::npos)
      << r.probe["readout"];
  EXPECT_EQ(r.probe["toggled"], true);
  // Console messages Chromium logged for the page itself.
  std::istringstream lines(r.log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("CONSOLE") != std::string::npos) ADD_FAILURE() << "console message: " << line;
  }
}

class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    server_ = new ServerHandle(llmload::testing::start_server({}));
    root_ = fs::path(tmp_->path());
    // One run (warmup shaded, some hundreds of requests) and a two-point sweep.
    real_run(server_->base_url, root_ / "run", "80", "240", "40");
    real_run(server_->base_url, root_ / "sweep" / "rate-60", "60", "90", "10");
    real_run(server_->base_url, root_ / "sweep" / "rate-15", "15", "30", "5");
    chromium_ = find_chromium();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete tmp_;
    tmp_ = nullptr;
  }
  void SetUp() override {
    if (!fs::exists(root_ / "run" / "result.json")) GTEST_FAIL() << "the artifacts could not be generated";
  }
  /// A copy of the single run's artifact in a fresh directory.
  static fs::path copy_run(const std::string& name) {
    const fs::path d = root_ / name;
    fs::remove_all(d);
    fs::copy(root_ / "run", d, fs::copy_options::recursive);
    for (const char* f : {"report.html", "summary.md", "summary.csv"}) fs::remove(d / f);
    return d;
  }
  // The checks, run by one test so that the artifacts are generated once (ctest runs each test
  // in a process of its own).
  void RunReportRendersOfflineInChromiumWithEveryChart();
  void CsvAndMarkdownCarryTheNumbersOfResultJson();
  void SweepOfSubdirectoriesGetsTheSweepCharts();
  void SweepJsonListsPointsAndCapacity();
  void TrialsArrayGetsSpreadCharts();
  void PartialArtifactStillRendersWhatItHas();
  void MissingOrCorruptFilesAreClearErrors();

  static TempDir* tmp_;
  static ServerHandle* server_;
  static fs::path root_;
  static std::string chromium_;
};
TempDir* Report::tmp_ = nullptr;
ServerHandle* Report::server_ = nullptr;
fs::path Report::root_;
std::string Report::chromium_;

void Report::RunReportRendersOfflineInChromiumWithEveryChart() {
  const fs::path dir = copy_run("run-html");
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("report.html"), std::string::npos) << r.out;
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  // Header: verdicts and conditions.
  EXPECT_NE(html.find("id=\"verdict-slo\""), std::string::npos);
  EXPECT_NE(html.find("id=\"verdict-validity\""), std::string::npos);
  EXPECT_NE(html.find("id=\"conditions\""), std::string::npos);
  EXPECT_NE(html.find("id=\"latency-table\""), std::string::npos);
  const json result = json::parse(read_file((dir / "result.json").string()));
  EXPECT_NE(html.find(">SLO " + result["slo"]["verdict"].get<std::string>() + "<"), std::string::npos);
  EXPECT_NE(html.find(result["conditions"]["tool"]["version"].get<std::string>()), std::string::npos);
  // Every chart, each with a series that has data.
  for (const char* id : {"chart-pct-ttft", "chart-pct-tpot", "chart-pct-itl", "chart-pct-e2e", "chart-ts-requests",
                         "chart-ts-tokens", "chart-ts-inflight", "chart-ts-ttft"}) {
    const std::string fig = figure(html, id);
    ASSERT_FALSE(fig.empty()) << id;
    EXPECT_GE(max_series_points(fig), 5) << id;
  }
  // Percentile axis toward the tail; the TTFT SLO line (150 ms) and the shaded warmup.
  const std::string pct = figure(html, "chart-pct-ttft");
  EXPECT_NE(pct.find(">99%<"), std::string::npos);
  EXPECT_NE(pct.find(">90%<"), std::string::npos);
  EXPECT_NE(pct.find("SLO 150 ms"), std::string::npos);
  EXPECT_NE(figure(html, "chart-ts-requests").find("warmup (discarded)"), std::string::npos);
  // No trials array in a plain run: no trial charts.
  EXPECT_EQ(html.find("data-chart=\"trials-"), std::string::npos);

  if (chromium_.empty()) return;  // reported as a skip at the end of the test
  expect_clean_render(render(chromium_, dir / "report.html"), 8);

  // A full-page screenshot, kept where LLMLOAD_REPORT_SCREENSHOT_DIR says (to look at it).
  TempDir profile;
  const fs::path png = fs::path(profile.path()) / "report.png";
  auto argv = chromium_args(chromium_, profile);
  for (const char* a : {"--hide-scrollbars", "--window-size=1300,4600", "--virtual-time-budget=3000"}) argv.emplace_back(a);
  argv.push_back("--screenshot=" + png.string());
  argv.push_back("file://" + (dir / "report.html").string());
  const RunResult shot = llmload::testing::run(argv, 90s);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20000u);  // a blank page compresses to a few KB
  if (const char* keep = std::getenv("LLMLOAD_REPORT_SCREENSHOT_DIR"); keep != nullptr && *keep != '\0') {
    fs::create_directories(keep);
    fs::copy_file(png, fs::path(keep) / "run-report.png", fs::copy_options::overwrite_existing);
  }
}

void Report::CsvAndMarkdownCarryTheNumbersOfResultJson() {
  const fs::path dir = copy_run("run-csv");
  const fs::path out = root_ / "elsewhere";
  const RunResult r = llmload({"report", dir.string(), "--output", out.string(), "--interval", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir / "report.html"));  // --output
  const json res = json::parse(read_file((dir / "result.json").string()));
  const auto rows = read_csv(out / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows[0];
  auto num = [&](const std::string& col) { return std::stod(row.at(col)); };
  // Exact: the CSV prints the shortest round-trip form of result.json's doubles.
  EXPECT_EQ(row.at("run"), "run-csv");
  EXPECT_EQ(num("offered_load"), res["load"]["offered_rate"].get<double>());
  EXPECT_EQ(row.at("load_kind"), "rate");
  EXPECT_EQ(num("request_throughput"), res["request_throughput"].get<double>());
  EXPECT_EQ(num("output_throughput"), res["output_throughput"].get<double>());
  EXPECT_EQ(num("request_goodput"), res["slo"]["request_goodput"].get<double>());
  EXPECT_EQ(num("token_goodput"), res["slo"]["token_goodput"].get<double>());
  EXPECT_EQ(num("attainment"), res["slo"]["attainment"].get<double>());
  for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
    for (const char* p : {"p50", "p90", "p99"}) {
      const std::string col = std::string(m) + "_" + p + "_ms";
      EXPECT_EQ(num(col), res["latency"][m][std::string(p) + "_ms"].get<double>()) << col;
    }
  }
  EXPECT_EQ(num("completed"), res["completed"].get<double>());
  EXPECT_EQ(num("failed"), res["failed"].get<double>());
  EXPECT_EQ(row.at("slo_verdict"), res["slo"]["verdict"]);
  EXPECT_EQ(row.at("validity"), res["validity"]["valid"].get<bool>() ? "valid" : "INVALID");
  EXPECT_EQ(row.at("interrupted"), "false");

  using llmload::analysis::format_number;
  const std::string md = read_file((out / "summary.md").string());
  EXPECT_NE(md.find("# llmload report: run-csv"), std::string::npos);
  EXPECT_NE(md.find("- **SLO**: " + res["slo"]["verdict"].get<std::string>()), std::string::npos);
  EXPECT_NE(md.find("| request throughput | " + format_number(res["request_throughput"]) + " req/s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| output throughput | " + format_number(res["output_throughput"]) + " tokens/s |"), std::string::npos);
  const auto& t = res["latency"]["ttft"];
  EXPECT_NE(md.find("| TTFT | " + format_number(t["count"]) + " | " + format_number(t["mean_ms"]) + " | " +
                    format_number(t["p50_ms"]) + " | " + format_number(t["p90_ms"]) + " | " + format_number(t["p95_ms"]) + " | " +
                    format_number(t["p99_ms"])),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tpot | 40 |"), std::string::npos) << md;  // the SLO table
  EXPECT_NE(md.find("**command line**"), std::string::npos);
  // --interval reaches the time series.
  EXPECT_NE(read_file((out / "report.html").string()).find("per 0.5 s interval"), std::string::npos);
}

void Report::SweepOfSubdirectoriesGetsTheSweepCharts() {
  const fs::path dir = root_ / "sweep";
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("run"), "rate-15");  // in increasing offered load, not name order
  EXPECT_EQ(rows[1].at("run"), "rate-60");
  EXPECT_EQ(std::stod(rows[0].at("offered_load")), 15.0);
  EXPECT_EQ(std::stod(rows[1].at("offered_load")), 60.0);
  const std::string html = read_file((dir / "report.html").string());
  expect_no_external_resources(html);
  EXPECT_NE(html.find("id=\"sweep-table\""), std::string::npos);
  for (const char* id : {"chart-latency-throughput-ttft", "chart-latency-throughput-tpot", "chart-latency-throughput-e2e",
                         "chart-goodput", "chart-attainment", "chart-pct-by-load-ttft", "p0-chart-pct-ttft", "p1-chart-ts-requests"}) {
    const std::string fig = figure(html, id);
    ASSERT_FALSE(fig.empty()) << id;
    EXPECT_GE(max_series_points(fig), 2) << id;
  }
  EXPECT_NE(figure(html, "chart-latency-throughput-ttft").find("SLO 150 ms"), std::string::npos);
  const std::string md = read_file((dir / "summary.md").string());
  EXPECT_NE(md.find("# llmload sweep report: sweep"), std::string::npos);
  EXPECT_NE(md.find("| rate-15 | 15 req/s |"), std::string::npos) << md;

  if (chromium_.empty()) return;  // reported as a skip at the end of the test
  expect_clean_render(render(chromium_, dir / "report.html"), 20);
}

void Report::SweepJsonListsPointsAndCapacity() {
  const fs::path dir = root_ / "sweep-listed";
  fs::create_directories(dir);
  write_text(dir / "sweep.json", R"({"points": [
      {"dir": "../sweep/rate-60", "offered": 60},
      {"dir": "../sweep/rate-15", "offered": 15},
      {"dir": "rate-200", "offered": 200}],
    "capacity": {"highest_pass": 15, "lowest_fail": 60}})");
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The listed point that was never run is a note, not an error.
  EXPECT_NE(r.err.find("points[2] ('rate-200'): no artifact"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  EXPECT_NE(html.find("capacity 15 req/s (highest passing load; the lowest failing is 60 req/s)"), std::string::npos);
  const std::string lt = figure(html, "chart-latency-throughput-ttft");
  EXPECT_NE(lt.find("class=\"callout\""), std::string::npos);
  EXPECT_NE(lt.find("capacity (15 req/s)"), std::string::npos);
  EXPECT_NE(figure(html, "chart-attainment").find("capacity bracket"), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("run"), "../sweep/rate-15");
  EXPECT_NE(read_file((dir / "summary.md").string()).find("(capacity)"), std::string::npos);

  write_text(dir / "sweep.json", R"({"points": [{"offered": 3}]})");
  const RunResult bad = llmload({"report", dir.string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("sweep.json: points[0] needs \"dir\""), std::string::npos) << bad.err;
}

void Report::TrialsArrayGetsSpreadCharts() {
  const fs::path dir = copy_run("run-trials");
  json res = json::parse(read_file((dir / "result.json").string()));
  res["trials"] = json::array({{{"request_throughput", 70.5}, {"p99_ttft_ms", 31.0}},
                               {{"request_throughput", 72.0}, {"p99_ttft_ms", 29.5}},
                               {{"result", {{"request_throughput", 69.0}, {"p99_ttft_ms", 35.0}}}}});
  write_text(dir / "result.json", res.dump());
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  const std::string fig = figure(html, "chart-trials-request_throughput");
  ASSERT_FALSE(fig.empty());
  EXPECT_NE(fig.find("median 70.5"), std::string::npos);
  EXPECT_NE(fig.find("3 trials: min 69, median 70.5, max 72"), std::string::npos);
  EXPECT_FALSE(figure(html, "chart-trials-p99_ttft_ms").empty());
}

void Report::PartialArtifactStillRendersWhatItHas() {
  const fs::path dir = copy_run("run-partial");
  fs::remove(dir / "result.json");
  fs::remove(dir / "latency.hlog");
  // Cut the last line in half, as a run killed while writing would.
  std::string jsonl = read_file((dir / "requests.jsonl").string());
  jsonl.resize(jsonl.size() - 40);
  write_text(dir / "requests.jsonl", jsonl);
  std::size_t measured = 0;  // the complete lines of requests after warmup
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && !j["warmup"].get<bool>()) ++measured;
  }
  const RunResult r = llmload({"report", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no result.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is cut off"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("recomputed from requests.jsonl"), std::string::npos) << r.err;
  const std::string html = read_file((dir / "report.html").string());
  EXPECT_GE(max_series_points(figure(html, "chart-pct-ttft")), 5);
  EXPECT_GE(max_series_points(figure(html, "chart-ts-requests")), 5);
  EXPECT_TRUE(figure(html, "chart-pct-itl").empty());  // ITL needs the per-event gaps
  EXPECT_NE(html.find("class=\"notes\""), std::string::npos);
  const auto rows = read_csv(dir / "summary.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("request_throughput"), "");  // unknown without result.json
  EXPECT_EQ(std::stod(rows[0].at("completed")) + std::stod(rows[0].at("failed")), static_cast<double>(measured));
}

void Report::MissingOrCorruptFilesAreClearErrors() {
  {
    const RunResult r = llmload({"report", (root_ / "no-such-dir").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("no-such-dir' does not exist"), std::string::npos) << r.err;
  }
  {
    const fs::path d = root_ / "empty-dir";
    fs::create_directories(d);
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("holds no llmload artifact"), std::string::npos) << r.err;
  }
  {
    const fs::path d = copy_run("bad-result");
    write_text(d / "result.json", "{\"completed\": 3,");
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("result.json: not valid JSON"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(d / "report.html"));
  }
  {
    const fs::path d = copy_run("bad-jsonl");
    std::string jsonl = read_file((d / "requests.jsonl").string());
    jsonl.insert(jsonl.find('\n') + 1, "{\"index\": oops}\n");
    write_text(d / "requests.jsonl", jsonl);
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("requests.jsonl: line 2 is not valid JSON"), std::string::npos) << r.err;
  }
  {
    const fs::path d = copy_run("bad-field");
    std::string jsonl = read_file((d / "requests.jsonl").string());
    const auto pos = jsonl.find("\"t_intended_ms\":");
    jsonl.replace(pos, 16, "\"t_intended_xx\":");
    write_text(d / "requests.jsonl", jsonl);
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("requests.jsonl: line 1: missing \"t_intended_ms\""), std::string::npos) << r.err;
  }
  {
    const fs::path d = copy_run("bad-hlog");
    write_text(d / "latency.hlog", "Tag=ttft,0.1,1.0,2.0,HISTFnot-base64!!\n");
    const RunResult r = llmload({"report", d.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("latency.hlog: hlog line 1"), std::string::npos) << r.err;
  }
}

// One test: a real run and a real two-point sweep (a few seconds of load), then every check.
TEST_F(Report, RealArtifactsEndToEnd) {
  {
    SCOPED_TRACE("RunReportRendersOfflineInChromiumWithEveryChart");
    RunReportRendersOfflineInChromiumWithEveryChart();
  }
  {
    SCOPED_TRACE("CsvAndMarkdownCarryTheNumbersOfResultJson");
    CsvAndMarkdownCarryTheNumbersOfResultJson();
  }
  {
    SCOPED_TRACE("SweepOfSubdirectoriesGetsTheSweepCharts");
    SweepOfSubdirectoriesGetsTheSweepCharts();
  }
  {
    SCOPED_TRACE("SweepJsonListsPointsAndCapacity");
    SweepJsonListsPointsAndCapacity();
  }
  {
    SCOPED_TRACE("TrialsArrayGetsSpreadCharts");
    TrialsArrayGetsSpreadCharts();
  }
  {
    SCOPED_TRACE("PartialArtifactStillRendersWhatItHas");
    PartialArtifactStillRendersWhatItHas();
  }
  {
    SCOPED_TRACE("MissingOrCorruptFilesAreClearErrors");
    MissingOrCorruptFilesAreClearErrors();
  }
  if (chromium_.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs the Debian package): the report.html "
                    "checks in a browser were skipped; everything else ran";
  }
}

// --- the computations, on synthetic records ----------------------------------------------------

llmload::analysis::RequestRecord record(double send_s, double first_s, double last_s, std::int64_t tokens) {
  using llmload::analysis::Nanos;
  auto ns = [](double s) { return Nanos(static_cast<std::int64_t>(std::llround(s * 1e9))); };
  llmload::analysis::RequestRecord r;
  r.t_intended = ns(send_s);
  r.t_send = ns(send_s);
  r.t_first = ns(first_s);
  r.t_last = ns(last_s);
  r.t_done = ns(last_s);
  r.output_tokens = tokens;
  r.in_window = true;
  return r;
}

TEST(ReportSeries, TokensAndInFlightAreConserved) {
  std::vector<llmload::analysis::RequestRecord> recs;
  // 20 requests, one every 0.5 s, each 2.5 s long with 11 tokens: 5 in flight in steady state.
  for (int i = 0; i < 20; ++i) recs.push_back(record(0.5 * i, 0.5 * i + 0.5, 0.5 * i + 2.5, 11));
  const auto ts = llmload::analysis::compute_time_series(recs, json::object({{"window", {{"start_s", 1.0}, {"end_s", 9.0}}}}), 1.0);
  EXPECT_DOUBLE_EQ(ts.interval_s, 1.0);
  EXPECT_DOUBLE_EQ(ts.end_s, 12.0);
  ASSERT_EQ(ts.start_s.size(), 12u);
  double tokens = 0, completions = 0, busy = 0;
  for (std::size_t i = 0; i < ts.start_s.size(); ++i) {
    tokens += ts.tokens_per_s[i];
    completions += ts.completions_per_s[i];
    busy += ts.in_flight[i];
  }
  EXPECT_NEAR(tokens, 20 * 11, 1e-6);
  EXPECT_NEAR(completions, 20, 1e-9);
  EXPECT_NEAR(busy, 20 * 2.5, 1e-6);  // request-seconds
  EXPECT_NEAR(ts.in_flight[5], 5.0, 1e-6);
  EXPECT_NEAR(ts.ttft_p50_ms[5], 500.0, 1e-6);
  EXPECT_TRUE(std::isnan(ts.ttft_p50_ms[11]));  // no first token in the last second
  EXPECT_EQ(ts.window_start_s, 1.0);
  EXPECT_EQ(ts.window_end_s, 9.0);
}

TEST(ReportSeries, IntervalFollowsTheRunLength) {
  using llmload::analysis::choose_interval;
  EXPECT_DOUBLE_EQ(choose_interval(3), 0.1);
  EXPECT_DOUBLE_EQ(choose_interval(16), 0.5);
  EXPECT_DOUBLE_EQ(choose_interval(60), 1);
  EXPECT_DOUBLE_EQ(choose_interval(600), 10);
  EXPECT_DOUBLE_EQ(choose_interval(3600), 60);
}

TEST(ReportSeries, PercentileCurveReachesTheTail) {
  llmload::analysis::HdrHistogram h;
  for (int v = 1; v <= 10000; ++v) h.record(v * 10);  // 10 us .. 100 ms
  const auto curve = llmload::analysis::percentile_curve(h);
  ASSERT_GT(curve.size(), 150u);  // x from 0 to log10(10000) = 4 in steps of 0.02, then the max
  EXPECT_DOUBLE_EQ(curve.front().first, 0.0);
  EXPECT_NEAR(curve[50].first, 90.0, 1e-9);  // x = 1
  EXPECT_NEAR(curve[100].first, 99.0, 1e-9);  // x = 2
  EXPECT_NEAR(curve[100].second, h.value_at_percentile(99) / 1e3, 1e-12);
  EXPECT_DOUBLE_EQ(curve.back().first, 100.0);
  EXPECT_DOUBLE_EQ(curve.back().second, h.max() / 1e3);
  for (std::size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i].second, curve[i - 1].second);
}

TEST(ReportFormat, NumbersForPeople) {
  using llmload::analysis::format_number;
  EXPECT_EQ(format_number(2554.469), "2554");
  EXPECT_EQ(format_number(12515.79), "12,516");
  EXPECT_EQ(format_number(1234567.0), "1,234,567");
  EXPECT_EQ(format_number(38.91), "38.9");
  EXPECT_EQ(format_number(9.876), "9.88");
  EXPECT_EQ(format_number(0.228), "0.228");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(40.0), "40");
  EXPECT_EQ(format_number(-3.5), "-3.50");
  EXPECT_EQ(format_number(std::nan("")), "–");
}

}  // namespace
