// What the generated NOT_SUPPORTED stubs (gen_stubs.py) call. Deliberately free of nvml_api.h:
// the stubs' generic signatures must not meet the real prototypes in one translation unit.
#pragma once

#include <atomic>

namespace pvgpu::guest::nvml {

// Logs the call at trace level, warns once per function (so that the calls a client misses
// show up without PVGPU_LOG=trace) and returns NVML_ERROR_NOT_SUPPORTED.
int ReportUnsupported(const char* name, std::atomic<bool>* reported);

}  // namespace pvgpu::guest::nvml
