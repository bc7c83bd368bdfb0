// Warp-synchronous and block-level synchronization: shfl.sync, vote.sync, activemask,
// match.sync, redux.sync, bar.warp.sync and bar/barrier (sync, arrive, red).
#include "ptx/exec_util.h"

namespace pvgpu::ptx {
namespace {

// shfl.sync.mode.b32 d[|p], a, b, c, membermask. aux: 0 up, 1 down, 2 bfly, 3 idx.
template <int kMode>
bool ExecShfl(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE(&ExecShfl<kMode>, NOp::kShfl, Ty::kB32, Ty::kB32, kMode);
  uint8_t* r = w.regs;
  uint32_t src[32];
  std::memcpy(src, RegPtr<uint32_t>(r, in.a[2]), sizeof(src));
  uint32_t pbits = 0;
  ForLanes(m, [&](int lane) {
    uint32_t b = LoadReg<uint32_t>(r, in.a[3], lane) & 31;
    uint32_t c = LoadReg<uint32_t>(r, in.a[4], lane);
    uint32_t cval = c & 31, seg = (c >> 8) & 31;
    int max_lane = static_cast<int>((static_cast<uint32_t>(lane) & seg) | (cval & ~seg));
    int min_lane = static_cast<int>(static_cast<uint32_t>(lane) & seg);
    int j;
    bool ok;
    switch (kMode) {
      case 0:
        j = lane - static_cast<int>(b);
        ok = j >= max_lane;
        break;
      case 1:
        j = lane + static_cast<int>(b);
        ok = j <= max_lane;
        break;
      case 2:
        j = lane ^ static_cast<int>(b);
        ok = j <= max_lane;
        break;
      default:
        j = min_lane | static_cast<int>(b & ~seg);
        ok = j <= max_lane;
        break;
    }
    if (!ok || j < 0 || j > 31) j = lane;
    StoreReg<uint32_t>(r, in.a[0], lane, src[j]);
    pbits |= static_cast<uint32_t>(ok) << lane;
  });
  if (in.a[1] != kNoReg) {
    uint32_t& p = *RegPtr<uint32_t>(r, in.a[1]);
    p = (p & ~m) | (pbits & m);
  }
  return false;
}

Status LowerShfl(LowerCtx& c) {
  int mode = c.Has(".up") ? 0 : c.Has(".down") ? 1 : c.Has(".bfly") ? 2 : c.Has(".idx") ? 3 : -1;
  ExecFn fns[] = {&ExecShfl<0>, &ExecShfl<1>, &ExecShfl<2>, &ExecShfl<3>};
  if (mode < 0 || c.TypeMod() != Ty::kB32) return c.Unsupported();
  size_t n = c.ops().size();
  if (n != 5 && n != 4) return c.Err("shfl expects 4 or 5 operands");
  Inst in;
  in.fn = fns[mode];
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(1, Ty::kB32));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], c.Src(2, Ty::kB32));
  PVGPU_ASSIGN_OR_RETURN(in.a[4], c.Src(3, Ty::kB32));
  PVGPU_TRY(c.DstMaybePair(in, Ty::kB32, Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

// vote: aux 0 all, 1 any, 2 uni, 3 ballot. a[0] d, a[1] predicate.
bool ExecVote(const Inst& in, Warp& w, uint32_t m) {
  PVGPU_NATIVE(&ExecVote, NOp::kVote);
  uint32_t p = *RegPtr<uint32_t>(w.regs, in.a[1]) & m;
  if (in.aux == 3) {
    ForLanes(m, [&](int i) { StoreReg<uint32_t>(w.regs, in.a[0], i, p); });
    return false;
  }
  bool v = in.aux == 0 ? p == m : in.aux == 1 ? p != 0 : (p == 0 || p == m);
  uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
  d = (d & ~m) | (v ? m : 0);
  return false;
}

Status LowerVote(LowerCtx& c) {
  Inst in;
  in.fn = ExecVote;
  in.aux = c.Has(".all") ? 0 : c.Has(".any") ? 1 : c.Has(".uni") ? 2 : c.Has(".ballot") ? 3 : 9;
  if (in.aux == 9) return c.Unsupported();
  if (c.ops().size() < 2) return c.Err("vote expects operands");
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kPred));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, in.aux == 3 ? Ty::kB32 : Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

bool ExecActiveMask(const Inst& in, Warp& w, uint32_t m) {
  const uint32_t active = w.active;
  ForLanes(m, [&](int i) { StoreReg<uint32_t>(w.regs, in.a[0], i, active); });
  return false;
}
Status LowerActiveMask(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(1));
  Inst in;
  in.fn = ExecActiveMask;
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB32));
  c.Emit(in);
  return Status::Ok();
}

// match.{any,all}.sync.b32/b64 d[|p], a, membermask. aux 0 any, 1 all.
template <typename T>
bool ExecMatch(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  T v[32];
  for (int i = 0; i < 32; ++i) v[i] = LoadReg<T>(r, in.a[2], i);
  uint32_t pbits = 0;
  ForLanes(m, [&](int i) {
    uint32_t same = 0;
    for (uint32_t t = m; t; t &= t - 1) {
      int j = __builtin_ctz(t);
      if (v[j] == v[i]) same |= 1u << j;
    }
    uint32_t d = same;
    if (in.aux == 1) d = same == m ? m : 0;
    pbits |= static_cast<uint32_t>(same == m) << i;
    StoreReg<uint32_t>(r, in.a[0], i, d);
  });
  if (in.a[1] != kNoReg) {
    uint32_t& p = *RegPtr<uint32_t>(r, in.a[1]);
    p = (p & ~m) | (pbits & m);
  }
  return false;
}
Status LowerMatch(LowerCtx& c) {
  Ty t = c.TypeMod();
  Inst in;
  in.fn = TypeSize(t) == 8 ? &ExecMatch<uint64_t> : &ExecMatch<uint32_t>;
  in.aux = c.Has(".all") ? 1 : 0;
  if (c.ops().size() < 2) return c.Err("match expects operands");
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(1, t));
  PVGPU_TRY(c.DstMaybePair(in, Ty::kB32, Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

// redux.sync.op.type d, a, membermask. aux: 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor.
template <typename T>
bool ExecRedux(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  T acc = in.aux == 1   ? std::numeric_limits<T>::max()
          : in.aux == 2 ? std::numeric_limits<T>::min()
          : in.aux == 3 ? static_cast<T>(~T(0))
                        : T(0);
  for (uint32_t t = m; t; t &= t - 1) {
    T v = LoadReg<T>(r, in.a[1], __builtin_ctz(t));
    switch (in.aux) {
      case 0:
        acc = static_cast<T>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(v));
        break;
      case 1:
        acc = v < acc ? v : acc;
        break;
      case 2:
        acc = v > acc ? v : acc;
        break;
      case 3:
        acc &= v;
        break;
      case 4:
        acc |= v;
        break;
      default:
        acc ^= v;
        break;
    }
  }
  ForLanes(m, [&](int i) { StoreReg<T>(r, in.a[0], i, acc); });
  return false;
}
// elect.sync d|p, membermask (sm_90): one leader among the active lanes of membermask, the
// lowest; d receives its lane id in every lane, p is set in the leader only.
bool ExecElect(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const uint32_t members = LoadReg<uint32_t>(r, in.a[2], __builtin_ctz(m)) & m;
  const uint32_t leader = members == 0 ? 0 : static_cast<uint32_t>(__builtin_ctz(members));
  ForLanes(m, [&](int i) { StoreReg<uint32_t>(r, in.a[0], i, leader); });
  if (in.a[1] != kNoReg) {
    uint32_t& p = *RegPtr<uint32_t>(r, in.a[1]);
    p = (p & ~m) | (members == 0 ? 0 : (1u << leader));
  }
  return false;
}

Status LowerElect(LowerCtx& c) {
  if (!c.Has(".sync")) return c.Unsupported();
  PVGPU_TRY(c.NeedOps(2));
  Inst in;
  in.fn = ExecElect;
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(1, Ty::kB32));
  PVGPU_TRY(c.DstMaybePair(in, Ty::kB32, Ty::kPred));
  c.Emit(in);
  return Status::Ok();
}

Status LowerRedux(LowerCtx& c) {
  Ty t = c.TypeMod();
  Inst in;
  static const char* kOps[] = {".add", ".min", ".max", ".and", ".or", ".xor"};
  in.aux = 9;
  for (int k = 0; k < 6; ++k)
    if (c.Has(kOps[k])) in.aux = k;
  if (in.aux == 9 || TypeSize(t) != 4 || IsFloat(t)) return c.Unsupported();
  in.fn = t == Ty::kS32 ? &ExecRedux<int32_t> : &ExecRedux<uint32_t>;
  if (c.ops().size() < 2) return c.Err("redux expects operands");
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

bool ExecWarpSync(const Inst&, Warp&, uint32_t) { return false; }
Status LowerWarpSync(LowerCtx& c) {
  Inst in;
  in.fn = ExecWarpSync;
  c.Emit(in);
  return Status::Ok();
}

// Block barriers. a[0]: barrier id register, a[1]: thread count register (or kNoReg);
// flags bit0: arrive only; bit1: bar.red (a[2] predicate, aux 0 popc, 1 and, 2 or); bit2: the
// engine's own barrier (kClusterBarrier), which programs cannot name.
bool ExecBar(const Inst& in, Warp& w, uint32_t m) {
  const int lane = __builtin_ctz(m);
  uint32_t id = LoadReg<uint32_t>(w.regs, in.a[0], lane);
  if (id >= kNumNamedBarriers && !((in.flags & 4) && id == kClusterBarrier)) {
    w.Fault(Code::kIllegalInstruction, in, lane,
            "barrier id " + std::to_string(id) + " out of range");
    return true;
  }
  Block& b = *w.block;
  Barrier& bar = b.bars[id];
  if (in.a[1] != kNoReg) {
    uint32_t count = LoadReg<uint32_t>(w.regs, in.a[1], lane);
    if (count == 0 || count % 32 || count > w.launch->num_warps * 32) {
      w.Fault(Code::kIllegalInstruction, in, lane,
              "bad barrier thread count " + std::to_string(count));
      return true;
    }
    bar.expected = count;
  }
  if (in.flags & 2) {
    uint32_t p = *RegPtr<uint32_t>(w.regs, in.a[2]) & m;
    bar.red_popc += static_cast<uint32_t>(__builtin_popcount(p));
    bar.red_and = bar.red_and && p == m;
    bar.red_or = bar.red_or || p != 0;
  }
  bar.arrived += static_cast<uint32_t>(__builtin_popcount(m));
  if (in.flags & 1) {
    b.MaybeRelease(static_cast<int>(id));
    return false;
  }
  w.bar_wait[id] |= m;
  if (m == w.active && w.blocked == 0 && w.next_wait == UINT32_MAX) {
    // The whole converged warp waits: no per-lane bookkeeping needed.
    w.blocked = m;
    w.pc += 1;
    w.active = 0;
    w.uniform_wait = true;
    w.state = WarpState::kBlocked;
    b.MaybeRelease(static_cast<int>(id));
    return true;
  }
  w.blocked |= m;
  for (uint32_t t = w.active; t; t &= t - 1) w.lane_pc[__builtin_ctz(t)] = w.pc + 1;
  w.active = 0;
  b.MaybeRelease(static_cast<int>(id));
  w.Reschedule();
  return true;
}

// Reads the bar.red result after the barrier: aux 0 popc (u32), 1 and, 2 or (predicates).
bool ExecBarRedResult(const Inst& in, Warp& w, uint32_t m) {
  uint32_t id = LoadReg<uint32_t>(w.regs, in.a[1], __builtin_ctz(m)) % kNumNamedBarriers;
  const Barrier& bar = w.block->bars[id];
  if (in.aux == 0) {
    ForLanes(m, [&](int i) { StoreReg<uint32_t>(w.regs, in.a[0], i, bar.res_popc); });
  } else {
    bool v = in.aux == 1 ? bar.res_and : bar.res_or;
    uint32_t& d = *RegPtr<uint32_t>(w.regs, in.a[0]);
    d = (d & ~m) | (v ? m : 0);
  }
  return false;
}

// barrier.cluster.arrive / .wait (sm_90) in a cluster of one block: the wait completes once
// every thread of the block has arrived, so it is a block barrier on the engine's own slot,
// and the arrive is implied by reaching the wait (a thread that arrives and exits counts as
// arrived, as exited threads do at any barrier).
Status LowerClusterBarrier(LowerCtx& c) {
  if (c.Has(".arrive")) {
    Inst in;
    in.fn = [](const Inst&, Warp&, uint32_t) { return false; };
    c.Emit(in);
    return Status::Ok();
  }
  if (!c.Has(".wait")) return c.Unsupported();
  Inst in;
  in.fn = ExecBar;
  in.flags = 4;
  in.a[0] = c.Const('w', kClusterBarrier);
  c.Emit(in);
  return Status::Ok();
}

// mapa{.shared::cluster}.{u32,u64} d, a, rank: a's variable in the block of that rank, which
// must be 0, the cluster's only block. aux: 1 for 64-bit operands.
bool ExecMapa(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  bool faulted = false;
  ForLanes(m, [&](int i) {
    if (faulted) return;
    const uint32_t rank = LoadReg<uint32_t>(r, in.a[2], i);
    if (rank != 0) {
      w.Fault(Code::kIllegalAddress, in, i,
              "mapa to block rank " + std::to_string(rank) + " of a cluster of one block");
      faulted = true;
      return;
    }
    if (in.aux) {
      StoreReg<uint64_t>(r, in.a[0], i, LoadReg<uint64_t>(r, in.a[1], i));
    } else {
      StoreReg<uint32_t>(r, in.a[0], i, LoadReg<uint32_t>(r, in.a[1], i));
    }
  });
  return faulted;
}

Status LowerMapa(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(3));
  const Ty t = c.TypeMod();
  if (t != Ty::kU32 && t != Ty::kU64) return c.Unsupported("mapa type");
  Inst in;
  in.fn = ExecMapa;
  in.aux = t == Ty::kU64 ? 1 : 0;
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, t));
  PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, t));
  c.Emit(in);
  return Status::Ok();
}

// getctarank{.shared::cluster}.{u32,u64} d, a: the rank of the block whose shared memory holds
// a: 0, the only one.
bool ExecZero32(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int i) { StoreReg<uint32_t>(w.regs, in.a[0], i, 0); });
  return false;
}

Status LowerGetCtaRank(LowerCtx& c) {
  PVGPU_TRY(c.NeedOps(2));
  const Ty t = c.TypeMod();
  if (t != Ty::kU32 && t != Ty::kU64) return c.Unsupported("getctarank type");
  Inst in;
  in.fn = ExecZero32;
  PVGPU_TRY(c.Src(1, t).status());
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kU32));
  c.Emit(in);
  return Status::Ok();
}

Status LowerBar(LowerCtx& c) {
  const std::string& op = c.inst().opcode;
  if (op == "barrier" && c.Has(".cluster")) return LowerClusterBarrier(c);
  bool arrive = c.Has(".arrive");
  bool red = c.Has(".red");
  if (!arrive && !red && !c.Has(".sync") && !(op == "bar" && c.inst().mods.empty()) &&
      !c.Has(".cta") && !c.Has(".aligned"))
    return c.Unsupported();
  if (op == "bar" && c.Has(".warp")) return LowerWarpSync(c);
  Inst in;
  in.fn = ExecBar;
  in.flags = (arrive ? 1 : 0) | (red ? 2 : 0);
  size_t first = red ? 1 : 0;
  const auto& ops = c.ops();
  if (ops.size() < first + 1) return c.Err("barrier id missing");
  PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Src(static_cast<int>(first), Ty::kU32));
  size_t count_idx = first + 1;
  if (red) {
    // bar.red.op d, a{, b}, {!}c
    size_t pred_idx = ops.size() - 1;
    if (pred_idx < first + 1) return c.Err("bar.red needs a predicate");
    if (pred_idx == first + 2) {
      PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(static_cast<int>(first + 1), Ty::kU32));
    }
    PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(static_cast<int>(pred_idx), Ty::kPred));
  } else if (ops.size() > count_idx) {
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(static_cast<int>(count_idx), Ty::kU32));
  }
  c.Emit(in);
  if (red) {
    Inst res;
    res.fn = ExecBarRedResult;
    res.aux = c.Has(".popc") ? 0 : c.Has(".and") ? 1 : c.Has(".or") ? 2 : 9;
    if (res.aux == 9) return c.Unsupported();
    res.a[1] = in.a[0];
    PVGPU_ASSIGN_OR_RETURN(res.a[0], c.Dst(0, res.aux == 0 ? Ty::kU32 : Ty::kPred));
    c.Emit(res);
  }
  return Status::Ok();
}

}  // namespace

void RegisterWarp(OpTable& t) {
  t.Add("shfl", LowerShfl);
  t.Add("vote", LowerVote);
  t.Add("activemask", LowerActiveMask);
  t.Add("match", LowerMatch);
  t.Add("redux", LowerRedux);
  t.Add("elect", LowerElect);
  t.Add("mapa", LowerMapa);
  t.Add("getctarank", LowerGetCtaRank);
  t.Add("bar", LowerBar);
  t.Add("barrier", LowerBar);
}

}  // namespace pvgpu::ptx
