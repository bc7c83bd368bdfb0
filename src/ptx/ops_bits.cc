// Bit manipulation: and or xor not cnot (including predicates), shl shr shf, popc clz bfind
// brev bfe bfi prmt lop3.
#include "ptx/exec_util.h"

namespace pvgpu::ptx {
namespace {

template <typename T>
struct And {
  static constexpr NOp kNative = NOp::kAnd;
  static T Apply(T a, T b) { return a & b; }
};
template <typename T>
struct Or {
  static constexpr NOp kNative = NOp::kOr;
  static T Apply(T a, T b) { return a | b; }
};
template <typename T>
struct Xor {
  static constexpr NOp kNative = NOp::kXor;
  static T Apply(T a, T b) { return a ^ b; }
};
template <typename T>
struct Not {
  static constexpr NOp kNative = NOp::kNot;
  static T Apply(T a) { return static_cast<T>(~a); }
};
template <typename T>
struct CNot {
  static T Apply(T a) { return a == 0 ? 1 : 0; }
};

// Predicate logic works on whole masks.
template <int kOp>
bool ExecPredLogic(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecPredLogic<kOp>), NOp::kPredLogic, Ty::kPred, Ty::kPred, kOp);
  uint32_t a = *RegPtr<uint32_t>(w.regs, in.a[1]);
  uint32_t b = in.a[2] != kNoReg ? *RegPtr<uint32_t>(w.regs, in.a[2]) : 0;
  uint32_t v = kOp == 0 ? (a & b) : kOp == 1 ? (a | b) : kOp == 2 ? (a ^ b) : ~a;
  uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
  d = (d & ~m) | (v & m);
  return false;
}

// and, or, xor: bitwise on integers, logical on predicates (kPredOp: ExecPredLogic's op).
template <int kPredOp, template <typename> class Op>
Status LowerLogic(LowerCtx& c) {
  Ty t = c.TypeMod();
  if (t == Ty::kPred) return LowerSimple(c, &ExecPredLogic<kPredOp>, t, t, 2);
  return LowerSimple(
      c, WithIntType<ExecFn>(t, []<typename T>() -> ExecFn { return &ExecBinary<T, T, Op<T>>; }), t,
      t, 2);
}
Status LowerNot(LowerCtx& c) {
  Ty t = c.TypeMod();
  if (t == Ty::kPred) return LowerSimple(c, &ExecPredLogic<3>, t, t, 1);
  return LowerSimple(
      c, WithIntType<ExecFn>(t, []<typename T>() -> ExecFn { return &ExecUnary<T, T, Not<T>>; }), t,
      t, 1);
}
Status LowerCNot(LowerCtx& c) {
  Ty t = c.TypeMod();
  return LowerSimple(
      c, WithIntType<ExecFn>(t, []<typename T>() -> ExecFn { return &ExecUnary<T, T, CNot<T>>; }),
      t, t, 1);
}

// Shifts: the amount is always u32; amounts past the width give 0 (or the sign fill).
template <typename T, bool kLeft>
bool ExecShift(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecShift<T, kLeft>), NOp::kShift, TyOf<T>(), TyOf<T>(), kLeft);
  uint8_t* r = w.regs;
  constexpr uint32_t kBits = sizeof(T) * 8;
  if constexpr (sizeof(T) >= 4) {
    if (m == kFullMask) {
      using UT = std::make_unsigned_t<T>;
      T* d = RegPtr<T>(r, in.a[0]);
      const T* a = RegPtr<T>(r, in.a[1]);
      const uint32_t* sh = RegPtr<uint32_t>(r, in.a[2]);
      for (int i = 0; i < 32; ++i) {
        uint32_t s = sh[i] < kBits ? sh[i] : kBits - 1;
        T v = kLeft ? static_cast<T>(static_cast<UT>(a[i]) << s) : static_cast<T>(a[i] >> s);
        // Past the width the result is 0 (or the sign fill, which the clamped shift gives).
        if (sh[i] >= kBits && (kLeft || !std::is_signed_v<T>)) v = 0;
        d[i] = v;
      }
      return false;
    }
  }
  ForLanes(m, [&](int i) {
    T a = LoadReg<T>(r, in.a[1], i);
    uint32_t s = LoadReg<uint32_t>(r, in.a[2], i);
    T v;
    if (kLeft) {
      v = s >= kBits ? T(0) : static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << s);
    } else if (std::is_signed_v<T>) {
      v = static_cast<T>(a >> (s >= kBits ? kBits - 1 : s));
    } else {
      v = s >= kBits ? T(0) : static_cast<T>(a >> s);
    }
    StoreReg<T>(r, in.a[0], i, v);
  });
  return false;
}

// Shift by an immediate: one count for the whole warp, so the loop vectorizes.
template <typename T, bool kLeft>
bool ExecShiftImm(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecShiftImm<T, kLeft>), NOp::kShiftImm, TyOf<T>(), TyOf<T>(), kLeft);
  using UT = std::make_unsigned_t<T>;
  const uint32_t s = static_cast<uint32_t>(in.imm);
  ForLanes(m, [&](int i) {
    T a = LoadReg<T>(w.regs, in.a[1], i);
    StoreReg<T>(w.regs, in.a[0], i,
                kLeft ? static_cast<T>(static_cast<UT>(a) << s) : static_cast<T>(a >> s));
  });
  return false;
}

Status LowerShift(LowerCtx& c, bool left) {
  PVGPU_TRY(c.NeedOps(3));
  Ty t = c.TypeMod();
  const ast::Operand& amount = c.ops()[2];
  if (amount.kind == ast::Operand::Kind::kInt && amount.value < TypeSize(t) * 8 &&
      TypeSize(t) >= 4 && !(!left && IsSigned(t) && false)) {
    Inst in;
    in.fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
      return left ? &ExecShiftImm<T, true> : &ExecShiftImm<T, false>;
    });
    in.imm = static_cast<int64_t>(amount.value);
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
    c.Emit(in);
    return Status::Ok();
  }
  ExecFn fn = WithIntType<ExecFn>(
      t, [&]<typename T>() -> ExecFn { return left ? &ExecShift<T, true> : &ExecShift<T, false>; });
  if (!fn) return c.Unsupported();
  Inst in;
  in.fn = fn;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}
Status LowerShl(LowerCtx& c) { return LowerShift(c, true); }
Status LowerShr(LowerCtx& c) { return LowerShift(c, false); }

// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of b:a.
template <bool kLeft, bool kWrap>
struct Shf {
  static uint32_t Apply(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t n = kWrap ? (c & 31) : (c > 32 ? 32 : c);
    uint64_t x = (static_cast<uint64_t>(b) << 32) | a;
    return kLeft ? static_cast<uint32_t>((x << n) >> 32) : static_cast<uint32_t>(x >> n);
  }
};
Status LowerShf(LowerCtx& c) {
  bool left = c.Has(".l"), wrap = c.Has(".wrap");
  ExecFn fn = left ? (wrap ? &ExecTernary<uint32_t, uint32_t, Shf<true, true>>
                           : &ExecTernary<uint32_t, uint32_t, Shf<true, false>>)
                   : (wrap ? &ExecTernary<uint32_t, uint32_t, Shf<false, true>>
                           : &ExecTernary<uint32_t, uint32_t, Shf<false, false>>);
  return LowerSimple(c, fn, Ty::kB32, Ty::kB32, 3);
}

template <typename T>
struct Popc {
  static uint32_t Apply(T a) {
    return static_cast<uint32_t>(__builtin_popcountll(static_cast<uint64_t>(a)));
  }
};
template <typename T>
struct Clz {
  static uint32_t Apply(T a) {
    constexpr int kBits = sizeof(T) * 8;
    return a == 0 ? kBits
                  : static_cast<uint32_t>(__builtin_clzll(static_cast<uint64_t>(a)) - (64 - kBits));
  }
};
template <typename T>
struct Brev {
  static T Apply(T a) {
    T r = 0;
    for (size_t i = 0; i < sizeof(T) * 8; ++i)
      r |= static_cast<T>(((a >> i) & 1)) << (sizeof(T) * 8 - 1 - i);
    return r;
  }
};
// bfind: position of the most significant non-sign bit; 0xFFFFFFFF when none.
template <typename T, bool kShiftAmt>
struct Bfind {
  static uint32_t Apply(T a) {
    using UT = std::make_unsigned_t<T>;
    UT u = static_cast<UT>(a);
    if (std::is_signed_v<T> && a < 0) u = static_cast<UT>(~u);
    if (u == 0) return 0xFFFFFFFFu;
    uint32_t pos = 63 - static_cast<uint32_t>(__builtin_clzll(static_cast<uint64_t>(u)));
    return kShiftAmt ? static_cast<uint32_t>(sizeof(T) * 8 - 1) - pos : pos;
  }
};

Status LowerCount(LowerCtx& c, int which) {
  Ty t = c.TypeMod();
  bool sa = c.Has(".shiftamt");
  ExecFn fn = WithIntType<ExecFn>(t, [&]<typename T>() -> ExecFn {
    if constexpr (sizeof(T) < 4)
      return nullptr;
    else {
      if (which == 0) return &ExecUnary<uint32_t, T, Popc<T>>;
      if (which == 1) return &ExecUnary<uint32_t, T, Clz<T>>;
      return sa ? &ExecUnary<uint32_t, T, Bfind<T, true>>
                : &ExecUnary<uint32_t, T, Bfind<T, false>>;
    }
  });
  return LowerSimple(c, fn, Ty::kU32, t, 1);
}
Status LowerPopc(LowerCtx& c) { return LowerCount(c, 0); }
Status LowerClz(LowerCtx& c) { return LowerCount(c, 1); }
Status LowerBfind(LowerCtx& c) { return LowerCount(c, 2); }
Status LowerBrev(LowerCtx& c) {
  Ty t = c.TypeMod();
  return LowerSimple(c,
                     WithIntType<ExecFn>(t,
                                         []<typename T>() -> ExecFn {
                                           return &ExecUnary<T, T, Brev<std::make_unsigned_t<T>>>;
                                         }),
                     t, t, 1);
}

// bfe d, a, pos, len (pos/len u32, only the low 8 bits count).
template <typename T>
bool ExecBfe(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  constexpr uint32_t kBits = sizeof(T) * 8;
  using UT = std::make_unsigned_t<T>;
  ForLanes(m, [&](int i) {
    UT a = static_cast<UT>(LoadReg<T>(r, in.a[1], i));
    uint32_t pos = LoadReg<uint32_t>(r, in.a[2], i) & 0xFF,
             len = LoadReg<uint32_t>(r, in.a[3], i) & 0xFF;
    bool sbit;
    if (std::is_signed_v<T>) {
      uint32_t top = pos + len - 1;
      sbit = len == 0 ? false : ((a >> (top >= kBits ? kBits - 1 : top)) & 1);
    } else {
      sbit = false;
    }
    UT v = 0;
    for (uint32_t k = 0; k < kBits; ++k) {
      bool bit = (k < len && pos + k < kBits) ? ((a >> (pos + k)) & 1) : sbit;
      v |= static_cast<UT>(bit) << k;
    }
    StoreReg<T>(r, in.a[0], i, static_cast<T>(v));
  });
  return false;
}
Status LowerBfe(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(4));
  Ty t = c.TypeMod();
  ExecFn fn = WithIntType<ExecFn>(t, []<typename T>() -> ExecFn {
    if constexpr (sizeof(T) >= 4) return &ExecBfe<T>;
    return nullptr;
  });
  if (!fn) return c.Unsupported();
  Inst in;
  in.fn = fn;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(3, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

// bfi d, a (insert), b (base), pos, len.
template <typename T>
bool ExecBfi(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  constexpr uint32_t kBits = sizeof(T) * 8;
  ForLanes(m, [&](int i) {
    T a = LoadReg<T>(r, in.a[1], i), b = LoadReg<T>(r, in.a[2], i);
    uint32_t pos = LoadReg<uint32_t>(r, in.a[3], i) & 0xFF,
             len = LoadReg<uint32_t>(r, in.a[4], i) & 0xFF;
    T v = b;
    for (uint32_t k = 0; k < len && pos + k < kBits; ++k) {
      T bit = (a >> k) & 1;
      v = static_cast<T>((v & ~(T(1) << (pos + k))) | (bit << (pos + k)));
    }
    StoreReg<T>(r, in.a[0], i, v);
  });
  return false;
}
Status LowerBfi(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(5));
  Ty t = c.TypeMod();
  ExecFn fn = t == Ty::kB32 ? &ExecBfi<uint32_t> : t == Ty::kB64 ? &ExecBfi<uint64_t> : nullptr;
  if (!fn) return c.Unsupported();
  Inst in;
  in.fn = fn;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(3, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[4], c.Src(4, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

// prmt.b32{.mode} d, a, b, c. aux: 0 default, 1 f4e, 2 b4e, 3 rc8, 4 ecl, 5 ecr, 6 rc16.
uint32_t Prmt(uint32_t a, uint32_t b, uint32_t c, int mode) {
  uint64_t x = (static_cast<uint64_t>(b) << 32) | a;
  auto byte = [&](uint32_t k) { return static_cast<uint32_t>((x >> (8 * (k & 7))) & 0xFF); };
  uint32_t out = 0;
  uint32_t sel[4];
  switch (mode) {
    case 0:
      for (int k = 0; k < 4; ++k) {
        uint32_t s = (c >> (4 * k)) & 0xF;
        uint32_t v = byte(s & 7);
        if (s & 8) v = (v & 0x80) ? 0xFF : 0;
        out |= v << (8 * k);
      }
      return out;
    case 1: {
      uint32_t n = c & 3;
      for (int k = 0; k < 4; ++k) sel[k] = n + k;
      break;
    }
    case 2: {
      uint32_t n = c & 3;
      for (int k = 0; k < 4; ++k) sel[k] = (n - k) & 7;
      break;
    }
    case 3: {
      uint32_t n = c & 3;
      for (int k = 0; k < 4; ++k) sel[k] = n;
      break;
    }
    case 4: {
      uint32_t n = c & 3;
      for (uint32_t k = 0; k < 4; ++k) sel[k] = k < n ? n : k;
      break;
    }
    case 5: {
      uint32_t n = c & 3;
      for (uint32_t k = 0; k < 4; ++k) sel[k] = k > n ? n : k;
      break;
    }
    default: {
      uint32_t n = (c & 1) * 2;
      sel[0] = n;
      sel[1] = n + 1;
      sel[2] = n;
      sel[3] = n + 1;
      break;
    }
  }
  for (int k = 0; k < 4; ++k) out |= byte(sel[k]) << (8 * k);
  return out;
}
template <int kMode>
struct PrmtOp {
  static uint32_t Apply(uint32_t a, uint32_t b, uint32_t c) { return Prmt(a, b, c, kMode); }
};
Status LowerPrmt(LowerCtx& c) {
  static const char* kModes[] = {"", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"};
  int mode = 0;
  for (int k = 1; k < 7; ++k)
    if (c.Has(kModes[k])) mode = k;
  ExecFn fns[] = {
      &ExecTernary<uint32_t, uint32_t, PrmtOp<0>>, &ExecTernary<uint32_t, uint32_t, PrmtOp<1>>,
      &ExecTernary<uint32_t, uint32_t, PrmtOp<2>>, &ExecTernary<uint32_t, uint32_t, PrmtOp<3>>,
      &ExecTernary<uint32_t, uint32_t, PrmtOp<4>>, &ExecTernary<uint32_t, uint32_t, PrmtOp<5>>,
      &ExecTernary<uint32_t, uint32_t, PrmtOp<6>>};
  return LowerSimple(c, fns[mode], Ty::kB32, Ty::kB32, 3);
}

// lop3.b32 d, a, b, c, immLut: bitwise truth table lookup.
bool ExecLop3(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const uint32_t lut = static_cast<uint32_t>(in.aux);
  ForLanes(m, [&](int i) {
    uint32_t a = LoadReg<uint32_t>(r, in.a[1], i), b = LoadReg<uint32_t>(r, in.a[2], i),
             c = LoadReg<uint32_t>(r, in.a[3], i);
    uint32_t v = 0;
    for (int k = 0; k < 8; ++k) {
      if (!((lut >> k) & 1)) continue;
      uint32_t ta = (k & 4) ? a : ~a, tb = (k & 2) ? b : ~b, tc = (k & 1) ? c : ~c;
      v |= ta & tb & tc;
    }
    StoreReg<uint32_t>(r, in.a[0], i, v);
  });
  return false;
}
Status LowerLop3(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(5));
  const ast::Operand& lut = c.ops()[4];
  if (lut.kind != ast::Operand::Kind::kInt) return c.ErrAt(lut, "lop3 needs an immediate table");
  Inst in;
  in.fn = ExecLop3;
  in.aux = lut.value & 0xFF;
  for (int k = 1; k <= 3; ++k) {
    PVGPU_ASSIGN_OR_RETURN(in.a[k], c.Src(k, Ty::kB32));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

}  // namespace

void RegisterBits(OpTable& t) {
  t.Add("and", LowerLogic<0, And>);
  t.Add("or", LowerLogic<1, Or>);
  t.Add("xor", LowerLogic<2, Xor>);
  t.Add("not", LowerNot);
  t.Add("cnot", LowerCNot);
  t.Add("shl", LowerShl);
  t.Add("shr", LowerShr);
  t.Add("shf", LowerShf);
  t.Add("popc", LowerPopc);
  t.Add("clz", LowerClz);
  t.Add("bfind", LowerBfind);
  t.Add("brev", LowerBrev);
  t.Add("bfe", LowerBfe);
  t.Add("bfi", LowerBfi);
  t.Add("prmt", LowerPrmt);
  t.Add("lop3", LowerLop3);
}

}  // namespace pvgpu::ptx
