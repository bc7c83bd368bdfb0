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

// The spaces the compiling engine accesses itself (NSpace), or kNotNative.
constexpr int kNotNative = -1;
template <MemSpace S>
constexpr int NativeSpace() {
  if constexpr (S == MemSpace::kGlobal) return static_cast<int>(NSpace::kGlobal);
  if constexpr (S == MemSpace::kShared) return static_cast<int>(NSpace::kShared);
  if constexpr (S == MemSpace::kKParam) return static_cast<int>(NSpace::kParam);
  return kNotNative;
}

// a[0..3]: value registers, a[4]: base register; flags bit0: 32-bit base.
template <MemSpace S, int kBytes, int kVec>
bool ExecLd(const Inst& in, Warp& w, uint32_t m) {
  constexpr uint32_t kTotal = kBytes * kVec;
  if constexpr (NativeSpace<S>() != kNotNative) {
    PVGPU_NATIVE((&ExecLd<S, kBytes, kVec>), NOp::kLd, Ty::kNone, Ty::kNone, 0,
                 static_cast<NSpace>(NativeSpace<S>()), kBytes, kVec);
  }
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
  if constexpr (NativeSpace<S>() != kNotNative && S != MemSpace::kKParam) {
    PVGPU_NATIVE((&ExecSt<S, kBytes, kVec>), NOp::kSt, Ty::kNone, Ty::kNone, 0,
                 static_cast<NSpace>(NativeSpace<S>()), kBytes, kVec);
  }
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
  PVGPU_NATIVE(&ExecLdShared32, NOp::kLd, Ty::kNone, Ty::kNone, 0, NSpace::kShared, 4, 1);
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

// Bounds and alignment of a whole n-byte access (flags bit1: a store) before its parts run.
template <MemSpace S>
bool ExecRangeCheck(const Inst& in, Warp& w, uint32_t m) {
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    int i = __builtin_ctz(mm);
    uint64_t addr = LaneAddress(in, w, i, 4);
    uint8_t* p = Resolve<S>(w, i, addr, in.n, (in.flags & 2) != 0);
    if (!p || (addr & (in.n - 1))) {
      AddressFault(w, in, i, addr, in.n, S, p != nullptr);
      return true;
    }
  }
  return false;
}

// ld/st.v8: 32-bit elements in global memory (sm_100's 256-bit accesses), or 8- and 16-bit
// elements in any state space (64- and 128-bit accesses, which ptxas takes from sm_50 on).
// `half` is the .v4 access of the first four elements; the whole access is checked first, so a
// fault leaves memory and registers untouched.
Status LowerV8(LowerCtx& c, bool store, const Inst& half, MemSpace space, uint32_t bytes,
               const ast::Operand& val_op) {
  if (bytes == 4 && space != MemSpace::kGlobal && space != MemSpace::kGeneric)
    return c.Unsupported(".v8 of 32-bit elements accesses global memory");
  if (val_op.kind != ast::Operand::Kind::kVector || val_op.elems.size() != 8)
    return c.ErrAt(val_op, "expected a vector of 8 registers");
  const Ty t = c.TypeMod();
  const Ty raw = bytes == 4 ? Ty::kB32 : bytes == 2 ? Ty::kB16 : Ty::kB8;
  const Ty val_ty = IsSigned(t) && !store ? t : raw;
  Inst parts[2] = {half, half};
  parts[1].imm += 4 * bytes;
  if (store) {
    for (int k = 0; k < 8; ++k) {
      PVGPU_ASSIGN_OR_RETURN(parts[k / 4].a[k % 4], c.SrcOp(val_op.elems[k], raw));
    }
  }
  Inst check = half;
  switch (space) {
    case MemSpace::kGlobal:
      check.fn = &ExecRangeCheck<MemSpace::kGlobal>;
      break;
    case MemSpace::kShared:
      check.fn = &ExecRangeCheck<MemSpace::kShared>;
      break;
    case MemSpace::kLocal:
      check.fn = &ExecRangeCheck<MemSpace::kLocal>;
      break;
    case MemSpace::kKParam:
      check.fn = &ExecRangeCheck<MemSpace::kKParam>;
      break;
    default:
      check.fn = &ExecRangeCheck<MemSpace::kGeneric>;
      break;
  }
  check.n = static_cast<uint16_t>(8 * bytes);
  check.flags |= store ? 2 : 0;
  c.Emit(check);
  const bool poll = !store && (c.Has(".volatile") || c.Has(".relaxed") || c.Has(".acquire"));
  for (int h = 0; h < 2; ++h) {
    if (!store) {
      // Each half's destinations resolve just before it, so their width fixups follow it.
      for (int k = 0; k < 4; ++k) {
        PVGPU_ASSIGN_OR_RETURN(parts[h].a[k], c.DstOp(val_op.elems[4 * h + k], val_ty));
      }
    }
    if (poll && h == 0) c.MarkPoll();
    c.Emit(parts[h]);
  }
  if (!store) EmitAcquireFence(c);
  return Status::Ok();
}

MemSpace SpaceFromMods(const LowerCtx& c) {
  if (c.Has(".global") || c.Has(".const")) return MemSpace::kGlobal;
  if (c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster")) return MemSpace::kShared;
  if (c.Has(".local")) return MemSpace::kLocal;
  if (c.Has(".param") || c.Has(".param::entry") || c.Has(".param::func")) return MemSpace::kKParam;
  return MemSpace::kGeneric;
}

Status LowerLdSt(LowerCtx& c, bool store) {
  // .L2::cache_hint adds a 64-bit cache policy (createpolicy): a hint the engine ignores, its
  // operand still resolved so that a malformed one is a load error.
  const bool hinted = c.Has(".L2::cache_hint");
  PVGPU_TRY(c.NeedOps(hinted ? 3 : 2));
  if (hinted) PVGPU_TRY(c.Src(2, Ty::kB64).status());
  Ty t = c.TypeMod();
  // .b128 moves a 128-bit register's two 64-bit halves (see ClassOf).
  const bool b128 = t == Ty::kB128;
  uint32_t bytes = b128 ? 8 : TypeSize(t);
  if (bytes == 0 || bytes > 8) return c.Unsupported("type");
  int vec = c.Has(".v2") ? 2 : c.Has(".v4") ? 4 : 1;
  // .v8 (up to 32-bit elements; not ldu): two .v4 halves after one check of the whole access.
  const bool v8 = c.Has(".v8");
  if ((v8 && (bytes > 4 || b128 || c.inst().opcode == "ldu")) || (b128 && vec != 1))
    return c.Unsupported();
  if (b128) vec = 2;
  if (v8) vec = 4;
  const ast::Operand& addr_op = store ? c.ops()[0] : c.ops()[1];
  const ast::Operand& val_op = store ? c.ops()[1] : c.ops()[0];
  if (store) EmitReleaseFence(c);
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
  if (v8) return LowerV8(c, store, in, a.space, bytes, val_op);
  if (!store && a.space == MemSpace::kShared && bytes == 4 && vec == 1 && a.base32)
    in.fn = ExecLdShared32;
  // Values travel as raw bits: the register class follows the element size.
  Ty raw = bytes == 8 ? Ty::kB64 : bytes == 4 ? Ty::kB32 : bytes == 2 ? Ty::kB16 : Ty::kB8;
  Ty val_ty = (IsSigned(t) && !store) ? t : raw;
  std::vector<ast::Operand> elems;
  if (b128) {
    if (store) {
      PVGPU_ASSIGN_OR_RETURN(in.a[0], c.SrcOp(val_op, Ty::kB128));
    } else {
      PVGPU_ASSIGN_OR_RETURN(in.a[0], c.DstOp(val_op, Ty::kB128));
    }
    in.a[1] = in.a[0] + 256;
    c.Emit(in);
    if (!store) EmitAcquireFence(c);
    return Status::Ok();
  }
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
  // A load that must see other threads' stores is how a thread waits for them.
  if (!store && (c.Has(".volatile") || c.Has(".relaxed") || c.Has(".acquire"))) c.MarkPoll();
  c.Emit(in);
  if (!store) EmitAcquireFence(c);
  return Status::Ok();
}

Status LowerLd(LowerCtx& c) { return LowerLdSt(c, false); }
Status LowerSt(LowerCtx& c) { return LowerLdSt(c, true); }

}  // namespace

void RegisterMemory(OpTable& t) {
  RegisterMove(t);
  t.Add("ld", LowerLd);
  t.Add("ldu", LowerLd);
  t.Add("st", LowerSt);
}

}  // namespace pvgpu::ptx
