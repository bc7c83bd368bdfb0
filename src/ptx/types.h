// PTX scalar types and the template dispatch used by every instruction family to pick a
// handler instantiation at load time.
#pragma once

#include <cstdint>
#include <string_view>

namespace pvgpu::ptx {

enum class Ty : uint8_t {
  kNone,
  kPred,
  kB8,
  kB16,
  kB32,
  kB64,
  kB128,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kF32,
  kF64,
};

Ty ParseType(std::string_view dot_name);  // ".u32" -> kU32; kNone when not a type
const char* TypeName(Ty t);
uint32_t TypeSize(Ty t);  // bytes; 0 for kPred / kNone
inline bool IsFloat(Ty t) { return t == Ty::kF32 || t == Ty::kF64; }
inline bool IsHalf(Ty t) {
  return t == Ty::kF16 || t == Ty::kF16x2 || t == Ty::kBF16 || t == Ty::kBF16x2;
}
inline bool IsSigned(Ty t) {
  return t == Ty::kS8 || t == Ty::kS16 || t == Ty::kS32 || t == Ty::kS64;
}
inline bool IsInt(Ty t) { return !IsFloat(t) && !IsHalf(t) && t != Ty::kPred && t != Ty::kNone; }

// Register class: 'p' predicate mask, 'w' 32-bit lane slots, 'd' 64-bit lane slots, 'q' .b128:
// two 64-bit slots, the low halves then the high halves (+256 bytes).
inline char ClassOf(Ty t) {
  if (t == Ty::kPred) return 'p';
  if (t == Ty::kB128) return 'q';
  return TypeSize(t) == 8 ? 'd' : 'w';
}

// Calls f.template operator()<T>() with the C++ type that holds a value of PTX type t.
// Bit types map to unsigned. Returns R{} (nullptr for handlers) when t has no mapping.
template <typename R, typename F>
R WithIntType(Ty t, F&& f) {
  switch (t) {
    case Ty::kU8:
    case Ty::kB8:
      return f.template operator()<uint8_t>();
    case Ty::kS8:
      return f.template operator()<int8_t>();
    case Ty::kU16:
    case Ty::kB16:
      return f.template operator()<uint16_t>();
    case Ty::kS16:
      return f.template operator()<int16_t>();
    case Ty::kU32:
    case Ty::kB32:
      return f.template operator()<uint32_t>();
    case Ty::kS32:
      return f.template operator()<int32_t>();
    case Ty::kU64:
    case Ty::kB64:
      return f.template operator()<uint64_t>();
    case Ty::kS64:
      return f.template operator()<int64_t>();
    default:
      return R{};
  }
}

template <typename R, typename F>
R WithFloatType(Ty t, F&& f) {
  switch (t) {
    case Ty::kF32:
      return f.template operator()<float>();
    case Ty::kF64:
      return f.template operator()<double>();
    default:
      return R{};
  }
}

template <typename R, typename F>
R WithNumType(Ty t, F&& f) {
  if (IsFloat(t)) return WithFloatType<R>(t, f);
  return WithIntType<R>(t, f);
}

}  // namespace pvgpu::ptx
