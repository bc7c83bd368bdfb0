// Messages for the person at the terminal. These are not log lines: they carry no timestamp
// and always print, because they explain why a command did not run or what pvgpu left behind.
#pragma once

#include <cstdio>
#include <string>

namespace pvgpu::tools {

inline void PrintError(const std::string& message) {
  std::fprintf(stderr, "pvgpu: error: %s\n", message.c_str());
}

inline void PrintWarning(const std::string& message) {
  std::fprintf(stderr, "pvgpu: warning: %s\n", message.c_str());
}

inline void PrintNote(const std::string& message) {
  std::fprintf(stderr, "pvgpu: %s\n", message.c_str());
}

}  // namespace pvgpu::tools
