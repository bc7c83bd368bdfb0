#include "tools/bench/report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace pvgpu::tools::bench {

std::string TextTable::Render() const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (size_t r = 0; r < rows_.size(); ++r) {
    const auto& row = rows_[r];
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - row[i].size(), ' ');
      if (i > 0) line += "  ";
      line += i == 0 ? row[i] + pad : pad + row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t w : widths) total += w + 2;
      out += std::string(total >= 2 ? total - 2 : 0, '-') + "\n";
    }
  }
  return out;
}

std::string FormatNumber(double value, int digits) {
  if (std::isnan(value)) return "n/a";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

std::string FormatRatio(double ratio) {
  if (std::isnan(ratio) || std::isinf(ratio)) return "n/a";
  return FormatNumber(ratio, ratio < 10 ? 2 : 1) + "x";
}

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

Progress::Progress(std::string benchmark)
    : benchmark_(std::move(benchmark)), tty_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (printed_ && tty_) std::fprintf(stderr, "\r\033[K");
}

void Progress::Step(const std::string& what) {
  // Runs that finish within a couple of seconds need no reassurance.
  const double elapsed = SecondsSince(start_);
  if (elapsed < 2.0) return;
  printed_ = true;
  std::fprintf(stderr, "%spvgpu bench %s: %s (%.0f s)%s", tty_ ? "\r\033[K" : "",
               benchmark_.c_str(), what.c_str(), elapsed, tty_ ? "" : "\n");
  std::fflush(stderr);
}

Status WriteTextFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    return Error(Code::kFileNotFound, "cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace pvgpu::tools::bench
