// 16-byte UUIDs as text: formatted the way NVIDIA's tools print GPU UUIDs, and parsed at
// compile time from that text (tables of known UUIDs read as the logs print them).
#pragma once

#include <array>
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

// The bytes of "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (32 hexadecimal digits, dashes anywhere,
// bytes in the order written), for constant tables: anything else fails to compile.
consteval std::array<uint8_t, 16> ParseUuid(const char* text) {
  std::array<uint8_t, 16> bytes{};
  int digits = 0;
  for (; *text != 0; ++text) {
    if (*text == '-') continue;
    int value = *text >= '0' && *text <= '9'   ? *text - '0'
                : *text >= 'a' && *text <= 'f' ? *text - 'a' + 10
                                               : -1;
    if (value < 0 || digits >= 32) throw "ParseUuid: not 32 lower-case hexadecimal digits";
    bytes[digits / 2] = static_cast<uint8_t>(bytes[digits / 2] << 4 | value);
    ++digits;
  }
  if (digits != 32) throw "ParseUuid: not 32 lower-case hexadecimal digits";
  return bytes;
}

}  // namespace pvgpu
