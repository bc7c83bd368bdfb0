// Output helpers shared by the benchmarks: aligned text tables, a progress line, number
// formatting and the clock.
#pragma once

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "common/status.h"

namespace pvgpu::tools::bench {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A table printed with columns padded to their widest cell; the first column is left-aligned
// (names), the others right-aligned (numbers).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : rows_{std::move(header)} {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "12.3" with `digits` after the point; "n/a" for NaN (a measurement that could not be made).
std::string FormatNumber(double value, int digits = 2);
// "1.23x".
std::string FormatRatio(double ratio);
// "4 KiB", "256 MiB".
std::string FormatBytes(uint64_t bytes);

inline constexpr double kNotMeasured = NAN;

// One line on stderr saying what a long run is doing. Silent for the first couple of seconds,
// so quick runs print nothing; on a terminal the line is rewritten in place and cleared at the
// end, elsewhere each step is its own line.
class Progress {
 public:
  explicit Progress(std::string benchmark);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Step(const std::string& what);

 private:
  std::string benchmark_;
  Clock::time_point start_ = Clock::now();
  bool tty_ = false;
  bool printed_ = false;
};

// Writes `content` to `path` (the --plot file).
Status WriteTextFile(const std::string& path, const std::string& content);

}  // namespace pvgpu::tools::bench
