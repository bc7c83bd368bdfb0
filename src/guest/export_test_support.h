// What the export tests of both guest libraries (cuda/proc_address_test.cc,
// nvml/nvml_exports_test.cc) share: the names a declaration list (exports.txt) declares, read
// the simple way rather than with the generator, so that a generator bug cannot agree with
// itself; and the trace log of the library under test.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace pvgpu::guest::exports_test {

// Each entry's name and its aliases, in the list's order.
inline std::vector<std::string> DeclaredNames(const std::string& list_path) {
  std::ifstream in(list_path);
  const std::regex entry(R"(^\s*(\w+)\s*\([^)]*\)\s+\w+\s*(?:=\s*([\w\s]+))?$)");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    std::smatch m;
    if (!std::regex_match(line, m, entry)) continue;
    names.push_back(m[1]);
    std::istringstream aliases(m[2]);
    for (std::string alias; aliases >> alias;) names.push_back(alias);
  }
  return names;
}

// Makes a library loaded after this call trace every call (PVGPU_LOG=trace) into a new empty
// file, whose path it returns; the caller removes it.
inline std::string TraceIntoTemporaryFile() {
  char path[] = "/tmp/pvgpu-exports-test-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  close(fd);
  setenv("PVGPU_LOG", "trace", 1);
  setenv("PVGPU_LOG_FILE", path, 1);
  return path;
}

// The lines of the file at `path` ("[library PID TIME LEVEL] message") that contain `text`.
inline std::vector<std::string> LinesContaining(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// Checks that the last trace line of each call (pair.first, "cuName(") holds pair.second: the
// arguments as traced, the result's name.
inline void ExpectTraced(const std::string& log_path,
                         const std::vector<std::pair<std::string, std::string>>& expected) {
  for (const auto& [call, text] : expected) {
    const std::vector<std::string> lines = LinesContaining(log_path, call);
    ASSERT_FALSE(lines.empty()) << "no trace of " << call;
    EXPECT_NE(lines.back().find(text), std::string::npos) << lines.back() << " lacks " << text;
    EXPECT_NE(lines.back().find(" T] "), std::string::npos) << lines.back();  // trace level
  }
}

}  // namespace pvgpu::guest::exports_test
