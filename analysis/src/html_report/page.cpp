// The page frame: <head>, the inline style sheet and script, the footer.
#include "html_report/internal.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "llmload/analysis/artifact_merge.hpp"
#include "llmload/analysis/compare.hpp"
#include "llmload/analysis/hdr_codec.hpp"
#include "llmload/analysis/hdr_log.hpp"
#include "llmload/common/version.hpp"

namespace llmload::analysis::report_html {

// ---------------------------------------------------------------------------------------------
// HTML pieces

constexpr const char* kCss = R"CSS(
:root { --fg:#1d232a; --muted:#5b6673; --line:#d9dee4; --bg:#ffffff; --panel:#f6f8fa;
  --pass:#1e7d46; --fail:#b42318; --warn:#a15c00; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  color:var(--fg); background:var(--bg); }
main { max-width:1280px; margin:0 auto; padding:20px 24px 40px; }
h1 { font-size:22px; margin:0 0 4px; }
h2 { font-size:17px; margin:28px 0 10px; padding-bottom:4px; border-bottom:1px solid var(--line); }
h3 { font-size:15px; margin:18px 0 8px; }
.sub { color:var(--muted); margin:0 0 10px; word-break:break-all; }
.badges { display:flex; flex-wrap:wrap; gap:8px; margin:10px 0; }
.badge { display:inline-block; padding:4px 10px; border-radius:4px; font-weight:600; border:1px solid;
  background:#fff; }
.badge.pass, .badge.valid { color:var(--pass); border-color:var(--pass); background:#ecf7f0; }
.badge.fail, .badge.invalid { color:var(--fail); border-color:var(--fail); background:#fdf0ef; }
.badge.inconclusive, .badge.warn { color:var(--warn); border-color:var(--warn); background:#fdf6e9; }
.badge.neutral { color:var(--muted); border-color:var(--line); }
.reason { margin:4px 0; color:var(--fail); }
.reason.warn { color:var(--warn); }
ul.reasons { margin:4px 0 8px; padding-left:22px; color:var(--fail); }
ul.reasons code { background:#fdf0ef; padding:0 4px; border-radius:3px; }
h4 { font-size:14px; margin:14px 0 6px; }
.checks { margin:0 0 10px; }
p.verdict { margin:6px 0 4px; }
p.verdict .badge { margin-right:6px; }
.kv .range { font-size:12px; color:var(--muted); font-variant-numeric:tabular-nums; }
tr.noisy td { background:#fdf6e9; }
tr.capacity td { background:#ecf7f0; }
tr.stopped td { background:#fdf6e9; }
td .badge, p .badge { padding:1px 7px; font-size:12px; }
.notes { background:#fdf6e9; border-left:4px solid var(--warn); padding:8px 12px 8px 28px; margin:12px 0; }
.kv { display:grid; grid-template-columns:repeat(auto-fill,minmax(190px,1fr)); gap:10px; margin:8px 0 16px; }
.kv > div { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px 10px; }
.kv .k { color:var(--muted); font-size:12px; }
.kv .v { font-size:19px; font-weight:600; font-variant-numeric:tabular-nums; }
.kv .u { font-size:12px; color:var(--muted); font-weight:400; }
table { border-collapse:collapse; margin:6px 0 14px; font-variant-numeric:tabular-nums; }
th, td { border:1px solid var(--line); padding:4px 9px; text-align:right; vertical-align:top; }
td { white-space:nowrap; }
th { background:var(--panel); font-weight:600; }
td.l, th.l { text-align:left; }
td.wrap { white-space:normal; max-width:760px; word-break:break-word; text-align:left; }
td.note { white-space:normal; min-width:110px; max-width:240px; text-align:left; }
td ul.point-reasons { margin:4px 0 0; padding-left:16px; text-align:left; white-space:normal; min-width:180px; max-width:340px; font-size:12px; font-weight:normal; }
.scroll { overflow-x:auto; max-width:100%; }
.scroll > table { margin-bottom:4px; }
.rng { font-size:11px; color:var(--muted); }
.low { color:var(--warn); }
.charts { display:grid; grid-template-columns:repeat(auto-fill,minmax(560px,1fr)); gap:14px 22px; }
figure.chart { margin:0; padding:10px 12px 6px; border:1px solid var(--line); border-radius:6px; background:#fff; }
figure.chart figcaption { font-weight:600; margin-bottom:2px; }
svg.plot { width:100%; height:auto; display:block; font-size:11px; }
svg.plot .frame { fill:#fff; stroke:#9aa4ae; stroke-width:1; }
svg.plot .grid line { stroke:#e8ebef; stroke-width:1; }
svg.plot .tick { fill:#4a5561; }
svg.plot .axis-label { fill:#2e3740; font-size:12px; }
svg.plot .band rect { fill:#8b96a3; fill-opacity:0.16; }
svg.plot .band-label { fill:#55606c; font-size:11px; font-style:italic; }
svg.plot path.series { fill:none; stroke-width:2; stroke-linejoin:round; stroke-linecap:round; }
svg.plot path.whisker { fill:none; stroke-width:1.3; stroke-opacity:0.75; }
svg.plot path.cross { fill:none; stroke-width:2.6; stroke-linecap:round; }
svg.plot .ref line { stroke-width:1.4; stroke-dasharray:3 3; }
svg.plot .ref text { font-size:11px; font-weight:600; paint-order:stroke; stroke:#fff; stroke-width:3px; }
svg.plot .callout circle { fill:none; stroke:#1d232a; stroke-width:2; }
svg.plot .callout text { font-weight:700; font-size:12px; paint-order:stroke; stroke:#fff; stroke-width:3px; }
svg.plot .legend-item { cursor:pointer; }
svg.plot .legend-item text { fill:#2e3740; }
svg.plot .legend-item.off { opacity:0.35; }
svg.plot .series-group.off { display:none; }
svg.plot .crosshair { stroke:#1d232a; stroke-width:1; stroke-opacity:0.4; }
.readout { min-height:1.4em; font-size:12px; color:var(--muted); font-variant-numeric:tabular-nums; }
.chart-note { margin:0 0 4px; font-size:12px; color:var(--muted); }
details { margin:10px 0; }
details > summary { cursor:pointer; font-weight:600; }
details.point { border:1px solid var(--line); border-radius:6px; padding:8px 12px; }
pre { background:var(--panel); border:1px solid var(--line); padding:10px; overflow:auto; font-size:12px; max-height:480px; }
.scorecard { display:grid; grid-template-columns:repeat(4,minmax(0,1fr)); gap:10px; margin:8px 0 16px; }
@media (max-width:900px) { .scorecard { grid-template-columns:repeat(2,minmax(0,1fr)); } }
.scorecard > div { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px 12px; }
.scorecard .sc-title { font-weight:700; font-size:12px; text-transform:uppercase; letter-spacing:.05em; color:var(--muted);
  margin-bottom:4px; }
.scorecard dl { margin:0; display:grid; grid-template-columns:auto 1fr; gap:3px 10px; align-items:baseline; }
.scorecard dt { color:var(--muted); font-size:12px; }
.scorecard dd { margin:0; font-weight:600; font-variant-numeric:tabular-nums; text-align:right; }
.scorecard dd .u { font-size:12px; color:var(--muted); font-weight:400; }
.scorecard dd .ci { display:block; font-size:11px; font-weight:400; color:var(--muted); }
.scorecard dd .null { color:var(--muted); font-weight:400; }
.scorecard dd .badge { padding:0 6px; font-size:12px; }
td.excerpt { white-space:pre-wrap; font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12px;
  min-width:260px; max-width:520px; word-break:break-word; text-align:left; }
svg.plot rect.bar { fill-opacity:0.85; }
table.compact { font-size:13px; }
table.compact th, table.compact td { padding:4px 6px; }
footer { margin-top:30px; color:var(--muted); font-size:12px; }
@media print { .readout { display:none; } details { display:block; } }
)CSS";

// Legend clicks hide a series; moving over a chart shows the values under the pointer.
constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1000) return v.toFixed(0);
    if (a >= 100) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    return v.toPrecision(3);
  }
  function setup(fig) {
    var svg = fig.querySelector('svg.plot');
    if (!svg) return;
    var items = fig.querySelectorAll('.legend-item');
    Array.prototype.forEach.call(items, function (item) {
      item.addEventListener('click', function () {
        var idx = item.getAttribute('data-series');
        Array.prototype.forEach.call(fig.querySelectorAll('[data-series="' + idx + '"]'), function (el) {
          el.classList.toggle('off');
        });
      });
    });
    var out = fig.querySelector('.readout');
    var el = fig.querySelector('script.chart-data');
    var map = (svg.getAttribute('data-map') || '').split(' ').map(Number);
    if (!out || !el || map.length !== 4 || map.some(isNaN)) return;
    var data;
    try { data = JSON.parse(el.textContent); } catch (e) { return; }
    var pct = svg.getAttribute('data-px') === '1';
    var cross = svg.querySelector('.crosshair');
    var vbw = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 600;
    svg.addEventListener('mousemove', function (ev) {
      var r = svg.getBoundingClientRect();
      if (!r.width) return;
      var px = (ev.clientX - r.left) * vbw / r.width;
      if (px < map[0] || px > map[0] + map[1]) return;
      var x = map[2] + (px - map[0]) / map[1] * (map[3] - map[2]);
      var parts = [], shownX = null;
      data.s.forEach(function (s, i) {
        var leg = fig.querySelector('.legend-item[data-series="' + i + '"]');
        if ((leg && leg.classList.contains('off')) || !s.p.length) return;
        var best = s.p[0];
        s.p.forEach(function (p) { if (Math.abs(p[0] - x) < Math.abs(best[0] - x)) best = p; });
        if (shownX === null) shownX = best[0];
        parts.push((s.n || 'value') + ' ' + fmt(best[1]));
      });
      if (shownX === null) return;
      var xs = pct ? (100 * (1 - Math.pow(10, -shownX))).toPrecision(6).replace(/0+$/, '').replace(/\.$/, '') + '%'
                   : fmt(shownX);
      out.textContent = data.xl + ': ' + xs + '  \u00b7  ' + parts.join('  \u00b7  ');
      if (cross) {
        cross.setAttribute('x1', px);
        cross.setAttribute('x2', px);
        cross.setAttribute('visibility', 'visible');
      }
    });
    svg.addEventListener('mouseleave', function () {
      out.textContent = '';
      if (cross) cross.setAttribute('visibility', 'hidden');
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('figure.chart'), setup);
  document.documentElement.setAttribute('data-report-ready', '1');
})();
)JS";

std::string page(const std::string& title, const std::string& body) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<meta name=\"generator\" content=\"llmload ";
  o += kVersion;
  o += "\">\n<title>" + html_escape(title) + "</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n<main>\n";
  o += body;
  o += fmt::format("<footer>Generated by llmload {} (<code>llmload report</code>). Self-contained: no network access. "
                   "Definitions: docs/metrics.md; this page: docs/report.md.</footer>\n",
                   kVersion);
  o += "</main>\n<script>";
  o += kScript;
  o += "</script>\n</body>\n</html>\n";
  return o;
}

}  // namespace llmload::analysis::report_html
