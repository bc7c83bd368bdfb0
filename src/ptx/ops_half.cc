// f16 / bf16 arithmetic (scalar and x2): add sub mul fma neg abs min max, ex2.approx and
// tanh.approx, plus the narrowing conversions from f32 with .relu / .satfinite and the packing
// conversions (cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32, cvt.pack.sat). Values are
// computed in double and rounded once.
#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/half.h"

namespace pvgpu::ptx {
namespace {

enum HalfOp : int { kAdd, kSub, kMul, kFma, kNeg, kAbs, kMin, kMax, kEx2, kTanh };

template <bool kBf>
float ToF(uint32_t h) {
  return kBf ? Bf16ToFloat(static_cast<uint16_t>(h)) : HalfToFloat(static_cast<uint16_t>(h));
}
template <bool kBf>
uint32_t FromD(double v, bool sat) {
  float f = static_cast<float>(v);
  if (sat) f = Saturate(f);
  return kBf ? FloatToBf16(f) : FloatToHalf(f);
}

// A subnormal flushed to zero of the same sign (.ftz).
template <bool kBf>
uint32_t FlushHalf(uint32_t h) {
  const uint32_t exp = kBf ? 0x7F80 : 0x7C00;
  return (h & exp) == 0 ? h & 0x8000 : h;
}

template <bool kBf>
uint32_t OneHalf(int op, uint32_t a, uint32_t b, uint32_t c, bool sat, bool ftz) {
  // neg/abs are pure sign-bit operations (they also apply to NaN).
  if (op == kNeg) return a ^ 0x8000;
  if (op == kAbs) return a & 0x7FFF;
  if (ftz) a = FlushHalf<kBf>(a);
  double x = ToF<kBf>(a), y = ToF<kBf>(b), z = ToF<kBf>(c);
  switch (op) {
    // The approximations' results are the exact values rounded once: within their bounds.
    case kEx2:
      return ftz ? FlushHalf<kBf>(FromD<kBf>(std::exp2(x), false))
                 : FromD<kBf>(std::exp2(x), false);
    case kTanh:
      return FromD<kBf>(std::tanh(x), false);
    case kAdd:
      return FromD<kBf>(x + y, sat);
    case kSub:
      return FromD<kBf>(x - y, sat);
    case kMul:
      return FromD<kBf>(x * y, sat);
    case kFma:
      return FromD<kBf>(std::fma(x, y, z), sat);
    case kMin:
      if (std::isnan(x)) return b;
      if (std::isnan(y)) return a;
      return x < y || (x == y && std::signbit(x)) ? a : b;
    default:
      if (std::isnan(x)) return b;
      if (std::isnan(y)) return a;
      return x > y || (x == y && !std::signbit(x)) ? a : b;
  }
}

// aux: op, flags bit0: sat, bit1: ftz, n: 2 for x2.
template <bool kBf>
bool ExecHalf(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const int op = static_cast<int>(in.aux);
  const bool sat = in.flags & 1, ftz = in.flags & 2;
  ForLanes(m, [&](int i) {
    uint32_t a = LoadReg<uint32_t>(r, in.a[1], i);
    uint32_t b = in.a[2] != kNoReg ? LoadReg<uint32_t>(r, in.a[2], i) : 0;
    uint32_t c = in.a[3] != kNoReg ? LoadReg<uint32_t>(r, in.a[3], i) : 0;
    uint32_t lo = OneHalf<kBf>(op, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF, sat, ftz) & 0xFFFF;
    uint32_t hi = in.n == 2 ? (OneHalf<kBf>(op, a >> 16, b >> 16, c >> 16, sat, ftz) & 0xFFFF) : 0;
    StoreReg<uint32_t>(r, in.a[0], i, lo | (hi << 16));
  });
  return false;
}

// One f32 narrowed to f16 / bf16. mode: FloatToHalf's (0 rn, 1 rz); .relu clamps negative
// results to +0, .satfinite infinities to the largest finite value; either makes NaN canonical.
template <bool kBf>
uint32_t Narrow(float f, int mode, bool relu, bool satfinite) {
  if ((relu || satfinite) && std::isnan(f)) return 0x7FFF;
  uint32_t h = kBf ? FloatToBf16(f, mode) : FloatToHalf(f, mode);
  if (relu && (h & 0x8000)) h = 0;
  const uint32_t inf = kBf ? 0x7F80 : 0x7C00;
  if (satfinite && (h & 0x7FFF) == inf) h = (h & 0x8000) | (inf - 1);
  return h;
}

// cvt.frnd2{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b (d.hi = a, d.lo = b) and the scalar
// .f16 / .bf16 form d, a (a[2] kNoReg). aux: rounding mode; flags bit0 relu, bit1 satfinite.
template <bool kBf>
bool ExecCvtPack(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const int mode = static_cast<int>(in.aux);
  const bool relu = in.flags & 1, satfinite = in.flags & 2;
  ForLanes(m, [&](int i) {
    float a = LoadReg<float>(r, in.a[1], i);
    uint32_t hi = Narrow<kBf>(a, mode, relu, satfinite);
    if (in.a[2] == kNoReg) {
      StoreReg<uint32_t>(r, in.a[0], i, hi);
      return;
    }
    uint32_t lo = Narrow<kBf>(LoadReg<float>(r, in.a[2], i), mode, relu, satfinite);
    StoreReg<uint32_t>(r, in.a[0], i, (hi << 16) | lo);
  });
  return false;
}

// cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u2,s2,u4,s4,u8,s8}.s32.b32 d, a, b, c:
// a and b saturate to n bits each, b in the low bits, a above it; with c, c fills the bits above
// (so that chained conversions pack four bytes). n: bits; flags bit0: signed.
bool ExecCvtPackSat(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const unsigned bits = in.n;
  const bool sgn = in.flags & 1;
  const int64_t lo = sgn ? -(int64_t{1} << (bits - 1)) : 0;
  const int64_t hi = sgn ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  const uint32_t mask = (1u << bits) - 1;
  ForLanes(m, [&](int i) {
    auto sat = [&](uint32_t reg) {
      int64_t v = LoadReg<int32_t>(r, reg, i);
      return static_cast<uint32_t>(v < lo ? lo : v > hi ? hi : v) & mask;
    };
    uint32_t d = (sat(in.a[1]) << bits) | sat(in.a[2]);
    if (in.a[3] != kNoReg) d |= LoadReg<uint32_t>(r, in.a[3], i) << (2 * bits);
    StoreReg<uint32_t>(r, in.a[0], i, d);
  });
  return false;
}

Status LowerCvtPackSat(LowerCtx& c) {
  // .convertType, then .s32 (and .b32 with c); .u2 .s2 .u4 .s4 are not PTX register types.
  Inst in;
  in.fn = ExecCvtPackSat;
  int first = 1;  // index of .s32 among the type modifiers
  if (c.Has(".u2") || c.Has(".s2") || c.Has(".u4") || c.Has(".s4")) {
    in.n = c.Has(".u2") || c.Has(".s2") ? 2 : 4;
    in.flags = c.Has(".s2") || c.Has(".s4") ? 1 : 0;
    first = 0;
  } else {
    Ty dt = c.TypeMod(0);
    if (dt != Ty::kU16 && dt != Ty::kS16 && dt != Ty::kU8 && dt != Ty::kS8) return c.Unsupported();
    in.n = dt == Ty::kU16 || dt == Ty::kS16 ? 16 : 8;
    in.flags = dt == Ty::kS16 || dt == Ty::kS8 ? 1 : 0;
  }
  const bool with_c = in.n < 16;
  if (!c.Has(".sat") || c.TypeMod(first) != Ty::kS32 ||
      (with_c && c.TypeMod(first + 1) != Ty::kB32) || c.NumTypeMods() != first + 1 + with_c)
    return c.Unsupported();
  PVGPU_TRY(c.NeedOps(with_c ? 4 : 3));
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kS32));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kS32));
  if (with_c) {
    PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(3, Ty::kB32));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

Status LowerCvtPack(LowerCtx& c) {
  if (c.Has(".pack")) return LowerCvtPackSat(c);
  Ty dt = c.TypeMod(0);
  const bool bf = dt == Ty::kBF16x2 || dt == Ty::kBF16;
  const bool pair = dt == Ty::kF16x2 || dt == Ty::kBF16x2;
  Inst in;
  in.fn = bf ? &ExecCvtPack<true> : &ExecCvtPack<false>;
  if (!IsHalf(dt) || c.TypeMod(1) != Ty::kF32) return c.Unsupported();
  Round rm = RoundMod(c);
  if (rm != Round::kRn && rm != Round::kRz) return c.Unsupported("rounding mode");
  in.aux = rm == Round::kRz ? 1 : 0;
  in.flags = (c.Has(".relu") ? 1 : 0) | (c.Has(".satfinite") ? 2 : 0);
  PVGPU_TRY(c.NeedOps(pair ? 3 : 2));
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kF32));
  if (pair) {
    PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kF32));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, pair ? Ty::kB32 : Ty::kB16));
  c.Emit(in);
  return Status::Ok();
}

}  // namespace

Status LowerHalfArith(LowerCtx& c) {
  const std::string& op = c.inst().opcode;
  Ty t = c.TypeMod();
  int code;
  int nsrc;
  if (op == "add")
    code = kAdd, nsrc = 2;
  else if (op == "sub")
    code = kSub, nsrc = 2;
  else if (op == "mul")
    code = kMul, nsrc = 2;
  else if (op == "fma" || op == "mad")
    code = kFma, nsrc = 3;
  else if (op == "neg")
    code = kNeg, nsrc = 1;
  else if (op == "abs")
    code = kAbs, nsrc = 1;
  else if (op == "min")
    code = kMin, nsrc = 2;
  else if (op == "max")
    code = kMax, nsrc = 2;
  else if ((op == "ex2" || op == "tanh") && c.Has(".approx"))
    code = op == "ex2" ? kEx2 : kTanh, nsrc = 1;
  else
    return c.Unsupported();
  Round rm = RoundMod(c);
  if (rm != Round::kNone && rm != Round::kRn) return c.Unsupported("rounding mode");
  if (c.Has(".NaN") || c.Has(".relu")) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(1 + nsrc));
  Inst in;
  bool bf = t == Ty::kBF16 || t == Ty::kBF16x2;
  in.fn = bf ? &ExecHalf<true> : &ExecHalf<false>;
  in.aux = static_cast<uint64_t>(code);
  in.flags = (c.Has(".sat") ? 1 : 0) | (c.Has(".ftz") ? 2 : 0);
  in.n = (t == Ty::kF16x2 || t == Ty::kBF16x2) ? 2 : 1;
  for (int k = 0; k < nsrc; ++k) {
    PVGPU_ASSIGN_OR_RETURN(in.a[1 + k], c.Src(1 + k, Ty::kB32));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

Status LowerCvtPackHalf(LowerCtx& c) { return LowerCvtPack(c); }

uint32_t HalfBinary(char op, bool bf, uint32_t a, uint32_t b) {
  const int code = op == 'n' ? kMin : op == 'x' ? kMax : kAdd;
  return bf ? OneHalf<true>(code, a, b, 0, false, false) & 0xFFFF
            : OneHalf<false>(code, a, b, 0, false, false) & 0xFFFF;
}

void RegisterHalf(OpTable&) {}

}  // namespace pvgpu::ptx
