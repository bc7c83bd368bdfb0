// Conversions (cvt) and the directed-rounding forms of float arithmetic. This file is built
// with -frounding-math so that operations honour the dynamic rounding mode set via fesetround.
#include <cfenv>
#include <cmath>
#include <limits>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/half.h"

namespace pvgpu::ptx {
namespace {

struct H16 {};   // binary16 stored in the low 16 bits of a 32-bit register
struct BF16 {};  // bfloat16 likewise

int FeMode(Round r) {
  switch (r) {
    case Round::kRz:
    case Round::kRzi:
      return FE_TOWARDZERO;
    case Round::kRm:
    case Round::kRmi:
      return FE_DOWNWARD;
    case Round::kRp:
    case Round::kRpi:
      return FE_UPWARD;
    default:
      return FE_TONEAREST;
  }
}
int HalfMode(Round r) {
  switch (r) {
    case Round::kRz:
      return 1;
    case Round::kRm:
      return 2;
    case Round::kRp:
      return 3;
    default:
      return 0;
  }
}

// RAII rounding-mode switch, only when the mode is not the default.
class ScopedRound {
 public:
  explicit ScopedRound(int mode) : old_(std::fegetround()), set_(mode != old_) {
    if (set_) std::fesetround(mode);
  }
  ~ScopedRound() {
    if (set_) std::fesetround(old_);
  }

 private:
  int old_;
  bool set_;
};

template <typename T>
double ReadAsDouble(uint8_t* r, uint32_t off, int i) {
  if constexpr (std::is_same_v<T, H16>)
    return HalfToFloat(static_cast<uint16_t>(LoadReg<uint32_t>(r, off, i)));
  else if constexpr (std::is_same_v<T, BF16>)
    return Bf16ToFloat(static_cast<uint16_t>(LoadReg<uint32_t>(r, off, i)));
  else
    return static_cast<double>(LoadReg<T>(r, off, i));
}

double RoundIntegral(double v, Round rm) {
  switch (rm) {
    case Round::kRni:
      return std::nearbyint(v);  // current mode is nearest-even
    case Round::kRzi:
      return std::trunc(v);
    case Round::kRmi:
      return std::floor(v);
    case Round::kRpi:
      return std::ceil(v);
    default:
      return v;
  }
}

template <typename D, typename S>
bool ExecCvt(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  if constexpr (TyOf<D>() != Ty::kNone && TyOf<S>() != Ty::kNone) {
    PVGPU_NATIVE((&ExecCvt<D, S>), NOp::kCvt, TyOf<D>(), TyOf<S>());
  }
  const Round rm = static_cast<Round>(in.aux);
  const bool ftz = in.flags & 1, sat = in.flags & 2;
  constexpr bool kSrcInt = std::is_integral_v<S>;
  constexpr bool kDstInt = std::is_integral_v<D>;
  ScopedRound scope((!kDstInt && (rm == Round::kRz || rm == Round::kRm || rm == Round::kRp))
                        ? FeMode(rm)
                        : FE_TONEAREST);
  ForLanes(m, [&](int i) {
    if constexpr (kSrcInt && kDstInt) {
      S s = LoadReg<S>(r, in.a[1], i);
      D d = static_cast<D>(s);
      if (sat) {
        using L = std::numeric_limits<D>;
        if constexpr (std::is_signed_v<S>) {
          if (s < 0 &&
              (!std::is_signed_v<D> || static_cast<int64_t>(s) < static_cast<int64_t>(L::min())))
            d = L::min();
        }
        if (s > 0 && static_cast<uint64_t>(s) > static_cast<uint64_t>(L::max())) d = L::max();
      }
      StoreReg<D>(r, in.a[0], i, d);
    } else if constexpr (kDstInt) {
      // Float to integer: round as requested, saturate, NaN becomes 0.
      double v = ReadAsDouble<S>(r, in.a[1], i);
      if (ftz && std::is_same_v<S, float> && std::fpclassify(static_cast<float>(v)) == FP_SUBNORMAL)
        v = 0;
      D d;
      if (std::isnan(v)) {
        d = 0;
      } else {
        v = RoundIntegral(v, rm == Round::kNone ? Round::kRzi : rm);
        using L = std::numeric_limits<D>;
        if (v <= static_cast<double>(L::min()))
          d = L::min();
        else if (v >= static_cast<double>(L::max()))
          d = L::max();
        else
          d = static_cast<D>(v);
      }
      StoreReg<D>(r, in.a[0], i, d);
    } else {
      // To a float type.
      double v;
      float vf = 0;
      bool use_float = false;
      if constexpr (kSrcInt) {
        if constexpr (std::is_same_v<D, float>) {
          vf = static_cast<float>(LoadReg<S>(r, in.a[1], i));  // rounds in the current mode
          use_float = true;
          v = vf;
        } else {
          v = static_cast<double>(LoadReg<S>(r, in.a[1], i));
        }
      } else {
        v = ReadAsDouble<S>(r, in.a[1], i);
        if (ftz && std::fpclassify(static_cast<float>(v)) == FP_SUBNORMAL &&
            !std::is_same_v<S, double>)
          v = std::copysign(0.0, v);
        if (rm >= Round::kRni && rm <= Round::kRpi) v = RoundIntegral(v, rm);
      }
      if constexpr (std::is_same_v<D, double>) {
        if (sat) v = Saturate(v);
        StoreReg<double>(r, in.a[0], i, v);
      } else if constexpr (std::is_same_v<D, float>) {
        float f = use_float ? vf : static_cast<float>(v);
        if (ftz) f = FlushDenormal(f);
        if (sat) f = Saturate(f);
        StoreReg<float>(r, in.a[0], i, f);
      } else {
        float f = static_cast<float>(v);
        if (sat) f = Saturate(f);
        uint16_t h =
            std::is_same_v<D, H16> ? FloatToHalf(f, HalfMode(rm)) : FloatToBf16(f, HalfMode(rm));
        StoreReg<uint32_t>(r, in.a[0], i, h);
      }
    }
  });
  return false;
}

template <typename R, typename F>
R WithCvtType(Ty t, F&& f) {
  switch (t) {
    case Ty::kF16:
      return f.template operator()<H16>();
    case Ty::kBF16:
      return f.template operator()<BF16>();
    case Ty::kF32:
      return f.template operator()<float>();
    case Ty::kF64:
      return f.template operator()<double>();
    default:
      return WithIntType<R>(t, f);
  }
}

// Directed rounding float ops: op selects the operation (see families.h).
template <typename T, char kOp>
bool ExecRounded(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const bool ftz = in.flags & 1, sat = in.flags & 2;
  ScopedRound scope(FeMode(static_cast<Round>(in.aux)));
  ForLanes(m, [&](int i) {
    T a = LoadReg<T>(r, in.a[1], i);
    T b = kOp == 'q' || kOp == 'r' ? T(0) : LoadReg<T>(r, in.a[2], i);
    if (ftz) {
      a = FlushDenormal(a);
      b = FlushDenormal(b);
    }
    volatile T res;
    switch (kOp) {
      case 'a':
        res = a + b;
        break;
      case 's':
        res = a - b;
        break;
      case 'm':
        res = a * b;
        break;
      case 'd':
        res = a / b;
        break;
      case 'q':
        res = std::sqrt(a);
        break;
      case 'r':
        res = T(1) / a;
        break;
      default:
        res = std::fma(a, b, FlushDenormal(LoadReg<T>(r, in.a[3], i)));
        break;
    }
    T out = res;
    if (ftz) out = FlushDenormal(out);
    if (sat) out = Saturate(out);
    StoreReg<T>(r, in.a[0], i, out);
  });
  return false;
}

// cvt{.rna,.rn,.rz}{.satfinite}.tf32.f32 d, a: a rounded to tf32 (10 explicit mantissa bits),
// kept in a 32-bit register with the 13 low mantissa bits zero, as mma and wmma read tf32.
// aux: 0 rna (nearest, ties away from zero), 1 rn (ties to even), 2 rz; flags bit 0 satfinite.
bool ExecCvtTf32(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int i) {
    uint32_t bits = LoadReg<uint32_t>(w.regs, in.a[1], i);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) {
      bits = 0x7FFFFFFFu;  // NaN: the canonical one
    } else if (magnitude < 0x7F800000u) {
      if (in.aux == 0) bits += 0x1000u;
      if (in.aux == 1) bits += 0xFFFu + ((bits >> 13) & 1u);
      bits &= ~0x1FFFu;
      if ((in.flags & 1) && (bits & 0x7FFFFFFFu) == 0x7F800000u) {
        bits = (bits & 0x80000000u) | 0x7F7FE000u;  // the largest finite tf32
      }
    }
    StoreReg<uint32_t>(w.regs, in.a[0], i, bits);
  });
  return false;
}

Status LowerCvtTf32(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(2));
  Inst in;
  in.fn = ExecCvtTf32;
  in.aux = c.Has(".rna") ? 0 : c.Has(".rn") ? 1 : c.Has(".rz") ? 2 : 3;
  if (in.aux == 3 || !c.Has(".f32")) return c.Unsupported("cvt to tf32 needs .rna, .rn or .rz from .f32");
  in.flags = c.Has(".satfinite") ? 1 : 0;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kF32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

Status LowerCvt(LowerCtx& c) {
  if (c.Has(".tf32")) return LowerCvtTf32(c);
  Ty dt0 = c.TypeMod(0);
  if (dt0 == Ty::kF16x2 || dt0 == Ty::kBF16x2 || c.Has(".pack") ||
      ((dt0 == Ty::kF16 || dt0 == Ty::kBF16) && (c.Has(".relu") || c.Has(".satfinite"))))
    return LowerCvtPackHalf(c);
  PVGPU_TRY(c.NeedOps(2));
  Ty dt = c.TypeMod(0), st = c.TypeMod(1);
  if (dt == Ty::kF16x2 || dt == Ty::kBF16x2) return LowerCvtPackHalf(c);
  if (c.Has(".pack") || c.Has(".relu")) return c.Unsupported();
  ExecFn fn = CvtHandler(dt, st, RoundMod(c), c.Has(".ftz"), c.Has(".sat"));
  return LowerSimple(c, fn, dt, st, 1, static_cast<uint64_t>(RoundMod(c)),
                     static_cast<uint8_t>((c.Has(".ftz") ? 1 : 0) | (c.Has(".sat") ? 2 : 0)));
}

}  // namespace

ExecFn CvtHandler(Ty dt, Ty st, Round rm, bool ftz, bool sat) {
  (void)rm;
  (void)ftz;
  (void)sat;
  return WithCvtType<ExecFn>(dt, [&]<typename D>() -> ExecFn {
    return WithCvtType<ExecFn>(st, [&]<typename S>() -> ExecFn { return &ExecCvt<D, S>; });
  });
}

Status LowerRounded(LowerCtx& c, char op, Ty t, Round rm, bool ftz, bool sat, int nsrc) {
  ExecFn fn = WithFloatType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    return Instantiate(op, std::integer_sequence<char, 'a', 's', 'm', 'd', 'q', 'r', 'f'>{},
                       []<char kOp>() -> ExecFn { return &ExecRounded<T, kOp>; });
  });
  return LowerSimple(c, fn, t, t, nsrc, static_cast<uint64_t>(rm),
                     static_cast<uint8_t>((ftz ? 1 : 0) | (sat ? 2 : 0)));
}

void RegisterConvert(OpTable& t) { t.Add("cvt", LowerCvt); }

}  // namespace pvgpu::ptx
