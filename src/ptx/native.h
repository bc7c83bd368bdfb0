// What the compiling engine (jit.cc) knows about a handler: instructions whose handler has a
// NativeDesc are compiled to vector code; every other instruction is compiled to a call of its
// handler, so the two engines can never disagree about an instruction the compiler does not
// understand.
//
// A handler describes itself where it is defined, at static initialization:
// - lanewise handlers (ExecUnary/Binary/Ternary, exec_util.h) through their operation's
//   `static constexpr NOp kNative`;
// - other handlers with PVGPU_NATIVE(handler, desc) in their body.
// Only instantiations the lowering can pick are instantiated, so only those register.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ptx/ir.h"
#include "ptx/types.h"

namespace pvgpu::ptx {

enum class NOp : uint8_t {
  kNone,
  // Lanewise integer and bit operations on type d (sources of type s).
  kMov,
  kAdd,
  kSub,
  kMulLo,
  kMadLo,
  kMulWide,  // d is twice as wide as s
  kMin,
  kMax,
  kNeg,
  kAbs,
  kAnd,
  kOr,
  kXor,
  kNot,
  // Lanewise float operations, round to nearest, no flush-to-zero or saturation.
  kFAdd,
  kFSub,
  kFMul,
  kFDiv,
  kFFma,
  kFNeg,
  kFAbs,
  kFSqrt,
  kFRsqrt,  // 1 / sqrt(a), both correctly rounded (ops_math.cc)
  kFRcp,    // 1 / a
  kFMin,     // float_ops.h's FMinMax: a NaN operand yields the other, -0 below +0
  kFMax,
  kFMinNaN,  // .NaN: a NaN operand yields the canonical NaN
  kFMaxNaN,
  // Others; operand layout as their handlers document.
  kShiftImm,   // k: 1 left
  kShift,      // k: 1 left
  kSetp,       // k: the comparison (ops_compare.cc's CmpOp)
  kSelp,       // d: the value type
  kPredLogic,  // k: 0 and, 1 or, 2 xor, 3 not
  kExtend,     // lower.cc's ExecExtend
  kAddImm64,
  kCvta,  // k: bit0 to generic, bit1 32-bit source, bit2 32-bit destination
  kCvt,   // ops_round.cc's ExecCvt<d, s>; the rounding mode and flags are the instruction's
  kShfl,  // ops_warp.cc's ExecShfl; k: the mode (0 up, 1 down, 2 bfly, 3 idx)
  kVote,  // ops_warp.cc's ExecVote; the instruction's aux: the mode
  kBra,
  kLd,  // space, bytes, vec
  kSt,
};

// Memory spaces of kLd/kSt (a subset of MemSpace: the ones compiled natively).
enum class NSpace : uint8_t { kGlobal, kShared, kParam };

struct NativeDesc {
  NOp op = NOp::kNone;
  Ty d = Ty::kNone;
  Ty s = Ty::kNone;
  uint8_t k = 0;
  NSpace space = NSpace::kGlobal;
  uint8_t bytes = 0;
  uint8_t vec = 0;
};

void RegisterNative(ExecFn fn, const NativeDesc& desc);
// The description of `fn`, or nullptr: compile a call.
const NativeDesc* FindNative(ExecFn fn);

template <typename T>
constexpr Ty TyOf() {
  if constexpr (std::is_same_v<T, float>) return Ty::kF32;
  if constexpr (std::is_same_v<T, double>) return Ty::kF64;
  if constexpr (std::is_same_v<T, int8_t>) return Ty::kS8;
  if constexpr (std::is_same_v<T, uint8_t>) return Ty::kU8;
  if constexpr (std::is_same_v<T, int16_t>) return Ty::kS16;
  if constexpr (std::is_same_v<T, uint16_t>) return Ty::kU16;
  if constexpr (std::is_same_v<T, int32_t>) return Ty::kS32;
  if constexpr (std::is_same_v<T, uint32_t>) return Ty::kU32;
  if constexpr (std::is_same_v<T, int64_t>) return Ty::kS64;
  if constexpr (std::is_same_v<T, uint64_t>) return Ty::kU64;
  return Ty::kNone;
}

template <auto kFn, NativeDesc kDesc>
struct NativeRegistration {
  static inline const bool registered = (RegisterNative(kFn, kDesc), true);
};

// Names a lanewise operation's native form: `static constexpr NOp kNative = ...` in Op.
template <typename Op>
constexpr NOp NativeOpOf() {
  if constexpr (requires { Op::kNative; }) {
    return Op::kNative;
  } else {
    return NOp::kNone;
  }
}

template <auto kFn, typename D, typename S, typename Op>
struct NativeLanewise {
  static inline const bool registered = [] {
    constexpr NOp op = NativeOpOf<Op>();
    if constexpr (op != NOp::kNone && TyOf<D>() != Ty::kNone && TyOf<S>() != Ty::kNone) {
      RegisterNative(kFn, NativeDesc{op, TyOf<D>(), TyOf<S>()});
    }
    return true;
  }();
};

}  // namespace pvgpu::ptx

// In a handler's body: describes the handler to the compiling engine.
#define PVGPU_NATIVE(fn, ...) \
  (void)::pvgpu::ptx::NativeRegistration<fn, ::pvgpu::ptx::NativeDesc{__VA_ARGS__}>::registered
