// Helpers of the report's integration tests (report_helpers.hpp).
#include "report_helpers.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "llmload/analysis/html_report.hpp"

namespace llmload::report_test {

using llmload::testing::binary_path;
using llmload::testing::read_file;
using namespace std::chrono_literals;

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

RunResult llmload(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {binary_path("llmload")};
  argv.insert(argv.end(), args.begin(), args.end());
  return llmload::testing::run(argv, timeout);
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
/// (#...), no <link>, no @import, url(...) only to an in-document fragment, no script src. The one
/// exception: a link (<a href>, loaded only when clicked) to another report by a relative path
/// (a trial's report.html), never to a scheme or another host.
void expect_no_external_resources(const std::string& html) {
  static const std::regex tag(R"re(<[a-zA-Z][^<>]*>)re");
  static const std::regex attr(R"re(\s(src|href|xlink:href|action|poster|srcset|data|formaction|background|ping)\s*=\s*["']?([^"'\s>]*))re",
                               std::regex::icase);
  std::size_t tags = 0;
  for (std::sregex_iterator t(html.begin(), html.end(), tag), end; t != end; ++t) {
    ++tags;
    const std::string text = (*t)[0];
    for (std::sregex_iterator it(text.begin(), text.end(), attr); it != end; ++it) {
      const std::string name = (*it)[1];
      const std::string value = (*it)[2];
      if (text.rfind("<a ", 0) == 0 && name == "href" && value.size() > 12 &&
          value.substr(value.size() - 12) == "/report.html" && value.find(':') == std::string::npos && value[0] != '/') {
        continue;  // a relative link to another report
      }
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

/// The element with this id (its opening tag up to the matching close of the same tag name, without
/// nesting of the same tag), as text ("" when absent).
std::string element(const std::string& html, const std::string& id) {
  const auto at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return {};
  const auto start = html.rfind('<', at);
  const auto name_end = html.find_first_of(" >", start);
  const std::string name = html.substr(start + 1, name_end - start - 1);
  const auto end = html.find("</" + name + ">", at);
  return html.substr(start, end == std::string::npos ? std::string::npos : end + name.size() + 3 - start);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

/// The html_escape of the report (for comparing printed text with the page).
std::string escaped(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
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

void screenshot(const std::string& chromium, const fs::path& html, const std::string& name, const std::string& size) {
  TempDir profile;
  const fs::path png = fs::path(profile.path()) / name;
  auto argv = chromium_args(chromium, profile);
  for (const std::string& a : {std::string("--hide-scrollbars"), "--window-size=" + size, std::string("--virtual-time-budget=3000")}) {
    argv.push_back(a);
  }
  argv.push_back("--screenshot=" + png.string());
  argv.push_back("file://" + html.string());
  const RunResult shot = llmload::testing::run(argv, 90s);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20000u);  // a blank page compresses to a few KB
  if (const char* keep = std::getenv("LLMLOAD_REPORT_SCREENSHOT_DIR"); keep != nullptr && *keep != '\0') {
    fs::create_directories(keep);
    fs::copy_file(png, fs::path(keep) / name, fs::copy_options::overwrite_existing);
  }
}

}  // namespace llmload::report_test
