// IEEE binary16 and bfloat16 conversions (bit exact, round-to-nearest-even by default).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace pvgpu::ptx {

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      // Subnormal: normalize.
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((man & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000 | (man << 13) | (man ? 0x400000 : 0);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  return std::bit_cast<float>(bits);
}

// Whether a magnitude cut down to a whole number of units goes up by one under `mode` (0
// nearest-even, 1 toward zero, 2 down (-inf), 3 up (+inf)): `inexact` says something was cut
// off, `vs_half` compares it with half a unit (-1, 0, 1), `odd` is the kept units' parity.
inline bool RoundsUp(int mode, bool negative, bool inexact, int vs_half, bool odd) {
  switch (mode) {
    case 1:
      return false;
    case 2:
      return negative && inexact;
    case 3:
      return !negative && inexact;
    default:
      return vs_half > 0 || (vs_half == 0 && odd);
  }
}

// mode: 0 nearest-even, 1 toward zero, 2 down (-inf), 3 up (+inf).
inline uint16_t FloatToHalf(float f, int mode = 0) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  bool neg = sign != 0;
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7E00);
  float a = std::fabs(f);
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7C00);
  // Scale into an integer count of the smallest unit (2^-24) or of the exponent's ulp.
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp_unbiased = e - 1;
  int ulp_exp = exp_unbiased < -14 ? -24 : exp_unbiased - 10;
  double scaled = std::ldexp(static_cast<double>(a), -ulp_exp);  // exact in double
  double fl = std::floor(scaled);
  double frac = scaled - fl;
  uint64_t q = static_cast<uint64_t>(fl);
  q += RoundsUp(mode, neg, frac > 0, frac > 0.5 ? 1 : (frac == 0.5 ? 0 : -1), (q & 1) != 0);
  // Reassemble: value = q * 2^ulp_exp.
  double v = std::ldexp(static_cast<double>(q), ulp_exp);
  if (v >= 65536.0 || (v > 65504.0)) {
    bool to_inf = mode == 0 || (mode == 3 && !neg) || (mode == 2 && neg);
    return static_cast<uint16_t>(sign | (to_inf ? 0x7C00 : 0x7BFF));
  }
  if (v < std::ldexp(1.0, -14))
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));  // subnormal
  int ve;
  double vm = std::frexp(v, &ve);
  uint32_t exp = static_cast<uint32_t>(ve - 1 + 15);
  uint32_t man = static_cast<uint32_t>(std::ldexp(vm * 2.0 - 1.0, 10));
  return static_cast<uint16_t>(sign | (exp << 10) | man);
}

inline float Bf16ToFloat(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

inline uint16_t FloatToBf16(float f, int mode = 0) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t low = x & 0xFFFF;
  uint32_t hi = x >> 16;
  bool neg = x >> 31;
  const bool up =
      RoundsUp(mode, neg, low != 0, low > 0x8000 ? 1 : (low == 0x8000 ? 0 : -1), (hi & 1) != 0);
  return static_cast<uint16_t>(hi + up);
}

}  // namespace pvgpu::ptx
