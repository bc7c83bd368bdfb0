// Formats a 16-byte adapter UUID the way NVIDIA's tools print GPU UUIDs.
#pragma once

#include <cstdint>
#include <string>

namespace pvgpu {

inline std::string FormatUuid(const uint8_t* uuid, const char* prefix = "GPU-") {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = prefix;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[uuid[i] >> 4];
    out += kHex[uuid[i] & 15];
  }
  return out;
}

}  // namespace pvgpu
