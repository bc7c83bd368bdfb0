// Charts for `pvgpu bench --plot FILE`, written as standalone SVG so that plotting needs no
// extra package: grouped bars (latency by mode, throughput by implementation) and lines over
// a size axis (bandwidth by transfer size).
#pragma once

#include <string>
#include <vector>

namespace pvgpu::tools::bench {

struct PlotSeries {
  std::string name;
  std::vector<double> values;  // one per category / x position; NaN leaves a gap
};

struct Plot {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;  // bar groups, or x-axis ticks for lines
  std::vector<PlotSeries> series;
  bool log_y = false;  // for values spanning orders of magnitude (latencies)
};

// Grouped vertical bars: one group per category, one bar per series.
std::string BarChartSvg(const Plot& plot);
// One polyline per series over evenly spaced categories (sizes growing by a constant factor).
std::string LineChartSvg(const Plot& plot);

}  // namespace pvgpu::tools::bench
