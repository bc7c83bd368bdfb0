// Integer and floating-point arithmetic: add sub mul mad mul24 mad24 sad div rem abs neg min
// max fma and the carry chain (add.cc addc sub.cc subc mad.cc madc).
#include <algorithm>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/float_ops.h"

namespace pvgpu::ptx {
namespace {

template <typename T>
using U = std::make_unsigned_t<T>;

template <typename T, bool kSat>
struct IAdd {
  static constexpr NOp kNative = kSat ? NOp::kNone : NOp::kAdd;
  static T Apply(T a, T b) {
    if constexpr (kSat && std::is_signed_v<T>) {
      T r;
      if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
      return r;
    }
    return static_cast<T>(static_cast<U<T>>(a) + static_cast<U<T>>(b));
  }
};
template <typename T, bool kSat>
struct ISub {
  static constexpr NOp kNative = kSat ? NOp::kNone : NOp::kSub;
  static T Apply(T a, T b) {
    if constexpr (kSat && std::is_signed_v<T>) {
      T r;
      if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
      return r;
    }
    return static_cast<T>(static_cast<U<T>>(a) - static_cast<U<T>>(b));
  }
};
template <typename T>
struct IMulLo {
  static constexpr NOp kNative = NOp::kMulLo;
  static T Apply(T a, T b) { return static_cast<T>(static_cast<U<T>>(a) * static_cast<U<T>>(b)); }
};
template <typename T>
struct IMulHi {
  static T Apply(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
      return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> 64);
    } else {
      using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> (8 * sizeof(T)));
    }
  }
};
template <typename T>
struct IMadLo {
  static constexpr NOp kNative = NOp::kMadLo;
  static T Apply(T a, T b, T c) { return IAdd<T, false>::Apply(IMulLo<T>::Apply(a, b), c); }
};
template <typename T>
struct IMadHi {
  static T Apply(T a, T b, T c) { return IAdd<T, false>::Apply(IMulHi<T>::Apply(a, b), c); }
};
template <typename T>
struct Wide {
  using type =
      std::conditional_t<std::is_signed_v<T>, std::conditional_t<sizeof(T) == 2, int32_t, int64_t>,
                         std::conditional_t<sizeof(T) == 2, uint32_t, uint64_t>>;
};
template <typename T>
struct IMulWide {
  static constexpr NOp kNative = NOp::kMulWide;
  using W = typename Wide<T>::type;
  static W Apply(T a, T b) { return static_cast<W>(static_cast<W>(a) * static_cast<W>(b)); }
};
// mad.wide: the wide addend is a separate operand type, handled by a dedicated handler.
template <typename T>
bool ExecMadWide(const Inst& in, Warp& w, uint32_t m) {
  using W = typename Wide<T>::type;
  uint8_t* r = w.regs;
  ForLanes(m, [&](int i) {
    W p = static_cast<W>(LoadReg<T>(r, in.a[1], i)) * static_cast<W>(LoadReg<T>(r, in.a[2], i));
    StoreReg<W>(r, in.a[0], i,
                static_cast<W>(static_cast<std::make_unsigned_t<W>>(p) +
                               static_cast<std::make_unsigned_t<W>>(LoadReg<W>(r, in.a[3], i))));
  });
  return false;
}
template <typename T, bool kHi>
struct IMul24 {
  static T Apply(T a, T b) {
    int64_t x = std::is_signed_v<T> ? (static_cast<int64_t>(static_cast<uint64_t>(a) << 40) >> 40)
                                    : static_cast<int64_t>(a & 0xFFFFFF);
    int64_t y = std::is_signed_v<T> ? (static_cast<int64_t>(static_cast<uint64_t>(b) << 40) >> 40)
                                    : static_cast<int64_t>(b & 0xFFFFFF);
    uint64_t p = static_cast<uint64_t>(x * y);
    return static_cast<T>(kHi ? (p >> 16) : p);
  }
};
template <typename T, bool kHi>
struct IMad24 {
  static T Apply(T a, T b, T c) { return IAdd<T, false>::Apply(IMul24<T, kHi>::Apply(a, b), c); }
};
template <typename T>
struct ISad {
  static T Apply(T a, T b, T c) {
    U<T> d = a > b ? static_cast<U<T>>(a) - static_cast<U<T>>(b)
                   : static_cast<U<T>>(b) - static_cast<U<T>>(a);
    return static_cast<T>(d + static_cast<U<T>>(c));
  }
};
template <typename T>
struct IDiv {
  static T Apply(T a, T b) {
    if (b == 0) return static_cast<T>(~U<T>{0});
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(U<T>{0} - static_cast<U<T>>(a));
    }
    return a / b;
  }
};
template <typename T>
struct IRem {
  static T Apply(T a, T b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return a % b;
  }
};
template <typename T>
struct IAbs {
  static constexpr NOp kNative = NOp::kAbs;
  static T Apply(T a) {
    if constexpr (std::is_signed_v<T>)
      return a < 0 ? static_cast<T>(U<T>{0} - static_cast<U<T>>(a)) : a;
    return a;
  }
};
template <typename T>
struct INeg {
  static constexpr NOp kNative = NOp::kNeg;
  static T Apply(T a) { return static_cast<T>(U<T>{0} - static_cast<U<T>>(a)); }
};
template <typename T>
struct IMin {
  static constexpr NOp kNative = NOp::kMin;
  static T Apply(T a, T b) { return a < b ? a : b; }
};
template <typename T>
struct IMax {
  static constexpr NOp kNative = NOp::kMax;
  static T Apply(T a, T b) { return a > b ? a : b; }
};

// Carry chain. flags bit0: consume CC, bit1: produce CC. aux: 0 add, 1 sub, 2 mad.lo, 3 mad.hi.
template <typename T>
bool ExecCarry(const Inst& in, Warp& w, uint32_t m) {
  using UT = U<T>;
  uint8_t* r = w.regs;
  uint32_t& cc = *RegPtr<uint32_t>(r, w.launch->image->sp.cc);
  uint32_t out = cc;
  ForLanes(m, [&](int i) {
    UT a = static_cast<UT>(LoadReg<T>(r, in.a[1], i)),
       b = static_cast<UT>(LoadReg<T>(r, in.a[2], i));
    UT cin = (in.flags & 1) ? ((cc >> i) & 1) : 0;
    UT res;
    bool carry;
    if (in.aux == 1) {
      // Borrow semantics: CC is set when the subtraction borrows.
      UT t1 = a - b;
      bool b1 = a < b;
      res = t1 - cin;
      carry = b1 || (t1 < cin);
    } else {
      UT base = a + b;
      if (in.aux == 2) base = a * b;
      if (in.aux == 3)
        base = static_cast<UT>(IMulHi<T>::Apply(static_cast<T>(a), static_cast<T>(b)));
      UT addend = in.aux >= 2 ? static_cast<UT>(LoadReg<T>(r, in.a[3], i)) : 0;
      if (in.aux >= 2) {
        UT t1 = base + addend;
        bool c1 = t1 < base;
        res = t1 + cin;
        carry = c1 || res < t1;
      } else {
        bool c1 = base < a;
        res = base + cin;
        carry = c1 || res < base;
      }
    }
    StoreReg<T>(r, in.a[0], i, static_cast<T>(res));
    out = (out & ~(1u << i)) | (static_cast<uint32_t>(carry) << i);
  });
  if (in.flags & 2) cc = out;
  return false;
}

Status LowerCarry(LowerCtx& c, int kind, bool cin) {
  Ty t = c.TypeMod();
  Inst in;
  in.fn = WithIntType<ExecFn>(t, []<typename T>() -> ExecFn {
    if constexpr (sizeof(T) >= 4) return &ExecCarry<T>;
    return nullptr;
  });
  if (!in.fn) return c.Unsupported();
  in.flags = (cin ? 1 : 0) | (c.Has(".cc") ? 2 : 0);
  in.aux = static_cast<uint64_t>(kind);
  int nsrc = kind >= 2 ? 3 : 2;
  PVGPU_TRY(c.NeedOps(1 + nsrc));
  for (int i = 0; i < nsrc; ++i) {
    PVGPU_ASSIGN_OR_RETURN(in.a[1 + i], c.Src(1 + i, t));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

Round FloatRound(const LowerCtx& c) { return RoundMod(c); }
bool Directed(Round r) { return r == Round::kRz || r == Round::kRm || r == Round::kRp; }

// The float forms of add, sub, mul, mad and fma: a directed rounding mode goes to
// LowerRounded (`rounded_op`), the rest to Op with .ftz and .sat; `fast`, when given, serves
// the plain form (no .ftz, no .sat).
template <template <typename, bool, bool> class Op, int kArgs>
Status LowerFloatArith(LowerCtx& c, Ty t, char rounded_op, ExecFn fast = nullptr) {
  const Round rm = FloatRound(c);
  const bool sat = c.Has(".sat"), ftz = c.Has(".ftz");
  if (Directed(rm)) return LowerRounded(c, rounded_op, t, rm, ftz, sat, kArgs);
  ExecFn fn = (!ftz && !sat && fast != nullptr) ? fast : PickFloat<Op, kArgs>(t, ftz, sat);
  return LowerSimple(c, fn, t, t, kArgs);
}

Status LowerAddSub(LowerCtx& c, bool sub) {
  Ty t = c.TypeMod();
  if (IsHalf(t)) return LowerHalfArith(c);
  if (c.Has(".cc")) return LowerCarry(c, sub ? 1 : 0, false);
  if (IsFloat(t)) {
    return sub ? LowerFloatArith<FSub, 2>(c, t, 's') : LowerFloatArith<FAdd, 2>(c, t, 'a');
  }
  const bool sat = c.Has(".sat");
  ExecFn fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    if (sat) return sub ? &ExecBinary<T, T, ISub<T, true>> : &ExecBinary<T, T, IAdd<T, true>>;
    return sub ? &ExecBinary<T, T, ISub<T, false>> : &ExecBinary<T, T, IAdd<T, false>>;
  });
  return LowerSimple(c, fn, t, t, 2);
}

Status LowerAdd(LowerCtx& c) { return LowerAddSub(c, false); }
Status LowerSub(LowerCtx& c) { return LowerAddSub(c, true); }
Status LowerAddc(LowerCtx& c) { return LowerCarry(c, 0, true); }
Status LowerSubc(LowerCtx& c) { return LowerCarry(c, 1, true); }
Status LowerMadc(LowerCtx& c) { return LowerCarry(c, c.Has(".hi") ? 3 : 2, true); }

// The result type of mul.wide and mad.wide: twice as wide (16- and 32-bit integers only).
Ty WideType(Ty t) {
  switch (t) {
    case Ty::kU16:
      return Ty::kU32;
    case Ty::kS16:
      return Ty::kS32;
    case Ty::kU32:
      return Ty::kU64;
    case Ty::kS32:
      return Ty::kS64;
    default:
      return Ty::kNone;
  }
}

Status LowerMul(LowerCtx& c) {
  Ty t = c.TypeMod();
  if (IsHalf(t)) return LowerHalfArith(c);
  if (IsFloat(t)) return LowerFloatArith<FMul, 2>(c, t, 'm');
  if (c.Has(".wide")) {
    const Ty wt = WideType(t);
    ExecFn fn = WithIntType<ExecFn>(t, []<typename T>() -> ExecFn {
      if constexpr (sizeof(T) == 2 || sizeof(T) == 4)
        return &ExecBinary<typename Wide<T>::type, T, IMulWide<T>>;
      return nullptr;
    });
    if (wt == Ty::kNone) fn = nullptr;
    return LowerSimple(c, fn, wt, t, 2);
  }
  bool hi = c.Has(".hi");
  ExecFn fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    return hi ? &ExecBinary<T, T, IMulHi<T>> : &ExecBinary<T, T, IMulLo<T>>;
  });
  return LowerSimple(c, fn, t, t, 2);
}

Status LowerMad(LowerCtx& c) {
  Ty t = c.TypeMod();
  if (IsHalf(t)) return LowerHalfArith(c);
  if (IsFloat(t)) return LowerFloatArith<FFma, 3>(c, t, 'f', SimdFma(t));
  if (c.Has(".cc")) return LowerCarry(c, c.Has(".hi") ? 3 : 2, false);
  if (c.Has(".wide")) {
    const Ty wt = WideType(t);
    if (wt == Ty::kNone) return c.Unsupported();
    ExecFn fn = WithIntType<ExecFn>(t, []<typename T>() -> ExecFn {
      if constexpr (sizeof(T) == 2 || sizeof(T) == 4) return &ExecMadWide<T>;
      return nullptr;
    });
    PVGPU_TRY(c.NeedOps(4));
    Inst in;
    in.fn = fn;
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
    PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, t));
    PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(3, wt));
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, wt));
    c.Emit(in);
    return Status::Ok();
  }
  bool hi = c.Has(".hi");
  ExecFn fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    return hi ? &ExecTernary<T, T, IMadHi<T>> : &ExecTernary<T, T, IMadLo<T>>;
  });
  return LowerSimple(c, fn, t, t, 3);
}

Status LowerFma(LowerCtx& c) {
  Ty t = c.TypeMod();
  if (IsHalf(t)) return LowerHalfArith(c);
  return LowerFloatArith<FFma, 3>(c, t, 'f', SimdFma(t));
}

// mul24 and mad24 (u32 and s32 only): `make` gives the executor of type T, .hi or .lo.
template <typename Make>
ExecFn Pick24(Ty t, bool hi, Make make) {
  auto pick = [&]<typename T>() {
    return hi ? make.template operator()<T, true>() : make.template operator()<T, false>();
  };
  if (t == Ty::kU32) return pick.template operator()<uint32_t>();
  if (t == Ty::kS32) return pick.template operator()<int32_t>();
  return nullptr;
}

Status LowerMul24(LowerCtx& c) {
  Ty t = c.TypeMod();
  ExecFn fn = Pick24(t, c.Has(".hi"), []<typename T, bool kHi>() -> ExecFn {
    return &ExecBinary<T, T, IMul24<T, kHi>>;
  });
  return LowerSimple(c, fn, t, t, 2);
}

Status LowerMad24(LowerCtx& c) {
  Ty t = c.TypeMod();
  ExecFn fn = Pick24(t, c.Has(".hi"), []<typename T, bool kHi>() -> ExecFn {
    return &ExecTernary<T, T, IMad24<T, kHi>>;
  });
  return LowerSimple(c, fn, t, t, 3);
}

Status LowerSad(LowerCtx& c) {
  Ty t = c.TypeMod();
  return LowerSimple(
      c, WithIntType<ExecFn>(t, []<typename T>() -> ExecFn { return &ExecTernary<T, T, ISad<T>>; }),
      t, t, 3);
}

Status LowerDiv(LowerCtx& c) {
  Ty t = c.TypeMod();
  if (IsFloat(t)) {
    Round rm = FloatRound(c);
    bool ftz = c.Has(".ftz");
    if (Directed(rm)) return LowerRounded(c, 'd', t, rm, ftz, false, 2);
    ExecFn fn = PickFloat<FDiv, 2>(t, ftz, false);
    return LowerSimple(c, fn, t, t, 2);
  }
  return LowerSimple(
      c, WithIntType<ExecFn>(t, []<typename T>() -> ExecFn { return &ExecBinary<T, T, IDiv<T>>; }),
      t, t, 2);
}

Status LowerRem(LowerCtx& c) {
  Ty t = c.TypeMod();
  return LowerSimple(
      c, WithIntType<ExecFn>(t, []<typename T>() -> ExecFn { return &ExecBinary<T, T, IRem<T>>; }),
      t, t, 2);
}

Status LowerAbsNeg(LowerCtx& c, bool neg) {
  Ty t = c.TypeMod();
  if (IsHalf(t)) return LowerHalfArith(c);
  ExecFn fn;
  if (IsFloat(t))
    fn = neg ? PickFloat<FNeg, 1>(t, c.Has(".ftz"), false)
             : PickFloat<FAbs, 1>(t, c.Has(".ftz"), false);
  else
    fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
      return neg ? &ExecUnary<T, T, INeg<T>> : &ExecUnary<T, T, IAbs<T>>;
    });
  return LowerSimple(c, fn, t, t, 1);
}
Status LowerAbs(LowerCtx& c) { return LowerAbsNeg(c, false); }
Status LowerNeg(LowerCtx& c) { return LowerAbsNeg(c, true); }

// min/max{.relu}.{s16x2,u16x2} d, a, b (sm_90): each 16-bit half on its own; .relu (signed
// only) makes a negative result 0.
template <bool kMax, bool kSigned, bool kRelu>
bool ExecMinMax16x2(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int i) {
    const uint32_t a = LoadReg<uint32_t>(w.regs, in.a[1], i);
    const uint32_t b = LoadReg<uint32_t>(w.regs, in.a[2], i);
    uint32_t d = 0;
    for (int half = 0; half < 2; ++half) {
      const uint32_t x = (a >> (16 * half)) & 0xFFFFu, y = (b >> (16 * half)) & 0xFFFFu;
      int32_t r;
      if constexpr (kSigned) {
        const int32_t sx = static_cast<int16_t>(x), sy = static_cast<int16_t>(y);
        r = kMax ? std::max(sx, sy) : std::min(sx, sy);
        if (kRelu && r < 0) r = 0;
      } else {
        r = static_cast<int32_t>(kMax ? std::max(x, y) : std::min(x, y));
      }
      d |= (static_cast<uint32_t>(r) & 0xFFFFu) << (16 * half);
    }
    StoreReg<uint32_t>(w.regs, in.a[0], i, d);
  });
  return false;
}

// min/max.relu.s32 d, a, b (sm_90): the signed minimum or maximum, 0 when it is negative.
template <bool kMax>
bool ExecMinMaxReluS32(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int i) {
    const int32_t a = LoadReg<int32_t>(w.regs, in.a[1], i);
    const int32_t b = LoadReg<int32_t>(w.regs, in.a[2], i);
    StoreReg<int32_t>(w.regs, in.a[0], i, std::max(kMax ? std::max(a, b) : std::min(a, b), 0));
  });
  return false;
}

Status LowerMinMax(LowerCtx& c, bool max) {
  const bool relu = c.Has(".relu");
  const bool s16x2 = c.Has(".s16x2"), u16x2 = c.Has(".u16x2");
  if (s16x2 || u16x2 || (relu && c.TypeMod() == Ty::kS32)) {
    if (relu && u16x2) return c.Unsupported(".relu on unsigned values");
    PVGPU_TRY(c.NeedOps(3));
    Inst in;
    if (s16x2 || u16x2) {
      ExecFn fns[2][2][2] = {{{&ExecMinMax16x2<false, false, false>, nullptr},
                              {&ExecMinMax16x2<false, true, false>, &ExecMinMax16x2<false, true, true>}},
                             {{&ExecMinMax16x2<true, false, false>, nullptr},
                              {&ExecMinMax16x2<true, true, false>, &ExecMinMax16x2<true, true, true>}}};
      in.fn = fns[max][s16x2][relu];
    } else {
      in.fn = max ? &ExecMinMaxReluS32<true> : &ExecMinMaxReluS32<false>;
    }
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kB32));
    PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kB32));
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
    c.Emit(in);
    return Status::Ok();
  }
  Ty t = c.TypeMod();
  if (IsHalf(t)) return LowerHalfArith(c);
  if (relu && !IsHalf(t)) return c.Unsupported(".relu on this type");
  ExecFn fn;
  if (IsFloat(t)) {
    bool nan = c.Has(".NaN");
    fn =
        max ? PickFloat<FMax, 2>(t, c.Has(".ftz"), nan) : PickFloat<FMin, 2>(t, c.Has(".ftz"), nan);
  } else {
    fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
      return max ? &ExecBinary<T, T, IMax<T>> : &ExecBinary<T, T, IMin<T>>;
    });
  }
  if (c.ops().size() == 4) return c.Unsupported("three-input min/max");
  return LowerSimple(c, fn, t, t, 2);
}
Status LowerMin(LowerCtx& c) { return LowerMinMax(c, false); }
Status LowerMax(LowerCtx& c) { return LowerMinMax(c, true); }

// dp4a.atype.btype d, a, b, c and dp2a.{lo,hi}.atype.btype d, a, b, c: integer dot products
// of packed bytes/halves accumulated into c. flags: bit0 a signed, bit1 b signed; n: 4 for dp4a,
// 2/3 for dp2a.lo/.hi.
bool ExecDp(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const bool as = in.flags & 1, bs = in.flags & 2;
  auto byte = [](uint32_t v, int k, bool sgn) {
    uint32_t b = (v >> (8 * k)) & 0xFF;
    return sgn ? static_cast<int64_t>(static_cast<int8_t>(b)) : static_cast<int64_t>(b);
  };
  auto half = [](uint32_t v, int k, bool sgn) {
    uint32_t h = (v >> (16 * k)) & 0xFFFF;
    return sgn ? static_cast<int64_t>(static_cast<int16_t>(h)) : static_cast<int64_t>(h);
  };
  ForLanes(m, [&](int i) {
    uint32_t a = LoadReg<uint32_t>(r, in.a[1], i), b = LoadReg<uint32_t>(r, in.a[2], i);
    int64_t acc = static_cast<int64_t>(static_cast<int32_t>(LoadReg<uint32_t>(r, in.a[3], i)));
    if (in.n == 4) {
      for (int k = 0; k < 4; ++k) acc += byte(a, k, as) * byte(b, k, bs);
    } else {
      int off = in.n == 3 ? 2 : 0;
      acc += half(a, 0, as) * byte(b, off, bs) + half(a, 1, as) * byte(b, off + 1, bs);
    }
    StoreReg<uint32_t>(r, in.a[0], i, static_cast<uint32_t>(acc));
  });
  return false;
}

Status LowerDp(LowerCtx& c, bool four) {
  Ty at = c.TypeMod(0), bt = c.TypeMod(1);
  if ((at != Ty::kS32 && at != Ty::kU32) || (bt != Ty::kS32 && bt != Ty::kU32))
    return c.Unsupported();
  uint8_t flags = static_cast<uint8_t>((at == Ty::kS32 ? 1 : 0) | (bt == Ty::kS32 ? 2 : 0));
  Ty dt = (at == Ty::kS32 || bt == Ty::kS32) ? Ty::kS32 : Ty::kU32;
  PVGPU_TRY(c.NeedOps(4));
  Inst in;
  in.fn = ExecDp;
  in.flags = flags;
  in.n = four ? 4 : (c.Has(".hi") ? 3 : 2);
  for (int k = 1; k <= 3; ++k) {
    PVGPU_ASSIGN_OR_RETURN(in.a[k], c.Src(k, Ty::kB32));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, dt));
  c.Emit(in);
  return Status::Ok();
}
Status LowerDp4a(LowerCtx& c) { return LowerDp(c, true); }
Status LowerDp2a(LowerCtx& c) { return LowerDp(c, false); }

}  // namespace

Round RoundMod(const LowerCtx& c) {
  static const std::pair<const char*, Round> kModes[] = {
      {".rn", Round::kRn},   {".rz", Round::kRz},   {".rm", Round::kRm},
      {".rp", Round::kRp},   {".rni", Round::kRni}, {".rzi", Round::kRzi},
      {".rmi", Round::kRmi}, {".rpi", Round::kRpi}, {".rna", Round::kRna}};
  for (const auto& [name, r] : kModes)
    if (c.Has(name)) return r;
  return Round::kNone;
}

void RegisterArith(OpTable& t) {
  t.Add("add", LowerAdd);
  t.Add("sub", LowerSub);
  t.Add("addc", LowerAddc);
  t.Add("subc", LowerSubc);
  t.Add("madc", LowerMadc);
  t.Add("mul", LowerMul);
  t.Add("mad", LowerMad);
  t.Add("fma", LowerFma);
  t.Add("mul24", LowerMul24);
  t.Add("mad24", LowerMad24);
  t.Add("sad", LowerSad);
  t.Add("div", LowerDiv);
  t.Add("rem", LowerRem);
  t.Add("abs", LowerAbs);
  t.Add("neg", LowerNeg);
  t.Add("min", LowerMin);
  t.Add("max", LowerMax);
  t.Add("dp4a", LowerDp4a);
  t.Add("dp2a", LowerDp2a);
}

}  // namespace pvgpu::ptx
