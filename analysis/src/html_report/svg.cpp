// Charts: the chart model (Chart, Series, bands, reference lines) rendered as inline SVG, with the
// data the page script reads for the pointer readout.
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
// SVG charts

Series make_series(std::string name, const char* col, bool dashed, bool markers) {
  Series s;
  s.name = std::move(name);
  s.color = col;
  s.dashed = dashed;
  s.markers = markers;
  return s;
}

/// i-th of n colors along a viridis-like ramp (dark purple to green), readable on white.
std::string ramp_color(std::size_t i, std::size_t n) {
  static constexpr double stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {53, 183, 121}, {144, 200, 50}};
  constexpr std::size_t k = std::size(stops);
  const double t = n <= 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(n - 1);
  const double pos = t * static_cast<double>(k - 1);
  const std::size_t lo = std::min(static_cast<std::size_t>(pos), k - 2);
  const double f = pos - static_cast<double>(lo);
  auto c = [&](int ch) {
    return static_cast<int>(std::lround(stops[lo][ch] + (stops[lo + 1][ch] - stops[lo][ch]) * f));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", c(0), c(1), c(2));
}

static double nice_step(double range, int target) {
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nf * mag;
}

static int decimals_for(double step) {
  for (int d = 0; d < 7; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 6;
}

static std::string tick_text(double v, double step) {
  if (std::fabs(v) < step * 1e-9) v = 0;
  if (step >= 1000 && std::fabs(v) >= 10000) {
    return fmt::format("{:.{}f}k", v / 1000, decimals_for(step / 1000));
  }
  return fmt::format("{:.{}f}", v, decimals_for(step));
}

static std::string percentile_label(int k) {
  // x = k means p = 1 - 10^-k: 0%, 90%, 99%, 99.9%, ...
  if (k <= 0) return "0%";
  if (k == 1) return "90%";
  if (k == 2) return "99%";
  return "99." + std::string(static_cast<std::size_t>(k - 2), '9') + "%";
}

/// x position of percentile p (in %) on a percentile axis: log10(1/(1-p)); 100% (the maximum)
/// goes to the end of the curve, as percentile_curve() samples it.
double percentile_x(double p, std::int64_t count) {
  if (p >= 100) return std::max(2.0, std::log10(static_cast<double>(std::max<std::int64_t>(count, 1))));
  return -std::log10(1 - p / 100);
}

static std::string coord(double v) { return fmt::format("{:.1f}", v); }

/// Compact number for the embedded readout data.
static std::string compact(double v) { return fmt::format("{:.5g}", v); }

bool chart_has_data(const Chart& c) {
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) return true;
    }
  }
  return false;
}

namespace {

// The plot's geometry: the SVG box, the plot area inside its margins, the data ranges on the axes
// and the mapping of data to SVG coordinates.
struct Frame {
  static constexpr double W = 600, H = 306, L = 64, R = 18, T = 46, B = 44;
  static constexpr double pw = W - L - R, ph = H - T - B;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1, ystep = 1;
  std::vector<const RefLine*> above;  // horizontal bounds far above the data: named, not drawn
  double sx(double v) const { return L + (v - x0) / (x1 - x0) * pw; }
  double sy(double v) const { return T + ph - (v - y0) / (y1 - y0) * ph; }
};

double value_at(const std::vector<double>& v, std::size_t i) { return i < v.size() ? v[i] : kNaN; }

// The axes' ranges from the data, the whiskers, the reference lines and the chart's own bounds.
Frame fit_frame(const Chart& c) {
  Frame f;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, ydata = -x0, ymin_data = x0;
  const auto at = value_at;
  for (const auto& s : c.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      for (double v : {s.x[i], at(s.x_lo, i), at(s.x_hi, i)}) {
        if (!std::isfinite(v)) continue;
        x0 = std::min(x0, v);
        x1 = std::max(x1, v);
      }
      for (double v : {s.y[i], at(s.y_lo, i), at(s.y_hi, i)}) {
        if (!std::isfinite(v)) continue;
        ydata = std::max(ydata, v);
        ymin_data = std::min(ymin_data, v);
      }
    }
  }
  for (const auto& v : c.vlines) {
    x0 = std::min(x0, v.v);
    x1 = std::max(x1, v.v);
  }
  if (!std::isfinite(x0)) {
    x0 = 0;
    x1 = 1;
  }
  if (c.pad_x) {
    double span = x1 - x0;
    if (!(span > 0)) span = std::max(std::fabs(x0), 1.0);
    const bool nonneg = x0 >= 0;
    x0 -= span * 0.08;
    x1 += span * 0.08;
    if (nonneg && x0 < 0) x0 = 0;
  }
  if (c.x_min) x0 = *c.x_min;
  if (c.x_max) x1 = *c.x_max;
  if (!(x1 > x0)) x1 = x0 + 1;

  if (!std::isfinite(ydata)) {
    ydata = 0;
    ymin_data = 0;
  }
  double y0 = std::min(0.0, ymin_data);
  double y1 = ydata;
  for (const auto& h : c.hlines) {
    if (ydata <= 0 || h.v <= ydata * 1.6) {
      y1 = std::max(y1, h.v);
    } else {
      f.above.push_back(&h);
    }
  }
  if (c.y_max) y1 = *c.y_max;
  if (!(y1 > y0)) y1 = y0 + 1;
  const double ystep = nice_step(y1 - y0, 5);
  if (!c.y_max) y1 = std::ceil(y1 / ystep - 1e-9) * ystep;
  if (!(y1 > y0)) y1 = y0 + ystep;
  f.x0 = x0;
  f.x1 = x1;
  f.y0 = y0;
  f.y1 = y1;
  f.ystep = ystep;
  return f;
}

// Shaded x ranges (discarded phases, capacity bracket).
std::string bands_svg(const Chart& c, const Frame& f) {
  constexpr double L = Frame::L, T = Frame::T, pw = Frame::pw, ph = Frame::ph;
  std::string o;
  for (const auto& b : c.bands) {
    const double a = std::clamp(f.sx(b.x0), L, L + pw), e = std::clamp(f.sx(b.x1), L, L + pw);
    if (!(e > a)) continue;
    o += fmt::format("<g class=\"band\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
                     coord(a), coord(T), coord(e - a), coord(ph), html_escape(b.label));
    if (e - a > 6 * static_cast<double>(b.label.size()) + 4) {
      o += fmt::format("<text class=\"band-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", coord((a + e) / 2),
                       coord(b.label_bottom ? T + ph - 6 : T + 13), html_escape(b.label));
    }
    o += "</g>\n";
  }
  return o;
}

// Grid, ticks and the axis labels.
std::string grid_svg(const Chart& c, const Frame& f) {
  constexpr double H = Frame::H, L = Frame::L, T = Frame::T, pw = Frame::pw, ph = Frame::ph;
  const double x0 = f.x0, x1 = f.x1, y0 = f.y0, y1 = f.y1, ystep = f.ystep;
  std::string o = "<g class=\"grid\">";
  for (double v = y0; v <= y1 + ystep * 1e-6; v += ystep) {
    const double y = f.sy(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", coord(L), coord(L + pw), coord(y), coord(y));
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", coord(L - 6), coord(y + 4),
                     tick_text(v, ystep));
  }
  std::vector<std::pair<double, std::string>> xticks;
  if (c.percentile_x) {
    xticks.emplace_back(0.0, "0%");
    if (x1 - x0 < 4.5) xticks.emplace_back(std::log10(2.0), "50%");
    for (int k = 1; k <= static_cast<int>(std::floor(x1 + 1e-9)); ++k) xticks.emplace_back(k, percentile_label(k));
  } else {
    const double xstep = c.integer_x ? std::max(1.0, nice_step(x1 - x0, 6)) : nice_step(x1 - x0, 6);
    for (double v = std::ceil(x0 / xstep - 1e-9) * xstep; v <= x1 + xstep * 1e-6; v += xstep) {
      xticks.emplace_back(v, tick_text(v, xstep));
    }
  }
  for (const auto& [v, text] : xticks) {
    const double x = f.sx(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", coord(x), coord(x), coord(T), coord(T + ph));
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", coord(x),
                     coord(T + ph + 15), html_escape(text));
  }
  o += "</g>\n";
  o += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", coord(L + pw / 2),
                   coord(H - 6), html_escape(c.x_label));
  o += fmt::format("<text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                   coord(T + ph / 2), html_escape(c.y_label));
  return o;
}

// Horizontal bounds (the SLO), the ones far above the data named at the top, and vertical markers.
std::string reference_lines_svg(const Chart& c, const Frame& f) {
  constexpr double L = Frame::L, T = Frame::T, pw = Frame::pw, ph = Frame::ph;
  const double y0 = f.y0, y1 = f.y1;
  const auto& above = f.above;
  auto sx = [&](double v) { return f.sx(v); };
  auto sy = [&](double v) { return f.sy(v); };
  std::string o;
  for (const auto& h : c.hlines) {
    if (std::find(above.begin(), above.end(), &h) != above.end()) continue;
    if (!std::isfinite(h.v) || h.v < y0 || h.v > y1) continue;  // outside the plot
    const double y = sy(h.v);
    o += fmt::format(
        "<g class=\"ref hline\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\">{}</text></g>\n",
        coord(L), coord(L + pw), coord(y), coord(y), h.color, coord(L + pw - 4), coord(y - 4), h.color,
        html_escape(h.label));
  }
  // Bounds far above the data: named just above the plot's top right corner instead of squashing the data.
  if (!above.empty()) {
    std::string text;
    for (const RefLine* h : above) text += (text.empty() ? "" : ", ") + h->label;
    o += fmt::format("<text class=\"ref above\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{}\">▲ {} (above the chart)</text>\n",
                     coord(L + pw), coord(T - 5), above.front()->color, html_escape(text));
  }
  for (const auto& v : c.vlines) {
    const double x = sx(v.v);
    o += fmt::format(
        "<g class=\"ref vline\"><line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" fill=\"{}\">{}</text></g>\n",
        coord(x), coord(x), coord(T), coord(T + ph), v.color, coord(x + (x > L + pw * 0.7 ? -4 : 4)), coord(T + 26),
        x > L + pw * 0.7 ? "end" : "start", v.color, html_escape(v.label));
  }
  return o;
}

// A histogram's bars: each point a bar over [x_lo, x_hi] from the axis up to y, its tip as a title.
std::string bars_svg(const Series& s, const Frame& f) {
  std::string o;
  const double base = f.sy(std::max(f.y0, 0.0));
  for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    const double lo = value_at(s.x_lo, i), hi = value_at(s.x_hi, i);
    if (!std::isfinite(s.y[i]) || !std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo)) continue;
    const double a = f.sx(lo), e = f.sx(hi), top = f.sy(s.y[i]);
    const double gap = std::min(1.0, (e - a) / 4);  // a hairline between neighbours
    o += fmt::format("<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
                     coord(a + gap), coord(std::min(top, base)), coord(std::max(e - a - 2 * gap, 0.5)),
                     coord(std::fabs(base - top)), s.color, html_escape(i < s.tips.size() ? s.tips[i] : s.name));
  }
  return o;
}

// Each series: whiskers, line and markers (or a histogram's bars), in a group the legend can hide.
std::string series_svg(const Chart& c, const Frame& f) {
  auto sx = [&](double v) { return f.sx(v); };
  auto sy = [&](double v) { return f.sy(v); };
  const auto at = value_at;
  std::string o;
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    std::string d;
    bool pen = false;
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
        pen = false;
        continue;
      }
      d += fmt::format("{}{} {}", pen ? " L" : (d.empty() ? "M" : " M"), coord(sx(s.x[i])), coord(sy(s.y[i])));
      pen = true;
      ++n;
    }
    o += fmt::format("<g class=\"series-group\" data-series=\"{}\">", si);
    if (s.bars) {
      o += bars_svg(s, f) + "</g>\n";
      continue;
    }
    // Whiskers (min–max across trials) under the line and the markers.
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const double px = sx(s.x[i]), py = sy(s.y[i]);
      if (std::isfinite(at(s.y_lo, i)) && std::isfinite(at(s.y_hi, i)) && at(s.y_hi, i) > at(s.y_lo, i)) {
        const double a = sy(at(s.y_lo, i)), b = sy(at(s.y_hi, i));
        o += fmt::format("<path class=\"whisker\" d=\"M{0} {1} L{0} {2} M{3} {1} L{4} {1} M{3} {2} L{4} {2}\" stroke=\"{5}\"/>",
                         coord(px), coord(a), coord(b), coord(px - 4), coord(px + 4), s.color);
      }
      if (std::isfinite(at(s.x_lo, i)) && std::isfinite(at(s.x_hi, i)) && at(s.x_hi, i) > at(s.x_lo, i)) {
        const double a = sx(at(s.x_lo, i)), b = sx(at(s.x_hi, i));
        o += fmt::format("<path class=\"whisker\" d=\"M{1} {0} L{2} {0} M{1} {3} L{1} {4} M{2} {3} L{2} {4}\" stroke=\"{5}\"/>",
                         coord(py), coord(a), coord(b), coord(py - 4), coord(py + 4), s.color);
      }
    }
    if (s.line && !d.empty()) {
      o += fmt::format("<path class=\"series\" d=\"{}\" stroke=\"{}\"{} data-n=\"{}\"><title>{}</title></path>", d, s.color,
                       s.dashed ? " stroke-dasharray=\"6 4\"" : "", n, html_escape(s.name));
    }
    if (s.markers) {
      for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        const std::string tip = html_escape(i < s.tips.size() ? s.tips[i] : s.name);
        const double px = sx(s.x[i]), py = sy(s.y[i]);
        if (s.cross) {
          o += fmt::format("<path class=\"marker cross\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\" stroke=\"{4}\">"
                           "<title>{5}</title></path>",
                           coord(px - 6), coord(py - 6), coord(px + 6), coord(py + 6), s.color, tip);
        } else {
          o += fmt::format("<circle class=\"marker\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"><title>{}</title></circle>",
                           coord(px), coord(py), s.color, tip);
        }
      }
    }
    o += "</g>\n";
  }
  return o;
}

// Numbered callouts on points.
std::string callouts_svg(const Chart& c, const Frame& f) {
  constexpr double L = Frame::L, T = Frame::T, pw = Frame::pw;
  auto sx = [&](double v) { return f.sx(v); };
  auto sy = [&](double v) { return f.sy(v); };
  std::string o;
  for (const auto& k : c.callouts) {
    if (!std::isfinite(k.x) || !std::isfinite(k.y)) continue;
    const double x = sx(k.x), y = sy(k.y);
    const bool left = x > L + pw * 0.75;
    o += fmt::format(
        "<g class=\"callout\"><circle cx=\"{}\" cy=\"{}\" r=\"8\"/><text x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text></g>\n",
        coord(x), coord(y), coord(left ? x - 11 : x + 11), coord(y > T + 16 ? y - 10 : y + 20), left ? "end" : "start",
        html_escape(k.label));
  }
  return o;
}

// The legend (click to hide a series).
std::string legend_svg(const Chart& c) {
  constexpr double W = Frame::W, R = Frame::R, L = Frame::L;
  std::string o;
  double lx = L;
  double ly = 16;
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    if (s.name.empty()) continue;
    const double w = 30 + 6.6 * static_cast<double>(s.name.size());
    if (lx + w > W - R && lx > L) {
      lx = L;
      ly += 15;
    }
    o += fmt::format("<g class=\"legend-item\" data-series=\"{}\" tabindex=\"0\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" fill=\"transparent\"/>",
                     si, coord(lx - 2), coord(ly - 10), coord(w));
    if (s.bars) {
      o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"9\" fill=\"{}\"/>", coord(lx + 2), coord(ly - 8),
                       s.color);
    } else if (s.line) {
      o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"{}/>", coord(lx), coord(lx + 20),
                       coord(ly - 3), coord(ly - 3), s.color, s.dashed ? " stroke-dasharray=\"5 3\"" : "");
    }
    if (s.bars) {
      // the swatch above
    } else if (s.markers && s.cross) {
      o += fmt::format("<path class=\"cross\" d=\"M{0} {1} L{2} {3} M{0} {3} L{2} {1}\" stroke=\"{4}\"/>", coord(lx + 5),
                       coord(ly - 8), coord(lx + 15), coord(ly + 2), s.color);
    } else if (s.markers) {
      o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"/>", coord(lx + 10), coord(ly - 3), s.color);
    }
    o += fmt::format("<text x=\"{}\" y=\"{}\">{}</text></g>\n", coord(lx + 25), coord(ly + 1), html_escape(s.name));
    lx += w + 10;
  }
  return o;
}

// The data again, for the hover readout (a JSON data block: never executed).
std::string chart_data_script(const Chart& c) {
  std::string data = "{\"xl\":" + json(c.x_label).dump() + ",\"s\":[";
  for (std::size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    data += (si ? "," : "") + std::string("{\"n\":") + json(s.name).dump() + ",\"p\":[";
    bool first = true;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      data += fmt::format("{}[{},{}]", first ? "" : ",", compact(s.x[i]), compact(s.y[i]));
      first = false;
    }
    data += "]}";
  }
  data += "]}";
  for (std::size_t pos = data.find("</"); pos != std::string::npos; pos = data.find("</", pos + 3)) data.replace(pos, 2, "<\\/");
  return "<script type=\"application/json\" class=\"chart-data\">" + data + "</script>\n";
}

}  // namespace

std::string render_chart(const Chart& c, const std::string& id) {
  constexpr double W = Frame::W, H = Frame::H, L = Frame::L, T = Frame::T, pw = Frame::pw, ph = Frame::ph;
  const Frame f = fit_frame(c);
  std::string o;
  o += fmt::format("<figure class=\"chart\" id=\"{}\" data-chart=\"{}\">\n", html_escape(id), html_escape(c.key));
  o += fmt::format("<figcaption>{}</figcaption>\n", html_escape(c.title));
  o += fmt::format(
      "<svg class=\"plot\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\" data-map=\"{} {} {} {}\""
      " data-px=\"{}\">\n",
      W, H, html_escape(c.title), coord(L), coord(pw), compact(f.x0), compact(f.x1), c.percentile_x ? 1 : 0);
  o += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", coord(L), coord(T),
                   coord(pw), coord(ph));
  o += bands_svg(c, f);
  o += grid_svg(c, f);
  o += reference_lines_svg(c, f);
  o += series_svg(c, f);
  o += callouts_svg(c, f);
  o += legend_svg(c);
  o += fmt::format("<line class=\"crosshair\" x1=\"0\" x2=\"0\" y1=\"{}\" y2=\"{}\" visibility=\"hidden\"/>\n", coord(T),
                   coord(T + ph));
  o += "</svg>\n";
  o += chart_data_script(c);
  o += "<div class=\"readout\"></div>\n";
  if (!c.note.empty()) o += fmt::format("<p class=\"chart-note\">{}</p>\n", html_escape(c.note));
  o += "</figure>\n";
  return o;
}

/// Unit for a latency axis: ms, or s when the values reach 10 s.
std::pair<double, std::string> latency_unit(double max_ms) {
  if (max_ms >= 10000) return {1000.0, "s"};
  return {1.0, "ms"};
}

}  // namespace llmload::analysis::report_html
