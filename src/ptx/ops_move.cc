// Register moves (including vector pack/unpack), address conversion (cvta, isspacep) and
// the instructions that only order memory (fences, prefetches).
#include <atomic>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/memory.h"

namespace pvgpu::ptx {
namespace {

template <typename T>
struct Identity {
  static constexpr NOp kNative = NOp::kMov;
  static T Apply(T a) { return a; }
};

// mov.b64 d, {a, b} (pack) and mov.b64 {a, b}, d (unpack). n: element bytes, flags: count.
bool ExecPack(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const unsigned eb = in.n, cnt = in.flags;
  ForLanes(m, [&](int i) {
    uint64_t v = 0;
    for (unsigned k = 0; k < cnt; ++k) {
      uint64_t e =
          eb == 8 ? LoadReg<uint64_t>(r, in.a[1 + k], i) : LoadReg<uint32_t>(r, in.a[1 + k], i);
      if (eb < 8) e &= (uint64_t{1} << (8 * eb)) - 1;
      v |= e << (8 * eb * k);
    }
    if (eb * cnt == 8)
      StoreReg<uint64_t>(r, in.a[0], i, v);
    else
      StoreReg<uint32_t>(r, in.a[0], i, static_cast<uint32_t>(v));
  });
  return false;
}
bool ExecUnpack(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const unsigned eb = in.n, cnt = in.flags;
  ForLanes(m, [&](int i) {
    uint64_t v =
        eb * cnt == 8 ? LoadReg<uint64_t>(r, in.a[0], i) : LoadReg<uint32_t>(r, in.a[0], i);
    for (unsigned k = 0; k < cnt; ++k) {
      if (in.a[1 + k] == kNoReg) continue;
      uint64_t e = eb == 8 ? v : (v >> (8 * eb * k)) & ((uint64_t{1} << (8 * eb)) - 1);
      if (eb == 8)
        StoreReg<uint64_t>(r, in.a[1 + k], i, e);
      else
        StoreReg<uint32_t>(r, in.a[1 + k], i, static_cast<uint32_t>(e));
    }
  });
  return false;
}
bool ExecMovPred(const Inst& in, Warp& w, uint32_t m) {
  uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
  d = (d & ~m) | (*RegPtr<uint32_t>(w.regs, in.a[1]) & m);
  return false;
}

Ty ElemType(uint32_t bytes) {
  return bytes == 8 ? Ty::kB64 : bytes == 4 ? Ty::kB32 : bytes == 2 ? Ty::kB16 : Ty::kB8;
}

// mov.b128 d, s / d, {lo, hi} / {lo, hi}, s: two 64-bit moves of the halves (see ClassOf).
Status LowerMov128(LowerCtx& c, const ast::Operand& d, const ast::Operand& s) {
  using K = ast::Operand::Kind;
  auto check_pair = [&](const ast::Operand& o) -> Status {
    if (o.kind == K::kVector && o.elems.size() != 2)
      return c.ErrAt(o, "a .b128 value is a pair of .b64 registers");
    return Status::Ok();
  };
  PVGPU_TRY(check_pair(s));
  PVGPU_TRY(check_pair(d));
  uint32_t src[2];
  if (s.kind == K::kVector) {
    for (int k = 0; k < 2; ++k) {
      PVGPU_ASSIGN_OR_RETURN(src[k], c.SrcOp(s.elems[k], Ty::kB64));
    }
  } else {
    PVGPU_ASSIGN_OR_RETURN(src[0], c.SrcOp(s, Ty::kB128));
    src[1] = src[0] + 256;
  }
  // The high half is read before either is written: d and s may overlap.
  uint32_t tmp = c.Temp('d');
  Inst save;
  save.fn = &ExecUnary<uint64_t, uint64_t, Identity<uint64_t>>;
  save.a[0] = tmp;
  save.a[1] = src[1];
  c.Emit(save);
  uint32_t whole = kNoReg;
  if (d.kind != K::kVector) {
    PVGPU_ASSIGN_OR_RETURN(whole, c.DstOp(d, Ty::kB128));
  }
  for (int k = 0; k < 2; ++k) {
    Inst in;
    in.fn = &ExecUnary<uint64_t, uint64_t, Identity<uint64_t>>;
    in.a[1] = k == 0 ? src[0] : tmp;
    if (d.kind != K::kVector) {
      in.a[0] = whole + 256 * k;
    } else if (d.elems[k].kind == K::kSink) {
      continue;
    } else {
      PVGPU_ASSIGN_OR_RETURN(in.a[0], c.DstOp(d.elems[k], Ty::kB64));
    }
    c.Emit(in);
  }
  return Status::Ok();
}

Status LowerMov(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(2));
  Ty t = c.TypeMod();
  if (t == Ty::kPred) {
    Inst in;
    in.fn = ExecMovPred;
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
    c.Emit(in);
    return Status::Ok();
  }
  const auto& d = c.ops()[0];
  const auto& s = c.ops()[1];
  using K = ast::Operand::Kind;
  if (t == Ty::kB128) return LowerMov128(c, d, s);
  uint32_t bytes = TypeSize(t);
  if (bytes == 0 || bytes > 8) return c.Unsupported();
  if (s.kind == K::kVector || d.kind == K::kVector) {
    const auto& vec = s.kind == K::kVector ? s : d;
    size_t cnt = vec.elems.size();
    if (cnt < 2 || cnt > 4 || bytes % cnt) return c.ErrAt(vec, "bad vector for mov");
    uint32_t eb = bytes / static_cast<uint32_t>(cnt);
    Inst in;
    in.n = static_cast<uint16_t>(eb);
    in.flags = static_cast<uint8_t>(cnt);
    if (s.kind == K::kVector) {
      in.fn = ExecPack;
      for (size_t k = 0; k < cnt; ++k) {
        PVGPU_ASSIGN_OR_RETURN(in.a[1 + k], c.SrcOp(vec.elems[k], ElemType(eb)));
      }
      PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
    } else {
      in.fn = ExecUnpack;
      PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Src(1, t));
      for (size_t k = 0; k < cnt; ++k) {
        if (vec.elems[k].kind == K::kSink) continue;
        PVGPU_ASSIGN_OR_RETURN(in.a[1 + k], c.DstOp(vec.elems[k], ElemType(eb)));
      }
    }
    c.Emit(in);
    return Status::Ok();
  }
  ExecFn fn = bytes == 8 ? &ExecUnary<uint64_t, uint64_t, Identity<uint64_t>>
                         : &ExecUnary<uint32_t, uint32_t, Identity<uint32_t>>;
  return LowerSimple(c, fn, t, t, 1);
}

// cvta: flags bit0 32-bit source; aux: window to add (to generic) or subtract (to space).
template <bool kToGeneric, bool kSrc32, bool kDst32>
bool ExecCvta(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE((&ExecCvta<kToGeneric, kSrc32, kDst32>), NOp::kCvta, Ty::kU64, Ty::kU64,
               (kToGeneric ? 1 : 0) | (kSrc32 ? 2 : 0) | (kDst32 ? 4 : 0));
  uint8_t* r = w.regs;
  ForLanes(m, [&](int i) {
    uint64_t a = kSrc32 ? LoadReg<uint32_t>(r, in.a[1], i) : LoadReg<uint64_t>(r, in.a[1], i);
    uint64_t v = kToGeneric ? a + in.aux : a - in.aux;
    if (kDst32)
      StoreReg<uint32_t>(r, in.a[0], i, static_cast<uint32_t>(v));
    else
      StoreReg<uint64_t>(r, in.a[0], i, v);
  });
  return false;
}

Status LowerCvta(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(2));
  bool to = c.Has(".to");
  uint64_t window = 0;
  if (c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster"))
    window = kSharedWindow;
  else if (c.Has(".local"))
    window = kLocalWindow;
  else if (c.Has(".param"))
    window = kParamWindow;
  else if (!c.Has(".global") && !c.Has(".const"))
    return c.Unsupported();
  Ty t = c.TypeMod();
  bool is32 = t == Ty::kU32 || t == Ty::kB32;
  if (!is32 && t != Ty::kU64 && t != Ty::kB64) return c.Unsupported();
  // Generic addresses are 64-bit; state-space addresses may be 32-bit.
  bool src32 = is32 && !to ? true : false;
  bool dst32 = is32 && to;
  ExecFn fn = to ? (dst32 ? &ExecCvta<false, false, true> : &ExecCvta<false, false, false>)
                 : (src32 ? &ExecCvta<true, true, false> : &ExecCvta<true, false, false>);
  if (is32) {
    // cvta.u32 forms mean 32-bit generic addresses; only the state-space side is 32-bit here.
  }
  Inst in;
  in.fn = fn;
  in.aux = window;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, src32 ? Ty::kU32 : Ty::kU64));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, dst32 ? Ty::kU32 : Ty::kU64));
  c.Emit(in);
  return Status::Ok();
}

// isspacep: aux selects the window; 0 means global (anything outside the windows).
bool ExecIsSpace(const Inst& in, Warp& w, uint32_t m) {
  uint32_t out = 0;
  ForLanes(m, [&](int i) {
    uint64_t a = LoadReg<uint64_t>(w.regs, in.a[1], i);
    bool v = in.aux ? (a - in.aux < kWindowSize) : (a < kWindowFloor);
    out |= static_cast<uint32_t>(v) << i;
  });
  uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
  d = (d & ~m) | out;
  return false;
}

Status LowerIsSpace(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(2));
  Inst in;
  in.fn = ExecIsSpace;
  if (c.Has(".shared"))
    in.aux = kSharedWindow;
  else if (c.Has(".local"))
    in.aux = kLocalWindow;
  else if (c.Has(".param"))
    in.aux = kParamWindow;
  else if (!c.Has(".global") && !c.Has(".const"))
    return c.Unsupported();
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kU64));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

bool ExecFence(const Inst&, Warp&, uint32_t) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return false;
}
bool ExecFenceAcquire(const Inst&, Warp&, uint32_t) {
  std::atomic_thread_fence(std::memory_order_acquire);
  return false;
}
bool ExecFenceRelease(const Inst&, Warp&, uint32_t) {
  std::atomic_thread_fence(std::memory_order_release);
  return false;
}
bool ExecNop(const Inst&, Warp&, uint32_t) { return false; }

Status LowerFence(LowerCtx& c) {
  Inst in;
  in.fn = ExecFence;
  c.Emit(in);
  return Status::Ok();
}
Status LowerNop(LowerCtx& c) {
  Inst in;
  in.fn = ExecNop;
  c.Emit(in);
  return Status::Ok();
}

// createpolicy (sm_80): a 64-bit L2 cache policy for loads, stores and copies with
// .L2::cache_hint, which the engine accepts and ignores, so any value will do; the operands are
// still resolved so that a malformed instruction is a load error. aux: the value.
bool ExecCreatePolicy(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int i) { StoreReg<uint64_t>(w.regs, in.a[0], i, in.aux); });
  return false;
}

Status LowerCreatePolicy(LowerCtx& c) {
  if (!c.Has(".fractional") && !c.Has(".range") && !c.Has(".cvt")) return c.Unsupported();
  if (c.ops().size() < 2) return c.Err("createpolicy expects a destination and operands");
  Inst in;
  in.fn = ExecCreatePolicy;
  in.aux = 0x10E0000000000000ull;  // nonzero, like the driver's encodings
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB64));
  c.Emit(in);
  return Status::Ok();
}

}  // namespace

void EmitReleaseFence(LowerCtx& c) {
  if (!c.Has(".release") && !c.Has(".acq_rel") && !c.Has(".sc")) return;
  Inst in;
  in.fn = c.Has(".sc") ? ExecFence : ExecFenceRelease;
  c.Emit(in);
}

void EmitAcquireFence(LowerCtx& c) {
  if (!c.Has(".acquire") && !c.Has(".acq_rel") && !c.Has(".sc")) return;
  Inst in;
  in.fn = c.Has(".sc") ? ExecFence : ExecFenceAcquire;
  c.Emit(in);
}

void RegisterMove(OpTable& t) {
  t.Add("mov", LowerMov);
  t.Add("cvta", LowerCvta);
  t.Add("isspacep", LowerIsSpace);
  t.Add("membar", LowerFence);
  t.Add("fence", LowerFence);
  t.Add("prefetch", LowerNop);
  t.Add("prefetchu", LowerNop);
  t.Add("discard", LowerNop);
  t.Add("applypriority", LowerNop);  // an L2 eviction priority: a hint
  t.Add("createpolicy", LowerCreatePolicy);
}

}  // namespace pvgpu::ptx
