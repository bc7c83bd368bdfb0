// Versions the host reports.
#pragma once

#include <cstdint>

namespace pvgpu::host {

inline constexpr const char* kVersionString = "pvgpu 0.1.0";
// The CUDA driver API version pvgpu implements (cuDriverGetVersion), CUDA 13.0.
inline constexpr uint32_t kCudaDriverVersion = 13000;

}  // namespace pvgpu::host
