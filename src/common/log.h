// Logging for the daemon, the tools and the guest libraries.
//
// The level comes from PVGPU_LOG (error, warn, info, debug, trace; default warn in the guest
// libraries and info in the daemon). Output goes to stderr, or to the file named by
// PVGPU_LOG_FILE. `trace` makes the guest libraries log every driver and NVML call.
#pragma once

#include <sstream>
#include <string>

namespace pvgpu::log {

enum class Level : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

// Reads PVGPU_LOG once; `fallback` applies when it is unset. `component` prefixes lines.
void Init(const char* component, Level fallback);
// The level printed (PVGPU_LOG).
Level CurrentLevel();
// The level formatted at all: printed, or captured (SetCapture).
Level MessageLevel();
inline bool Enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(MessageLevel()); }
// Prints `message` if `level` is within CurrentLevel(), and hands it to the capture if it is
// within the capture's level.
void Write(Level level, const std::string& message);
// A second destination for every message up to `max`, whatever PVGPU_LOG prints: the guest
// library's driver log (cuLogs*). Called after the message is printed, with no lock of the
// log's held (it may log). One capture per process; nullptr removes it.
using CaptureFn = void (*)(Level level, const std::string& message);
void SetCapture(Level max, CaptureFn fn);
bool ParseLevel(const std::string& text, Level* level);

}  // namespace pvgpu::log

#define PVGPU_LOG(level, stream_expr)                                  \
  do {                                                                 \
    if (::pvgpu::log::Enabled(::pvgpu::log::Level::level)) {           \
      std::ostringstream pvgpu_log_stream_;                            \
      pvgpu_log_stream_ << stream_expr;                                \
      ::pvgpu::log::Write(::pvgpu::log::Level::level, pvgpu_log_stream_.str()); \
    }                                                                  \
  } while (0)

#define PVGPU_ERROR(x) PVGPU_LOG(kError, x)
#define PVGPU_WARN(x) PVGPU_LOG(kWarn, x)
#define PVGPU_INFO(x) PVGPU_LOG(kInfo, x)
#define PVGPU_DEBUG(x) PVGPU_LOG(kDebug, x)
#define PVGPU_TRACE(x) PVGPU_LOG(kTrace, x)
