// atom and red on global, shared and generic memory, including the half-precision adds and the
// sm_90 vector forms. Updates use std::atomic_ref so that blocks running on different workers
// see truly atomic read-modify-writes.
#include <atomic>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/memory.h"

namespace pvgpu::ptx {
namespace {

enum AtomOp : int { kAdd, kMin, kMax, kInc, kDec, kCas, kExch, kAnd, kOr, kXor };

template <typename T, int kOp>
T Apply(std::atomic_ref<T> ref, T b, T c) {
  if constexpr (kOp == kAdd) {
    return ref.fetch_add(b, std::memory_order_relaxed);
  } else if constexpr (kOp == kExch) {
    return ref.exchange(b, std::memory_order_relaxed);
  } else if constexpr (kOp == kCas) {
    T expected = b;
    ref.compare_exchange_strong(expected, c, std::memory_order_relaxed);
    return expected;
  } else if constexpr (std::is_integral_v<T> && kOp == kAnd) {
    return ref.fetch_and(b, std::memory_order_relaxed);
  } else if constexpr (std::is_integral_v<T> && kOp == kOr) {
    return ref.fetch_or(b, std::memory_order_relaxed);
  } else if constexpr (std::is_integral_v<T> && kOp == kXor) {
    return ref.fetch_xor(b, std::memory_order_relaxed);
  } else {
    T old = ref.load(std::memory_order_relaxed);
    while (true) {
      T next;
      if constexpr (kOp == kMin)
        next = b < old ? b : old;
      else if constexpr (kOp == kMax)
        next = b > old ? b : old;
      else if constexpr (kOp == kInc)
        next = old >= b ? T(0) : T(old + 1);
      else
        next = (old == 0 || old > b) ? b : T(old - 1);
      if (ref.compare_exchange_weak(old, next, std::memory_order_relaxed)) return old;
    }
  }
}

// a[0] dst (kNoReg for red), a[1] b, a[2] c (cas), a[4] base; flags bit0: 32-bit base.
template <MemSpace S, typename T, int kOp>
bool ExecAtom(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, sizeof(T), true);
    if (!p || (addr & (sizeof(T) - 1))) {
      AddressFault(w, in, i, addr, sizeof(T), S, p != nullptr);
      return true;
    }
    T b = LoadReg<T>(r, in.a[1], i);
    T c = kOp == kCas ? LoadReg<T>(r, in.a[2], i) : T(0);
    T old = Apply<T, kOp>(std::atomic_ref<T>(*reinterpret_cast<T*>(p)), b, c);
    if (in.a[0] != kNoReg) StoreReg<T>(r, in.a[0], i, old);
  }
  return false;
}

// Bitwise ops and inc/dec exist for integers only.
template <MemSpace S, typename T>
ExecFn PickOp(int op) {
  return Instantiate(op, std::make_integer_sequence<int, kXor + 1>{}, []<int kOp>() -> ExecFn {
    if constexpr (std::is_integral_v<T> || kOp == kAdd || kOp == kMin || kOp == kMax ||
                  kOp == kExch || kOp == kCas) {
      return &ExecAtom<S, T, kOp>;
    } else {
      return nullptr;
    }
  });
}

template <MemSpace S>
ExecFn PickType(Ty t, int op) {
  switch (t) {
    case Ty::kB32:
    case Ty::kU32:
      return PickOp<S, uint32_t>(op);
    case Ty::kS32:
      return PickOp<S, int32_t>(op);
    case Ty::kB64:
    case Ty::kU64:
      return PickOp<S, uint64_t>(op);
    case Ty::kS64:
      return PickOp<S, int64_t>(op);
    case Ty::kF32:
      return (op == kAdd || op == kExch || op == kMin || op == kMax) ? PickOp<S, float>(op)
                                                                     : nullptr;
    case Ty::kF64:
      return (op == kAdd || op == kExch) ? PickOp<S, double>(op) : nullptr;
    default:
      return nullptr;
  }
}

// f16 / bf16 (kX2: the packed pair in one 32-bit word) add, min or max (kOp 'a', 'n', 'x'),
// a compare-and-swap loop on the element. a[0] dst (kNoReg for red), a[1] b, a[4] base.
template <MemSpace S, bool kBf, bool kX2, char kOp>
bool ExecAtomHalf(const Inst& in, Warp& w, uint32_t m) {
  using U = std::conditional_t<kX2, uint32_t, uint16_t>;
  uint8_t* r = w.regs;
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, sizeof(U), true);
    if (!p || (addr & (sizeof(U) - 1))) {
      AddressFault(w, in, i, addr, sizeof(U), S, p != nullptr);
      return true;
    }
    const uint32_t b = LoadReg<uint32_t>(r, in.a[1], i);
    std::atomic_ref<U> ref(*reinterpret_cast<U*>(p));
    U old = ref.load(std::memory_order_relaxed);
    while (true) {
      uint32_t next = HalfBinary(kOp, kBf, old & 0xFFFF, b & 0xFFFF);
      if constexpr (kX2) next |= HalfBinary(kOp, kBf, old >> 16, b >> 16) << 16;
      if (ref.compare_exchange_weak(old, static_cast<U>(next), std::memory_order_relaxed)) break;
    }
    if (in.a[0] != kNoReg) StoreReg<uint32_t>(r, in.a[0], i, old);
  }
  return false;
}

// Bounds and alignment of a whole vector atomic (n bytes) before its elements update.
template <MemSpace S>
bool ExecAtomVectorCheck(const Inst& in, Warp& w, uint32_t m) {
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, in.n, true);
    if (!p || (addr & (in.n - 1))) {
      AddressFault(w, in, i, addr, in.n, S, p != nullptr);
      return true;
    }
  }
  return false;
}

template <MemSpace S>
ExecFn PickHalf(Ty t, char op) {
  auto pick = [&]<bool kBf, bool kX2>() -> ExecFn {
    return op == 'a'   ? &ExecAtomHalf<S, kBf, kX2, 'a'>
           : op == 'n' ? &ExecAtomHalf<S, kBf, kX2, 'n'>
                       : &ExecAtomHalf<S, kBf, kX2, 'x'>;
  };
  switch (t) {
    case Ty::kF16:
      return pick.template operator()<false, false>();
    case Ty::kBF16:
      return pick.template operator()<true, false>();
    case Ty::kF16x2:
      return pick.template operator()<false, true>();
    default:
      return pick.template operator()<true, true>();
  }
}

// atom/red.add.noftz.{f16,bf16,f16x2,bf16x2} and the vector forms: .v2/.v4 .f32 add,
// .v2/.v4/.v8 .f16/.bf16 and .v2/.v4 .f16x2/.bf16x2 add, min, max (global). Each element is its
// own atomic operation, as the ISA guarantees atomicity per element only, after one check of
// the whole vector's bounds and alignment.
Status LowerAtomHalfOrVector(LowerCtx& c, bool is_red) {
  Ty t = c.TypeMod();
  const int vec = c.Has(".v2") ? 2 : c.Has(".v4") ? 4 : c.Has(".v8") ? 8 : 1;
  const char op = c.Has(".add") ? 'a' : c.Has(".min") ? 'n' : c.Has(".max") ? 'x' : 0;
  const bool half = IsHalf(t);
  const bool scalar16 = t == Ty::kF16 || t == Ty::kBF16;
  if (op == 0 || (half && !c.Has(".noftz")) || (!half && t != Ty::kF32) ||
      (vec == 1 && op != 'a') || (t == Ty::kF32 && (op != 'a' || vec == 8)) ||
      (vec == 8 && !scalar16))
    return c.Unsupported();
  MemSpace space = c.Has(".global")                            ? MemSpace::kGlobal
                   : c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster") ? MemSpace::kShared
                                                               : MemSpace::kGeneric;
  if (vec > 1 && space == MemSpace::kShared) return c.Unsupported("vector atomics on shared");
  const size_t first = is_red ? 0 : 1;
  PVGPU_TRY(c.NeedOps(first + 2 + (c.Has(".L2::cache_hint") ? 1 : 0)));
  using K = ast::Operand::Kind;
  auto elems = [&](const ast::Operand& o) -> StatusOr<std::vector<ast::Operand>> {
    if (vec == 1) return std::vector<ast::Operand>{o};
    if (o.kind != K::kVector || o.elems.size() != static_cast<size_t>(vec))
      return c.ErrAt(o, "expected a vector of " + std::to_string(vec) + " registers");
    return o.elems;
  };
  PVGPU_ASSIGN_OR_RETURN(std::vector<ast::Operand> src, elems(c.ops()[first + 1]));
  std::vector<ast::Operand> dst;
  if (!is_red) {
    PVGPU_ASSIGN_OR_RETURN(dst, elems(c.ops()[0]));
  }
  EmitReleaseFence(c);
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(c.ops()[first], space));
  Inst in;
  const uint32_t esize = scalar16 ? 2 : 4;
  const Ty reg_ty = t == Ty::kF32 ? Ty::kF32 : scalar16 ? Ty::kB16 : Ty::kB32;
  switch (a.space) {
    case MemSpace::kGlobal:
      in.fn =
          half ? PickHalf<MemSpace::kGlobal>(t, op) : PickType<MemSpace::kGlobal>(Ty::kF32, kAdd);
      break;
    case MemSpace::kShared:
      in.fn =
          half ? PickHalf<MemSpace::kShared>(t, op) : PickType<MemSpace::kShared>(Ty::kF32, kAdd);
      break;
    case MemSpace::kGeneric:
      in.fn =
          half ? PickHalf<MemSpace::kGeneric>(t, op) : PickType<MemSpace::kGeneric>(Ty::kF32, kAdd);
      break;
    default:
      return c.Unsupported("atomics on this state space");
  }
  in.a[4] = a.base;
  in.flags = a.base32 ? 1 : 0;
  in.imm = a.imm;
  if (vec > 1) {
    Inst check = in;
    check.fn = a.space == MemSpace::kGlobal ? &ExecAtomVectorCheck<MemSpace::kGlobal>
                                            : &ExecAtomVectorCheck<MemSpace::kGeneric>;
    check.n = static_cast<uint16_t>(esize * vec);
    c.Emit(check);
  }
  std::vector<Inst> parts;
  for (int k = 0; k < vec; ++k) {
    Inst e = in;
    e.imm = a.imm + int64_t{esize} * k;
    PVGPU_ASSIGN_OR_RETURN(e.a[1], c.SrcOp(src[k], reg_ty));
    parts.push_back(e);
  }
  for (int k = 0; k < vec; ++k) {
    if (!is_red) {
      PVGPU_ASSIGN_OR_RETURN(parts[k].a[0], c.DstOp(dst[k], reg_ty));
      if (k == 0) c.MarkPoll();
    }
    c.Emit(parts[k]);
  }
  EmitAcquireFence(c);
  return Status::Ok();
}

#if defined(__x86_64__)
using U128 = unsigned __int128;

// One 16-byte compare-and-swap: cmpxchg16b (present on every x86-64 CPU this runs on), written
// out because compilers otherwise call libatomic for it (clang does even with -mcx16). RDX:RAX
// ends as the old value whether or not the swap happened. p is 16-byte aligned (checked).
U128 Cas128(U128* p, U128 expected, U128 desired) {
  uint64_t lo = static_cast<uint64_t>(expected), hi = static_cast<uint64_t>(expected >> 64);
  const uint64_t desired_lo = static_cast<uint64_t>(desired);
  const uint64_t desired_hi = static_cast<uint64_t>(desired >> 64);
  asm volatile("lock cmpxchg16b %2"
               : "+a"(lo), "+d"(hi), "+m"(*p)
               : "b"(desired_lo), "c"(desired_hi)
               : "memory", "cc");
  return (U128{hi} << 64) | lo;
}

U128 Load128(uint8_t* r, uint32_t off, int lane) {
  return (U128{LoadReg<uint64_t>(r, off + 256, lane)} << 64) | LoadReg<uint64_t>(r, off, lane);
}

// atom.cas.b128 d, [a], b, c and atom.exch.b128 d, [a], b on .b128 registers (their halves at
// off and off + 256, see ClassOf). a[0] d, a[1] b, a[2] c, a[4] base.
template <MemSpace S, bool kCas>
bool ExecAtom128(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  for (uint32_t t = m; t; t &= t - 1) {
    int i = __builtin_ctz(t);
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, 16, true);
    if (!p || (addr & 15)) {
      AddressFault(w, in, i, addr, 16, S, p != nullptr);
      return true;
    }
    U128* q = reinterpret_cast<U128*>(p);
    const U128 b = Load128(r, in.a[1], i);
    U128 old;
    if constexpr (kCas) {
      old = Cas128(q, b, Load128(r, in.a[2], i));
    } else {
      old = Cas128(q, 0, 0);  // an atomic read
      for (U128 seen; (seen = Cas128(q, old, b)) != old;) old = seen;
    }
    StoreReg<uint64_t>(r, in.a[0], i, static_cast<uint64_t>(old));
    StoreReg<uint64_t>(r, in.a[0] + 256, i, static_cast<uint64_t>(old >> 64));
  }
  return false;
}
#endif

// atom{.sem}{.scope}{.space}.{cas,exch}.b128 (sm_90).
Status LowerAtom128(LowerCtx& c, bool is_red) {
#if defined(__x86_64__)
  const bool cas = c.Has(".cas");
  if (is_red || (!cas && !c.Has(".exch"))) return c.Unsupported();
  MemSpace space = c.Has(".global")                            ? MemSpace::kGlobal
                   : c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster") ? MemSpace::kShared
                                                               : MemSpace::kGeneric;
  PVGPU_TRY(c.NeedOps(cas ? 4 : 3));
  EmitReleaseFence(c);
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(c.ops()[1], space));
  Inst in;
  switch (a.space) {
    case MemSpace::kGlobal:
      in.fn = cas ? &ExecAtom128<MemSpace::kGlobal, true> : &ExecAtom128<MemSpace::kGlobal, false>;
      break;
    case MemSpace::kShared:
      in.fn = cas ? &ExecAtom128<MemSpace::kShared, true> : &ExecAtom128<MemSpace::kShared, false>;
      break;
    case MemSpace::kGeneric:
      in.fn =
          cas ? &ExecAtom128<MemSpace::kGeneric, true> : &ExecAtom128<MemSpace::kGeneric, false>;
      break;
    default:
      return c.Unsupported("atomics on this state space");
  }
  in.a[4] = a.base;
  in.flags = a.base32 ? 1 : 0;
  in.imm = a.imm;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(2, Ty::kB128));
  if (cas) {
    PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(3, Ty::kB128));
  }
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB128));
  c.MarkPoll();
  c.Emit(in);
  EmitAcquireFence(c);
  return Status::Ok();
#else
  (void)is_red;
  return c.Unsupported("128-bit atomics on this host");
#endif
}

Status LowerAtomRed(LowerCtx& c, bool is_red) {
  if (IsHalf(c.TypeMod()) || c.Has(".v2") || c.Has(".v4") || c.Has(".v8"))
    return LowerAtomHalfOrVector(c, is_red);
  if (c.TypeMod() == Ty::kB128) return LowerAtom128(c, is_red);
  static const char* kNames[] = {".add", ".min",  ".max", ".inc", ".dec",
                                 ".cas", ".exch", ".and", ".or",  ".xor"};
  int op = -1;
  for (int k = 0; k < 10; ++k)
    if (c.Has(kNames[k])) op = k;
  Ty t = c.TypeMod();
  if (op < 0 || t == Ty::kNone || c.Has(".v2") || c.Has(".v4")) return c.Unsupported();
  MemSpace space = c.Has(".global")                            ? MemSpace::kGlobal
                   : c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster") ? MemSpace::kShared
                                                               : MemSpace::kGeneric;
  size_t first = is_red ? 0 : 1;
  size_t nsrc = op == kCas ? 2 : 1;
  PVGPU_TRY(c.NeedOps(first + 1 + nsrc));
  EmitReleaseFence(c);
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(c.ops()[first], space));
  Inst in;
  switch (a.space) {
    case MemSpace::kGlobal:
      in.fn = PickType<MemSpace::kGlobal>(t, op);
      break;
    case MemSpace::kShared:
      in.fn = PickType<MemSpace::kShared>(t, op);
      break;
    case MemSpace::kGeneric:
      in.fn = PickType<MemSpace::kGeneric>(t, op);
      break;
    default:
      return c.Unsupported("atomics on this state space");
  }
  if (!in.fn) return c.Unsupported();
  in.a[4] = a.base;
  in.flags = a.base32 ? 1 : 0;
  in.imm = a.imm;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(static_cast<int>(first + 1), t));
  if (op == kCas) {
    PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(static_cast<int>(first + 2), t));
  }
  if (!is_red) {
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
    c.MarkPoll();  // a loop around an atomic (a lock, a counter) may wait for other threads
  }
  c.Emit(in);
  EmitAcquireFence(c);
  return Status::Ok();
}

Status LowerAtom(LowerCtx& c) { return LowerAtomRed(c, false); }
Status LowerRed(LowerCtx& c) { return LowerAtomRed(c, true); }

}  // namespace

void RegisterAtomic(OpTable& t) {
  t.Add("atom", LowerAtom);
  t.Add("red", LowerRed);
}

}  // namespace pvgpu::ptx
