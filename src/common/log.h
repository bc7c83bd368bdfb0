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
Level CurrentLevel();
inline bool Enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(CurrentLevel()); }
void Write(Level level, const std::string& message);
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
