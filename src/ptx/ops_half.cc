// f16 / bf16 arithmetic (scalar and x2): add sub mul fma neg abs min max, plus the packing
// conversion cvt.rn.{f16x2,bf16x2}.f32. Values are computed in double and rounded once.
#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/half.h"

namespace pvgpu::ptx {
namespace {

enum HalfOp : int { kAdd, kSub, kMul, kFma, kNeg, kAbs, kMin, kMax };

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

template <bool kBf>
uint32_t OneHalf(int op, uint32_t a, uint32_t b, uint32_t c, bool sat) {
  // neg/abs are pure sign-bit operations (they also apply to NaN).
  if (op == kNeg) return a ^ 0x8000;
  if (op == kAbs) return a & 0x7FFF;
  double x = ToF<kBf>(a), y = ToF<kBf>(b), z = ToF<kBf>(c);
  switch (op) {
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

// aux: op, flags bit0: sat, n: 2 for x2.
template <bool kBf>
bool ExecHalf(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const int op = static_cast<int>(in.aux);
  const bool sat = in.flags & 1;
  ForLanes(m, [&](int i) {
    uint32_t a = LoadReg<uint32_t>(r, in.a[1], i);
    uint32_t b = in.a[2] != kNoReg ? LoadReg<uint32_t>(r, in.a[2], i) : 0;
    uint32_t c = in.a[3] != kNoReg ? LoadReg<uint32_t>(r, in.a[3], i) : 0;
    uint32_t lo = OneHalf<kBf>(op, a & 0xFFFF, b & 0xFFFF, c & 0xFFFF, sat) & 0xFFFF;
    uint32_t hi = in.n == 2 ? (OneHalf<kBf>(op, a >> 16, b >> 16, c >> 16, sat) & 0xFFFF) : 0;
    StoreReg<uint32_t>(r, in.a[0], i, lo | (hi << 16));
  });
  return false;
}

// cvt.rn.f16x2.f32 d, a, b: d.hi = a, d.lo = b.
template <bool kBf>
bool ExecCvtPack(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  ForLanes(m, [&](int i) {
    float a = LoadReg<float>(r, in.a[1], i), b = LoadReg<float>(r, in.a[2], i);
    uint32_t hi = kBf ? FloatToBf16(a) : FloatToHalf(a);
    uint32_t lo = kBf ? FloatToBf16(b) : FloatToHalf(b);
    StoreReg<uint32_t>(r, in.a[0], i, (hi << 16) | lo);
  });
  return false;
}

Status LowerCvtPack(LowerCtx& c) {
  Ty dt = c.TypeMod(0);
  Inst in;
  in.fn = dt == Ty::kF16x2 ? &ExecCvtPack<false> : dt == Ty::kBF16x2 ? &ExecCvtPack<true> : nullptr;
  if (!in.fn || c.TypeMod(1) != Ty::kF32) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(3));
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kF32));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kF32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
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
  in.flags = c.Has(".sat") ? 1 : 0;
  in.n = (t == Ty::kF16x2 || t == Ty::kBF16x2) ? 2 : 1;
  for (int k = 0; k < nsrc; ++k) {
    PVGPU_ASSIGN_OR_RETURN(in.a[1 + k], c.Src(1 + k, Ty::kB32));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

Status LowerCvtPackHalf(LowerCtx& c) { return LowerCvtPack(c); }

void RegisterHalf(OpTable&) {}

}  // namespace pvgpu::ptx
