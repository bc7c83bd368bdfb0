// atom and red on global, shared and generic memory. Updates use std::atomic_ref so that
// blocks running on different workers see truly atomic read-modify-writes.
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

Status LowerAtomRed(LowerCtx& c, bool is_red) {
  static const char* kNames[] = {".add", ".min",  ".max", ".inc", ".dec",
                                 ".cas", ".exch", ".and", ".or",  ".xor"};
  int op = -1;
  for (int k = 0; k < 10; ++k)
    if (c.Has(kNames[k])) op = k;
  Ty t = c.TypeMod();
  if (op < 0 || t == Ty::kNone || c.Has(".v2") || c.Has(".v4")) return c.Unsupported();
  MemSpace space = c.Has(".global")                            ? MemSpace::kGlobal
                   : c.Has(".shared") || c.Has(".shared::cta") ? MemSpace::kShared
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
