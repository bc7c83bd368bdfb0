// Transcendentals and float classification: sqrt rsqrt rcp ex2 lg2 sin cos tanh (approx and
// IEEE forms), testp, copysign.
#include "ptx/exec_util.h"
#include "ptx/families.h"

namespace pvgpu::ptx {
namespace {

template <typename T, bool F>
struct Sqrt {
  static constexpr NOp kNative = F ? NOp::kNone : NOp::kFSqrt;
  static T Apply(T a) {
    T r = std::sqrt(F ? FlushDenormal(a) : a);
    return F ? FlushDenormal(r) : r;
  }
};
template <typename T, bool F>
struct Rsqrt {
  static constexpr NOp kNative = F ? NOp::kNone : NOp::kFRsqrt;
  static T Apply(T a) { return T(1) / std::sqrt(F ? FlushDenormal(a) : a); }
};
template <typename T, bool F>
struct Rcp {
  static constexpr NOp kNative = F ? NOp::kNone : NOp::kFRcp;
  static T Apply(T a) { return T(1) / (F ? FlushDenormal(a) : a); }
};
template <typename T, bool F>
struct Ex2 {
  static T Apply(T a) { return std::exp2(F ? FlushDenormal(a) : a); }
};
template <typename T, bool F>
struct Lg2 {
  static T Apply(T a) { return std::log2(F ? FlushDenormal(a) : a); }
};
template <typename T, bool F>
struct Sin {
  static T Apply(T a) { return std::sin(F ? FlushDenormal(a) : a); }
};
template <typename T, bool F>
struct Cos {
  static T Apply(T a) { return std::cos(F ? FlushDenormal(a) : a); }
};
template <typename T, bool F>
struct Tanh {
  static T Apply(T a) { return std::tanh(F ? FlushDenormal(a) : a); }
};

template <template <typename, bool> class Op>
Status LowerUnaryMath(LowerCtx& c, char rounded_op) {
  Ty t = c.TypeMod();
  Round rm = RoundMod(c);
  bool ftz = c.Has(".ftz");
  if (rounded_op && (rm == Round::kRz || rm == Round::kRm || rm == Round::kRp))
    return LowerRounded(c, rounded_op, t, rm, ftz, false, 1);
  ExecFn fn = WithFloatType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    return ftz ? &ExecUnary<T, T, Op<T, true>> : &ExecUnary<T, T, Op<T, false>>;
  });
  return LowerSimple(c, fn, t, t, 1);
}

Status LowerSqrt(LowerCtx& c) { return LowerUnaryMath<Sqrt>(c, 'q'); }
Status LowerRsqrt(LowerCtx& c) { return LowerUnaryMath<Rsqrt>(c, 0); }
Status LowerRcp(LowerCtx& c) {
  // rcp.approx.ftz.f64 is a coarse reciprocal on hardware; the exact value is within its bound.
  return LowerUnaryMath<Rcp>(c, 'r');
}
Status LowerEx2(LowerCtx& c) {
  return IsHalf(c.TypeMod()) ? LowerHalfArith(c) : LowerUnaryMath<Ex2>(c, 0);
}
Status LowerLg2(LowerCtx& c) { return LowerUnaryMath<Lg2>(c, 0); }
Status LowerSin(LowerCtx& c) { return LowerUnaryMath<Sin>(c, 0); }
Status LowerCos(LowerCtx& c) { return LowerUnaryMath<Cos>(c, 0); }
Status LowerTanh(LowerCtx& c) {
  return IsHalf(c.TypeMod()) ? LowerHalfArith(c) : LowerUnaryMath<Tanh>(c, 0);
}

// testp.op.type p, a. aux: 0 finite, 1 infinite, 2 number, 3 notanumber, 4 normal, 5 subnormal.
template <typename T>
bool ExecTestp(const Inst& in, Warp& w, uint32_t m) {
  uint32_t bits = 0;
  ForLanes(m, [&](int i) {
    T a = LoadReg<T>(w.regs, in.a[1], i);
    bool v;
    switch (in.aux) {
      case 0:
        v = std::isfinite(a);
        break;
      case 1:
        v = std::isinf(a);
        break;
      case 2:
        v = !std::isnan(a);
        break;
      case 3:
        v = std::isnan(a);
        break;
      case 4:
        v = std::isnormal(a);
        break;
      default:
        v = std::fpclassify(a) == FP_SUBNORMAL;
        break;
    }
    bits |= static_cast<uint32_t>(v) << i;
  });
  uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
  d = (d & ~m) | bits;
  return false;
}

Status LowerTestp(LowerCtx& c) {
  static const char* kOps[] = {".finite",     ".infinite", ".number",
                               ".notanumber", ".normal",   ".subnormal"};
  Inst in;
  in.aux = 9;
  for (int k = 0; k < 6; ++k)
    if (c.Has(kOps[k])) in.aux = k;
  Ty t = c.TypeMod();
  in.fn = t == Ty::kF32 ? &ExecTestp<float> : t == Ty::kF64 ? &ExecTestp<double> : nullptr;
  if (in.aux == 9 || !in.fn) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(2));
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

// copysign d, a, b: magnitude of b with the sign of a.
template <typename T>
struct CopySign {
  static T Apply(T a, T b) { return std::copysign(b, a); }
};
Status LowerCopysign(LowerCtx& c) {
  Ty t = c.TypeMod();
  ExecFn fn = WithFloatType<ExecFn>(
      t, []<typename T>() -> ExecFn { return &ExecBinary<T, T, CopySign<T>>; });
  return LowerSimple(c, fn, t, t, 2);
}

}  // namespace

void RegisterMath(OpTable& t) {
  t.Add("sqrt", LowerSqrt);
  t.Add("rsqrt", LowerRsqrt);
  t.Add("rcp", LowerRcp);
  t.Add("ex2", LowerEx2);
  t.Add("lg2", LowerLg2);
  t.Add("sin", LowerSin);
  t.Add("cos", LowerCos);
  t.Add("tanh", LowerTanh);
  t.Add("testp", LowerTestp);
  t.Add("copysign", LowerCopysign);
}

}  // namespace pvgpu::ptx
