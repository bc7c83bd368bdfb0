#include "tools/bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pvgpu::tools::bench {
namespace {

constexpr double kWidth = 760, kHeight = 420;
constexpr double kLeft = 70, kRight = 180, kTop = 40, kBottom = 60;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
// Distinguishable on screen and in grey print.
const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                               "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
}

std::string Text(double x, double y, const std::string& text, const char* anchor = "middle",
                 int size = 12) {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" font-size=\"" + std::to_string(size) +
         "\" text-anchor=\"" + anchor + "\">" + Escape(text) + "</text>\n";
}

// Maps data values to the plot's vertical pixels, linearly from 0 or logarithmically.
struct YAxis {
  double low = 0, high = 1;
  bool log = false;

  static YAxis For(const Plot& plot) {
    YAxis axis;
    axis.log = plot.log_y;
    double max = 0, min = INFINITY;
    for (const auto& s : plot.series) {
      for (double v : s.values) {
        if (std::isnan(v) || v <= 0) continue;
        max = std::max(max, v);
        min = std::min(min, v);
      }
    }
    if (max <= 0) max = 1;
    if (axis.log) {
      axis.low = std::floor(std::log10(std::isinf(min) ? max : min));
      axis.high = std::max(axis.low + 1, std::ceil(std::log10(max)));
    } else {
      axis.high = max * 1.1;
    }
    return axis;
  }
  double Pixel(double v) const {
    double t = log ? (std::log10(std::max(v, std::pow(10.0, low))) - low) / (high - low) : v / high;
    return kTop + kPlotH * (1 - std::clamp(t, 0.0, 1.0));
  }
  // Gridlines with their labels.
  std::string Grid() const {
    std::string out;
    const int steps = log ? static_cast<int>(high - low) : 5;
    for (int i = 0; i <= steps; ++i) {
      const double v = log ? std::pow(10.0, low + i) : high * i / steps;
      const double y = Pixel(v);
      char label[32];
      std::snprintf(label, sizeof(label), "%g", log ? v : std::round(v * 100) / 100);
      out += "<line x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kLeft + kPlotW) + "\" y1=\"" + Num(y) +
             "\" y2=\"" + Num(y) + "\" stroke=\"#ddd\"/>\n";
      out += Text(kLeft - 6, y + 4, label, "end", 11);
    }
    return out;
  }
};

std::string Frame(const Plot& plot, const YAxis& axis) {
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kWidth) +
                    "\" height=\"" + Num(kHeight) + "\" font-family=\"sans-serif\">\n" +
                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += Text(kWidth / 2 - kRight / 2, 22, plot.title, "middle", 15);
  out += "<text transform=\"translate(16," + Num(kTop + kPlotH / 2) +
         ") rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">" + Escape(plot.y_label) +
         (axis.log ? " (log scale)" : "") + "</text>\n";
  out += axis.Grid();
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const double y = kTop + 10 + 20 * static_cast<double>(i);
    out += "<rect x=\"" + Num(kWidth - kRight + 15) + "\" y=\"" + Num(y - 9) +
           "\" width=\"12\" height=\"12\" fill=\"" + kColors[i % 8] + "\"/>\n";
    out += Text(kWidth - kRight + 32, y + 1, plot.series[i].name, "start", 12);
  }
  return out;
}

}  // namespace

std::string BarChartSvg(const Plot& plot) {
  const YAxis axis = YAxis::For(plot);
  std::string out = Frame(plot, axis);
  const double group_w = kPlotW / std::max<size_t>(1, plot.categories.size());
  const double bar_w = group_w * 0.8 / std::max<size_t>(1, plot.series.size());
  for (size_t c = 0; c < plot.categories.size(); ++c) {
    const double x0 = kLeft + group_w * static_cast<double>(c) + group_w * 0.1;
    for (size_t s = 0; s < plot.series.size(); ++s) {
      const double v = c < plot.series[s].values.size() ? plot.series[s].values[c] : NAN;
      if (std::isnan(v)) continue;
      const double y = axis.Pixel(v);
      out += "<rect x=\"" + Num(x0 + bar_w * static_cast<double>(s)) + "\" y=\"" + Num(y) +
             "\" width=\"" + Num(bar_w * 0.95) + "\" height=\"" + Num(kTop + kPlotH - y) +
             "\" fill=\"" + kColors[s % 8] + "\"><title>" + Escape(plot.series[s].name) + ": " +
             Num(v) + "</title></rect>\n";
    }
    out += Text(x0 + group_w * 0.4, kTop + kPlotH + 18, plot.categories[c]);
  }
  return out + "</svg>\n";
}

std::string LineChartSvg(const Plot& plot) {
  const YAxis axis = YAxis::For(plot);
  std::string out = Frame(plot, axis);
  const size_t n = plot.categories.size();
  auto x_of = [n](size_t i) {
    return kLeft + (n <= 1 ? kPlotW / 2 : kPlotW * static_cast<double>(i) / (n - 1));
  };
  for (size_t i = 0; i < n; ++i) out += Text(x_of(i), kTop + kPlotH + 18, plot.categories[i]);
  for (size_t s = 0; s < plot.series.size(); ++s) {
    std::string points;
    for (size_t i = 0; i < n && i < plot.series[s].values.size(); ++i) {
      const double v = plot.series[s].values[i];
      if (std::isnan(v)) continue;
      points += Num(x_of(i)) + "," + Num(axis.Pixel(v)) + " ";
      out += "<circle cx=\"" + Num(x_of(i)) + "\" cy=\"" + Num(axis.Pixel(v)) +
             "\" r=\"3\" fill=\"" + kColors[s % 8] + "\"/>\n";
    }
    out += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(kColors[s % 8]) +
           "\" points=\"" + points + "\"/>\n";
  }
  return out + "</svg>\n";
}

}  // namespace pvgpu::tools::bench
