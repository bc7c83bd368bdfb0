#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace pvgpu::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};
std::atomic<int> g_capture_level{-1};  // -1: no capture
std::atomic<CaptureFn> g_capture{nullptr};
std::string g_component = "pvgpu";
FILE* g_out = nullptr;
std::mutex g_mutex;

const char* LevelName(Level level) {
  switch (level) {
    case Level::kError: return "E";
    case Level::kWarn: return "W";
    case Level::kInfo: return "I";
    case Level::kDebug: return "D";
    case Level::kTrace: return "T";
  }
  return "?";
}

void Print(Level level, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  FILE* out = g_out != nullptr ? g_out : stderr;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm parts{};
  localtime_r(&now.tv_sec, &parts);
  std::fprintf(out, "[%s %d %02d:%02d:%02d.%03ld %s] %s\n", g_component.c_str(),
               static_cast<int>(getpid()), parts.tm_hour, parts.tm_min, parts.tm_sec,
               now.tv_nsec / 1000000, LevelName(level), message.c_str());
  std::fflush(out);
}

}  // namespace

bool ParseLevel(const std::string& text, Level* level) {
  static const struct { const char* name; Level level; } kNames[] = {
      {"error", Level::kError}, {"warn", Level::kWarn},   {"warning", Level::kWarn},
      {"info", Level::kInfo},   {"debug", Level::kDebug}, {"trace", Level::kTrace},
  };
  for (const auto& entry : kNames) {
    if (text == entry.name) {
      *level = entry.level;
      return true;
    }
  }
  return false;
}

void Init(const char* component, Level fallback) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_component = component;
  Level level = fallback;
  if (const char* env = std::getenv("PVGPU_LOG"); env != nullptr && *env != '\0') {
    if (!ParseLevel(env, &level)) {
      std::fprintf(stderr, "[%s] W unknown PVGPU_LOG level '%s' (use error, warn, info, debug, trace)\n",
                   component, env);
    }
  }
  g_level.store(static_cast<int>(level));
  if (const char* file = std::getenv("PVGPU_LOG_FILE"); file != nullptr && *file != '\0') {
    if (FILE* out = std::fopen(file, "a")) {
      if (g_out != nullptr) std::fclose(g_out);
      g_out = out;
    }
  }
}

Level CurrentLevel() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }

Level MessageLevel() {
  return static_cast<Level>(std::max(g_level.load(std::memory_order_relaxed),
                                     g_capture_level.load(std::memory_order_relaxed)));
}

void SetCapture(Level max, CaptureFn fn) {
  g_capture.store(fn);
  g_capture_level.store(fn != nullptr ? static_cast<int>(max) : -1);
}

void Write(Level level, const std::string& message) {
  if (static_cast<int>(level) <= g_level.load(std::memory_order_relaxed)) Print(level, message);
  if (static_cast<int>(level) <= g_capture_level.load(std::memory_order_relaxed)) {
    if (CaptureFn capture = g_capture.load(); capture != nullptr) capture(level, message);
  }
}

}  // namespace pvgpu::log
