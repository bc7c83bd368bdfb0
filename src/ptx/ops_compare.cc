// Comparisons and selects: setp (all integer/float/unordered ops and .and/.or/.xor forms),
// set, selp, slct.
#include <string>
#include <utility>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/half.h"

namespace pvgpu::ptx {
namespace {

enum CmpOp : int {
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLo,
  kLs,
  kHi,
  kHs,
  kEqu,
  kNeu,
  kLtu,
  kLeu,
  kGtu,
  kGeu,
  kNum,
  kNan,
};

int ParseCmp(const std::string& m) {
  static const char* kNames[] = {".eq",  ".ne",  ".lt",  ".le",  ".gt",  ".ge",
                                 ".lo",  ".ls",  ".hi",  ".hs",  ".equ", ".neu",
                                 ".ltu", ".leu", ".gtu", ".geu", ".num", ".nan"};
  for (int i = 0; i < 18; ++i)
    if (m == kNames[i]) return i;
  return -1;
}

// The six relations eq ne lt le gt ge (kRel from kEq to kGe), in T's own order.
template <int kRel, typename T>
inline bool Relation(T a, T b) {
  static_assert(kRel >= kEq && kRel <= kGe);
  if constexpr (kRel == kEq) return a == b;
  if constexpr (kRel == kNe) return a != b;
  if constexpr (kRel == kLt) return a < b;
  if constexpr (kRel == kLe) return a <= b;
  if constexpr (kRel == kGt) return a > b;
  if constexpr (kRel == kGe) return a >= b;
}

// Floats: a relation is false when either side is NaN (ne included), its unordered form
// (equ ... geu) true; num and nan test for NaN. Integers: lo ls hi hs are the unsigned lt le
// gt ge.
template <typename T, int kOp>
inline bool Compare(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool un = std::isnan(a) || std::isnan(b);
    if constexpr (kOp == kNe) return !un && a != b;
    if constexpr (kOp >= kEq && kOp <= kGe && kOp != kNe) return Relation<kOp>(a, b);
    if constexpr (kOp >= kEqu && kOp <= kGeu) return un || Relation<kOp - kEqu + kEq>(a, b);
    if constexpr (kOp == kNum) return !un;
    if constexpr (kOp == kNan) return un;
    if constexpr (kOp >= kLo && kOp <= kHs) return false;
  } else {
    using UT = std::make_unsigned_t<T>;
    if constexpr (kOp >= kEq && kOp <= kGe) return Relation<kOp>(a, b);
    if constexpr (kOp >= kLo && kOp <= kHs) {
      return Relation<kOp - kLo + kLt>(static_cast<UT>(a), static_cast<UT>(b));
    }
    if constexpr (kOp >= kEqu) return false;
  }
}

// Combines the comparison bits with the optional predicate c and writes p (and q).
// a[0] p, a[1] q (or kNoReg), a[2] a, a[3] b, a[4] c; flags: 0 none, 1 and, 2 or, 3 xor.
inline bool Finish(const Inst& in, Warp& w, uint32_t m, uint32_t bits) {
  uint32_t c = in.a[4] != kNoReg ? *RegPtr<uint32_t>(w.regs, in.a[4]) : 0;
  uint32_t nbits = ~bits;
  switch (in.flags) {
    case 1:
      bits &= c;
      nbits &= c;
      break;
    case 2:
      bits |= c;
      nbits |= c;
      break;
    case 3:
      bits ^= c;
      nbits ^= c;
      break;
    default:
      break;
  }
  uint32_t& p = *RegPtr<uint32_t>(w.regs, in.a[0]);
  p = (p & ~m) | (bits & m);
  if (in.a[1] != kNoReg) {
    uint32_t& q = *RegPtr<uint32_t>(w.regs, in.a[1]);
    q = (q & ~m) | (nbits & m);
  }
  return false;
}

template <typename T, int kOp>
bool ExecSetp(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecSetp<T, kOp>), NOp::kSetp, TyOf<T>(), TyOf<T>(), kOp);
  uint8_t* r = w.regs;
  uint32_t bits;
  if constexpr (sizeof(T) >= 4) {
    // Compare into 0/-1 words (vectorizes), then pack with movemask.
    const T* a = RegPtr<T>(r, in.a[2]);
    const T* b = RegPtr<T>(r, in.a[3]);
    alignas(16) int32_t v[32];
    for (int i = 0; i < 32; ++i) v[i] = -static_cast<int32_t>(Compare<T, kOp>(a[i], b[i]));
    bits = PackLaneMask(v);
  } else {
    bits = 0;
    for (int i = 0; i < 32; ++i)
      bits |= static_cast<uint32_t>(
                  Compare<T, kOp>(LoadReg<T>(r, in.a[2], i), LoadReg<T>(r, in.a[3], i)))
              << i;
  }
  return Finish(in, w, m, bits);
}

// Half-precision compares (f16, bf16 and the x2 forms, where p/q get the two halves).
template <bool kBf16, int kOp>
bool ExecSetpHalf(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  auto cvt = [](uint32_t h) {
    return kBf16 ? Bf16ToFloat(static_cast<uint16_t>(h)) : HalfToFloat(static_cast<uint16_t>(h));
  };
  uint32_t lo = 0, hi = 0;
  for (int i = 0; i < 32; ++i) {
    uint32_t a = LoadReg<uint32_t>(r, in.a[2], i), b = LoadReg<uint32_t>(r, in.a[3], i);
    lo |= static_cast<uint32_t>(Compare<float, kOp>(cvt(a & 0xFFFF), cvt(b & 0xFFFF))) << i;
    hi |= static_cast<uint32_t>(Compare<float, kOp>(cvt(a >> 16), cvt(b >> 16))) << i;
  }
  if (in.n == 2) {
    // x2: p = low half result, q = high half result (no combining form emitted by nvcc).
    uint32_t& p = *RegPtr<uint32_t>(r, in.a[0]);
    p = (p & ~m) | (lo & m);
    if (in.a[1] != kNoReg) {
      uint32_t& q = *RegPtr<uint32_t>(r, in.a[1]);
      q = (q & ~m) | (hi & m);
    }
    return false;
  }
  return Finish(in, w, m, lo);
}

// The executor `make` instantiates for comparison `op`.
template <typename Make>
ExecFn PickCmp(int op, Make make) {
  return Instantiate(op, std::make_integer_sequence<int, kNan + 1>{}, make);
}

template <typename T>
ExecFn PickSetp(int op) {
  return PickCmp(op, []<int K>() -> ExecFn { return &ExecSetp<T, K>; });
}

// Halves have no unsigned orders (lo, ls, hi, hs).
template <bool kBf16>
ExecFn PickSetpHalf(int op) {
  return PickCmp(op, []<int K>() -> ExecFn {
    if constexpr (K >= kLo && K <= kHs) {
      return nullptr;
    } else {
      return &ExecSetpHalf<kBf16, K>;
    }
  });
}

int CmpOfInst(const LowerCtx& c) {
  for (const auto& m : c.inst().mods) {
    int op = ParseCmp(m);
    if (op >= 0) return op;
  }
  return -1;
}

uint8_t BoolOp(const LowerCtx& c) {
  if (c.Has(".and")) return 1;
  if (c.Has(".or")) return 2;
  if (c.Has(".xor")) return 3;
  return 0;
}

ExecFn CompareFn(Ty t, int op) {
  if (t == Ty::kF16 || t == Ty::kF16x2) return PickSetpHalf<false>(op);
  if (t == Ty::kBF16 || t == Ty::kBF16x2) return PickSetpHalf<true>(op);
  if (IsFloat(t) && op >= kLo && op <= kHs) return nullptr;
  if (!IsFloat(t) && op >= kEqu) return nullptr;
  return WithNumType<ExecFn>(t, [&]<typename T>() { return PickSetp<T>(op); });
}

// Fills a[2..4] and flags of a compare; shared by setp and set.
Status LowerCompareSources(LowerCtx& c, Inst& in, Ty t, int first_src) {
  int op = CmpOfInst(c);
  in.fn = CompareFn(t, op);
  if (!in.fn) return c.Unsupported();
  in.flags = BoolOp(c);
  in.n = (t == Ty::kF16x2 || t == Ty::kBF16x2) ? 2 : 1;
  Ty st = IsHalf(t) ? Ty::kB32 : t;
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(first_src, st));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(first_src + 1, st));
  if (in.flags) {
    if (c.ops().size() != static_cast<size_t>(first_src + 3))
      return c.Err("missing predicate operand");
    PVGPU_ASSIGN_OR_RETURN(in.a[4], c.Src(first_src + 2, Ty::kPred));
  }
  return Status::Ok();
}

Status LowerSetp(LowerCtx& c) {
  Ty t = c.TypeMod();
  Inst in;
  PVGPU_TRY(LowerCompareSources(c, in, t, 1));
  PVGPU_TRY(c.DstMaybePair(in, Ty::kPred, Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

// set: compare into a temp predicate, then materialize 1.0f / 0xFFFFFFFF.
bool ExecPredToValue(const Inst& in, Warp& w, uint32_t m) {
  uint32_t p = *RegPtr<uint32_t>(w.regs, in.a[1]);
  const uint32_t one = static_cast<uint32_t>(in.aux);
  ForLanes(m, [&](int i) { StoreReg<uint32_t>(w.regs, in.a[0], i, ((p >> i) & 1) ? one : 0); });
  return false;
}

// set.cmp.dtype.stype d, a, b: d is 1.0 (float destinations) or all ones when the comparison
// holds, else 0. 16-bit destinations (f16, bf16, u16, s16) hold their own 1.0 or 0xFFFF.
Status LowerSet(LowerCtx& c) {
  Ty dt = c.TypeMod(0), st = c.TypeMod(1);
  const uint32_t size = TypeSize(dt);
  if (size != 4 && size != 2) return c.Unsupported();
  Inst cmp;
  PVGPU_TRY(LowerCompareSources(c, cmp, st, 1));
  cmp.a[0] = c.Temp('p');
  c.Emit(cmp);
  Inst in;
  in.fn = ExecPredToValue;
  in.a[1] = cmp.a[0];
  in.aux = dt == Ty::kF32    ? 0x3F800000u
           : dt == Ty::kF16  ? 0x3C00u
           : dt == Ty::kBF16 ? 0x3F80u
           : size == 2       ? 0xFFFFu
                             : 0xFFFFFFFFu;
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, dt));
  c.Emit(in);
  return Status::Ok();
}

template <typename T>
bool ExecSelp(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecSelp<T>), NOp::kSelp, TyOf<T>(), TyOf<T>());
  uint8_t* r = w.regs;
  uint32_t p = *RegPtr<uint32_t>(r, in.a[3]);
  ForLanes(m, [&](int i) {
    StoreReg<T>(r, in.a[0], i,
                ((p >> i) & 1) ? LoadReg<T>(r, in.a[1], i) : LoadReg<T>(r, in.a[2], i));
  });
  return false;
}

Status LowerSelp(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(4));
  Ty t = c.TypeMod();
  uint32_t size = TypeSize(t);
  if (size == 0 || size > 8) return c.Unsupported();
  Inst in;
  in.fn = size == 8 ? &ExecSelp<uint64_t> : &ExecSelp<uint32_t>;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(3, Ty::kPred));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

template <typename T, typename C>
bool ExecSlct(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  ForLanes(m, [&](int i) {
    C k = LoadReg<C>(r, in.a[3], i);
    StoreReg<T>(r, in.a[0], i, k >= C(0) ? LoadReg<T>(r, in.a[1], i) : LoadReg<T>(r, in.a[2], i));
  });
  return false;
}

Status LowerSlct(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(4));
  Ty t = c.TypeMod(0), ct = c.TypeMod(1);
  uint32_t size = TypeSize(t);
  if (size == 0 || size > 8 || (ct != Ty::kS32 && ct != Ty::kF32)) return c.Unsupported();
  Inst in;
  if (ct == Ty::kS32)
    in.fn = size == 8 ? &ExecSlct<uint64_t, int32_t> : &ExecSlct<uint32_t, int32_t>;
  else
    in.fn = size == 8 ? &ExecSlct<uint64_t, float> : &ExecSlct<uint32_t, float>;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(3, ct));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

}  // namespace

void RegisterCompare(OpTable& t) {
  t.Add("setp", LowerSetp);
  t.Add("set", LowerSet);
  t.Add("selp", LowerSelp);
  t.Add("slct", LowerSlct);
}

}  // namespace pvgpu::ptx
