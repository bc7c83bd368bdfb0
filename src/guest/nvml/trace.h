// PVGPU_LOG=trace: every NVML call is logged with its arguments, which is how the calls a new
// client needs are found. Strings the caller passes in are shown; output buffers as addresses.
#pragma once

#include <ostream>
#include <sstream>
#include <string>

#include "common/log.h"

namespace pvgpu::guest::nvml {

template <typename T>
void TraceArg(std::ostream& out, const T& value) {
  out << value;
}
inline void TraceArg(std::ostream& out, const char* text) {
  if (text == nullptr) {
    out << "null";
  } else {
    out << '"' << text << '"';
  }
}
inline void TraceArg(std::ostream& out, char* buffer) { out << static_cast<const void*>(buffer); }

template <typename... Args>
std::string TraceArgs(const Args&... args) {
  std::ostringstream out;
  [[maybe_unused]] const char* separator = "";
  ((out << separator, TraceArg(out, args), separator = ", "), ...);
  return out.str();
}

}  // namespace pvgpu::guest::nvml

#define PVGPU_NVML_TRACE(name, ...) \
  PVGPU_TRACE(name << "(" << ::pvgpu::guest::nvml::TraceArgs(__VA_ARGS__) << ")")
