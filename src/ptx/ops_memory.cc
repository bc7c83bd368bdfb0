// Loads, stores, mov (including vector pack/unpack), cvta, isspacep, prefetch and fences.
#include <atomic>
#include <cinttypes>
#include <cstdio>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/memory.h"

namespace pvgpu::ptx {

const char* SpaceName(MemSpace s) {
  switch (s) {
    case MemSpace::kGlobal:
      return "global";
    case MemSpace::kShared:
      return "shared";
    case MemSpace::kLocal:
      return "local";
    case MemSpace::kKParam:
      return "param";
    default:
      return "generic";
  }
}

void AddressFault(Warp& w, const Inst& in, int lane, uint64_t addr, uint32_t size, MemSpace s,
                  bool misaligned) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %u-byte %s access at address 0x%" PRIx64,
                misaligned ? "misaligned" : "out-of-bounds", size, SpaceName(s), addr);
  w.Fault(misaligned ? Code::kMisalignedAddress : Code::kIllegalAddress, in, lane, buf);
}

bool ReadCString(Warp& w, int lane, uint64_t addr, std::string* out, size_t max) {
  out->clear();
  for (size_t i = 0; i < max; ++i) {
    uint8_t* p = Resolve<MemSpace::kGeneric>(w, lane, addr + i, 1, false);
    if (!p) return false;
    if (*p == 0) return true;
    out->push_back(static_cast<char>(*p));
  }
  return true;
}

namespace {

// Fast path for a full warp: compute all addresses, check the whole range once (bounds and
// alignment) and return a host base with 32-bit lane offsets into it. Returns nullptr to fall
// back to the per-lane path, which also reports faults precisely.
template <MemSpace S, int kBytes>
inline uint8_t* WarpRange(const Inst& in, Warp& w, uint32_t* off) {
  uint64_t addr[32];
  if (in.a[4] == kNoReg) {
    for (int i = 0; i < 32; ++i) addr[i] = static_cast<uint64_t>(in.imm);
  } else if (in.flags & 1) {
    const uint32_t* b = RegPtr<uint32_t>(w.regs, in.a[4]);
    for (int i = 0; i < 32; ++i) addr[i] = b[i] + static_cast<uint64_t>(in.imm);
  } else {
    const uint64_t* b = RegPtr<uint64_t>(w.regs, in.a[4]);
    for (int i = 0; i < 32; ++i) addr[i] = b[i] + static_cast<uint64_t>(in.imm);
  }
  uint64_t lo = addr[0], hi = addr[0], mis = 0;
  for (int i = 0; i < 32; ++i) {
    lo = addr[i] < lo ? addr[i] : lo;
    hi = addr[i] > hi ? addr[i] : hi;
    mis |= addr[i];
  }
  if ((mis & (kBytes - 1)) || hi > hi + kBytes || hi - lo >= (uint64_t{1} << 31)) return nullptr;
  uint8_t* base;
  if constexpr (S == MemSpace::kShared) {
    if (hi + kBytes > w.block->shared_size) return nullptr;
    base = w.block->shared + lo;
  } else if constexpr (S == MemSpace::kGlobal) {
    if (!GlobalPtr(w, lo, kBytes)) return nullptr;
    const TranslateCache& c = *w.cache;
    if (lo < c.lo || hi + kBytes > c.hi) return nullptr;
    base = c.host + (lo - c.lo);
  } else {
    return nullptr;
  }
  for (int i = 0; i < 32; ++i) off[i] = static_cast<uint32_t>(addr[i] - lo);
  return base;
}

// a[0..3]: value registers, a[4]: base register; flags bit0: 32-bit base.
template <MemSpace S, int kBytes, int kVec>
bool ExecLd(const Inst& in, Warp& w, uint32_t m) {
  constexpr uint32_t kTotal = kBytes * kVec;
  uint8_t* r = w.regs;
  if constexpr (S == MemSpace::kKParam) {
    // Kernel parameters at a constant offset are uniform: load once, broadcast.
    if (in.a[4] == kNoReg && kVec == 1) {
      const auto& p = w.launch->params;
      uint64_t off = static_cast<uint64_t>(in.imm);
      if (off <= p.size() && kTotal <= p.size() - off && (off & (kBytes - 1)) == 0) {
        uint64_t v = 0;
        std::memcpy(&v, p.data() + off, kBytes);
        ForLanes(m, [&](int i) {
          if constexpr (kBytes == 8)
            StoreReg<uint64_t>(r, in.a[0], i, v);
          else
            StoreReg<uint32_t>(r, in.a[0], i, static_cast<uint32_t>(v));
        });
        return false;
      }
    }
  }
  if constexpr (S == MemSpace::kShared || S == MemSpace::kGlobal) {
    uint32_t off[32];
    if (m == kFullMask) {
      if (uint8_t* base = WarpRange<S, kTotal>(in, w, off)) {
        if constexpr (kBytes == 4 && kVec == 1) {
          kGather32(base, off, RegPtr<uint32_t>(r, in.a[0]));
          return false;
        }
        for (int k = 0; k < kVec; ++k) {
          if constexpr (kBytes == 8) {
            uint64_t* d = RegPtr<uint64_t>(r, in.a[k]);
            for (int i = 0; i < 32; ++i) std::memcpy(&d[i], base + off[i] + 8 * k, 8);
          } else {
            uint32_t* d = RegPtr<uint32_t>(r, in.a[k]);
            for (int i = 0; i < 32; ++i) {
              uint32_t v = 0;
              std::memcpy(&v, base + off[i] + kBytes * k, kBytes);
              d[i] = v;
            }
          }
        }
        return false;
      }
    }
  }
  for (uint32_t mm = m; mm;) {
    int i = __builtin_ctz(mm);
    mm &= mm - 1;
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, kTotal, false);
    if (!p || (addr & (kBytes * (kVec == 3 ? 4 : kVec) - 1))) {
      AddressFault(w, in, i, addr, kTotal, S, p != nullptr);
      return true;
    }
    for (int k = 0; k < kVec; ++k) {
      if constexpr (kBytes == 8) {
        uint64_t v;
        std::memcpy(&v, p + 8 * k, 8);
        StoreReg<uint64_t>(r, in.a[k], i, v);
      } else {
        uint32_t v = 0;
        std::memcpy(&v, p + kBytes * k, kBytes);
        StoreReg<uint32_t>(r, in.a[k], i, v);
      }
    }
  }
  return false;
}

template <MemSpace S, int kBytes, int kVec>
bool ExecSt(const Inst& in, Warp& w, uint32_t m) {
  constexpr uint32_t kTotal = kBytes * kVec;
  uint8_t* r = w.regs;
  if constexpr (S == MemSpace::kShared || S == MemSpace::kGlobal) {
    uint32_t off[32];
    if (m == kFullMask) {
      if (uint8_t* base = WarpRange<S, kTotal>(in, w, off)) {
        // Lane order matches the per-lane path: the highest lane wins on conflicts.
        for (int i = 0; i < 32; ++i) {
          for (int k = 0; k < kVec; ++k) {
            if constexpr (kBytes == 8) {
              std::memcpy(base + off[i] + 8 * k, RegPtr<uint64_t>(r, in.a[k]) + i, 8);
            } else {
              std::memcpy(base + off[i] + kBytes * k, RegPtr<uint32_t>(r, in.a[k]) + i, kBytes);
            }
          }
        }
        return false;
      }
    }
  }
  for (uint32_t mm = m; mm;) {
    int i = __builtin_ctz(mm);
    mm &= mm - 1;
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, kTotal, true);
    if (!p || (addr & (kBytes * kVec - 1))) {
      AddressFault(w, in, i, addr, kTotal, S, p != nullptr);
      return true;
    }
    for (int k = 0; k < kVec; ++k) {
      if constexpr (kBytes == 8) {
        uint64_t v = LoadReg<uint64_t>(r, in.a[k], i);
        std::memcpy(p + 8 * k, &v, 8);
      } else {
        uint32_t v = LoadReg<uint32_t>(r, in.a[k], i);
        std::memcpy(p + kBytes * k, &v, kBytes);
      }
    }
  }
  return false;
}

// ld.shared.b32 through a 32-bit address register: the inner loop of tiled kernels.
bool ExecLdShared32(const Inst& in, Warp& w, uint32_t m) {
  static const FastLdFn fast = FastSharedLd32();
  if (fast && fast(in, w, m)) return false;
  return ExecLd<MemSpace::kShared, 4, 1>(in, w, m);
}

template <MemSpace S>
ExecFn PickLdSt(bool store, uint32_t bytes, int vec) {
  auto pick = [&]<int B>() -> ExecFn {
    switch (vec) {
      case 1:
        return store ? &ExecSt<S, B, 1> : &ExecLd<S, B, 1>;
      case 2:
        return store ? &ExecSt<S, B, 2> : &ExecLd<S, B, 2>;
      case 4:
        return store ? &ExecSt<S, B, 4> : &ExecLd<S, B, 4>;
      default:
        return nullptr;
    }
  };
  switch (bytes) {
    case 1:
      return pick.template operator()<1>();
    case 2:
      return pick.template operator()<2>();
    case 4:
      return pick.template operator()<4>();
    case 8:
      return pick.template operator()<8>();
    default:
      return nullptr;
  }
}

MemSpace SpaceFromMods(const LowerCtx& c) {
  if (c.Has(".global") || c.Has(".const")) return MemSpace::kGlobal;
  if (c.Has(".shared") || c.Has(".shared::cta")) return MemSpace::kShared;
  if (c.Has(".local")) return MemSpace::kLocal;
  if (c.Has(".param") || c.Has(".param::entry") || c.Has(".param::func")) return MemSpace::kKParam;
  return MemSpace::kGeneric;
}

Status LowerLdSt(LowerCtx& c, bool store) {
  PVGPU_TRY(c.NeedOps(2));
  Ty t = c.TypeMod();
  uint32_t bytes = TypeSize(t);
  if (bytes == 0 || bytes > 8) return c.Unsupported("type");
  int vec = c.Has(".v2") ? 2 : c.Has(".v4") ? 4 : 1;
  if (c.Has(".v8")) return c.Unsupported();
  const ast::Operand& addr_op = store ? c.ops()[0] : c.ops()[1];
  const ast::Operand& val_op = store ? c.ops()[1] : c.ops()[0];
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(addr_op, SpaceFromMods(c)));
  Inst in;
  in.a[4] = a.base;
  in.flags = a.base32 ? 1 : 0;
  in.imm = a.imm;
  switch (a.space) {
    case MemSpace::kGlobal:
      in.fn = PickLdSt<MemSpace::kGlobal>(store, bytes, vec);
      break;
    case MemSpace::kShared:
      in.fn = PickLdSt<MemSpace::kShared>(store, bytes, vec);
      break;
    case MemSpace::kLocal:
      in.fn = PickLdSt<MemSpace::kLocal>(store, bytes, vec);
      break;
    case MemSpace::kKParam:
      in.fn = PickLdSt<MemSpace::kKParam>(store, bytes, vec);
      break;
    default:
      in.fn = PickLdSt<MemSpace::kGeneric>(store, bytes, vec);
      break;
  }
  if (!in.fn) return c.Unsupported();
  if (!store && a.space == MemSpace::kShared && bytes == 4 && vec == 1 && a.base32)
    in.fn = ExecLdShared32;
  // Values travel as raw bits: the register class follows the element size.
  Ty raw = bytes == 8 ? Ty::kB64 : bytes == 4 ? Ty::kB32 : bytes == 2 ? Ty::kB16 : Ty::kB8;
  Ty val_ty = (IsSigned(t) && !store) ? t : raw;
  std::vector<ast::Operand> elems;
  if (vec > 1) {
    if (val_op.kind != ast::Operand::Kind::kVector ||
        val_op.elems.size() != static_cast<size_t>(vec))
      return c.ErrAt(val_op, "expected a vector of " + std::to_string(vec) + " registers");
    elems = val_op.elems;
  } else {
    elems.push_back(val_op);
  }
  for (int k = 0; k < vec; ++k) {
    if (store) {
      PVGPU_ASSIGN_OR_RETURN(in.a[k], c.SrcOp(elems[k], raw));
    } else {
      PVGPU_ASSIGN_OR_RETURN(in.a[k], c.DstOp(elems[k], val_ty));
    }
  }
  c.Emit(in);
  return Status::Ok();
}

Status LowerLd(LowerCtx& c) { return LowerLdSt(c, false); }
Status LowerSt(LowerCtx& c) { return LowerLdSt(c, true); }

template <typename T>
struct Identity {
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
  uint32_t bytes = TypeSize(t);
  if (bytes == 0 || bytes > 8) return c.Unsupported();
  const auto& d = c.ops()[0];
  const auto& s = c.ops()[1];
  using K = ast::Operand::Kind;
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
  if (c.Has(".shared") || c.Has(".shared::cta"))
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

}  // namespace

void RegisterMemory(OpTable& t) {
  t.Add("ld", LowerLd);
  t.Add("ldu", LowerLd);
  t.Add("st", LowerSt);
  t.Add("mov", LowerMov);
  t.Add("cvta", LowerCvta);
  t.Add("isspacep", LowerIsSpace);
  t.Add("membar", LowerFence);
  t.Add("fence", LowerFence);
  t.Add("prefetch", LowerNop);
  t.Add("prefetchu", LowerNop);
  t.Add("discard", LowerNop);
}

}  // namespace pvgpu::ptx
