// Asynchronous copies and mbarrier objects: cp.async with its commit/wait groups and
// cp.async.mbarrier.arrive, the non-tensor bulk copies (cp.async.bulk) with bulk async-groups,
// and the mbarrier family (init, inval, arrive, arrive_drop, expect_tx, complete_tx, test_wait,
// try_wait, pending_count).
//
// cp.async copies (and bulk copies to global memory) are recorded per thread and performed when
// that thread waits for their group, hands them to an mbarrier or exits, so a program that reads
// the destination before waiting sees the old bytes, as it may on hardware. Addresses are checked
// when the copy is issued, so a bad one faults at the cp.async that names it. Bulk copies into
// shared memory complete at issue (see ExecBulkToShared).
//
// An mbarrier is a 64-bit word in shared memory holding its whole state:
//   bits 0-19 pending arrivals, 20-39 expected arrivals, 40-61 tx-count (two's complement),
//   bit 62 set by init, bit 63 the current phase's parity.
// Shared memory starts zeroed and inval clears the word, so an object without bit 62 is not
// initialized: using it faults.
// The state an arrive returns is the word before the arrival (the ISA's "phase prior to the
// arrive-on operation"): its parity names the phase arrived at, and pending_count reads its
// pending count, the arrivals the phase still expected then (as the toolkit's sm_70 emulation of
// mbarrier tokens in cuda_awbarrier_helpers.h computes it).
#include <cinttypes>
#include <cstdio>

#include "ptx/exec_util.h"
#include "ptx/families.h"
#include "ptx/memory.h"

namespace pvgpu::ptx {
namespace {

// ---------------------------------------------------------------------------------------------
// mbarrier word

constexpr uint64_t kCountMask = (uint64_t{1} << 20) - 1;
constexpr int kExpectedShift = 20;
constexpr int kTxShift = 40;
constexpr uint64_t kTxMask = (uint64_t{1} << 22) - 1;
constexpr int64_t kMaxTx = (int64_t{1} << 20) - 1;  // |tx-count| the ISA allows
constexpr uint64_t kValidBit = uint64_t{1} << 62;
constexpr uint64_t kPhaseBit = uint64_t{1} << 63;

struct Mbar {
  uint32_t pending, expected;
  int64_t tx;
  bool phase;
  bool valid = true;
};

Mbar Decode(uint64_t v) {
  Mbar b;
  b.pending = static_cast<uint32_t>(v & kCountMask);
  b.expected = static_cast<uint32_t>((v >> kExpectedShift) & kCountMask);
  int64_t tx = static_cast<int64_t>((v >> kTxShift) & kTxMask);
  b.tx = tx >= int64_t{1} << 21 ? tx - (int64_t{1} << 22) : tx;
  b.phase = (v & kPhaseBit) != 0;
  b.valid = (v & kValidBit) != 0;
  return b;
}

uint64_t Encode(const Mbar& b) {
  return uint64_t{b.pending} | (uint64_t{b.expected} << kExpectedShift) |
         ((static_cast<uint64_t>(b.tx) & kTxMask) << kTxShift) | kValidBit |
         (b.phase ? kPhaseBit : 0);
}

// The phase completes once every expected arrival happened and every expected transaction
// byte arrived; the next phase starts with the (possibly dropped) expected count.
void MaybeCompletePhase(Mbar& b) {
  if (b.pending != 0 || b.tx != 0) return;
  b.phase = !b.phase;
  b.pending = b.expected;
}

// Address of lane i's mbarrier: a[4] base, flags bit0 32-bit base, imm; n: the address's space
// (shared, or generic pointing into the shared window). Returns nullptr after a fault.
uint64_t* MbarWord(const Inst& in, Warp& w, int lane, const char* what) {
  uint64_t addr = LaneAddress(in, w, lane, 4);
  uint64_t off = addr;
  if (static_cast<MemSpace>(in.n) == MemSpace::kGeneric) {
    if (addr - kSharedWindow >= kWindowSize) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "%s: address 0x%" PRIx64 " is not in shared memory", what,
                    addr);
      w.Fault(Code::kIllegalAddress, in, lane, buf);
      return nullptr;
    }
    off = addr - kSharedWindow;
  }
  uint8_t* p = Resolve<MemSpace::kShared>(w, lane, off, 8, true);
  if (!p || (off & 7)) {
    AddressFault(w, in, lane, off, 8, MemSpace::kShared, p != nullptr);
    return nullptr;
  }
  return reinterpret_cast<uint64_t*>(p);
}

bool MbarFault(Warp& w, const Inst& in, int lane, const char* what, const char* why) {
  w.Fault(Code::kIllegalInstruction, in, lane, std::string(what) + ": " + why);
  return true;
}

// Lane i's mbarrier, decoded; false after a fault (not initialized or a bad address).
bool LoadMbar(const Inst& in, Warp& w, int lane, const char* what, uint64_t** word, Mbar* b) {
  *word = MbarWord(in, w, lane, what);
  if (!*word) return false;
  *b = Decode(**word);
  if (!b->valid) {
    MbarFault(w, in, lane, what, "the mbarrier object is not initialized");
    return false;
  }
  return true;
}

// Arrives `count` times; `drop` also lowers the expected count of later phases. Returns false
// after a fault.
bool Arrive(const Inst& in, Warp& w, int lane, uint64_t* word, Mbar& b, uint32_t count, bool drop,
            bool no_complete, const char* what) {
  if (count == 0 || count > kCountMask) {
    MbarFault(w, in, lane, what, "arrival count out of range [1, 2^20 - 1]");
    return false;
  }
  if (count > b.pending || (drop && count > b.expected)) {
    MbarFault(w, in, lane, what, "more arrivals than the current phase expects");
    return false;
  }
  b.pending -= count;
  if (drop) b.expected -= count;
  if (no_complete && b.pending == 0 && b.tx == 0) {
    MbarFault(w, in, lane, what, ".noComplete arrival would complete the phase");
    return false;
  }
  MaybeCompletePhase(b);
  *word = Encode(b);
  ++w.block->mbarrier_events;
  return true;
}

bool AddTx(const Inst& in, Warp& w, int lane, Mbar& b, int64_t delta, const char* what) {
  int64_t tx = b.tx + delta;
  if (tx > kMaxTx || tx < -kMaxTx) {
    MbarFault(w, in, lane, what, "tx-count out of range");
    return false;
  }
  b.tx = tx;
  return true;
}

// ---------------------------------------------------------------------------------------------
// mbarrier handlers

enum MbarOp : uint8_t { kInit, kInval, kArrive, kExpectTx, kCompleteTx, kTestWait, kTryWait };
constexpr const char* kMbarNames[] = {
    "mbarrier.init",        "mbarrier.inval",     "mbarrier.arrive",  "mbarrier.expect_tx",
    "mbarrier.complete_tx", "mbarrier.test_wait", "mbarrier.try_wait"};

// aux: MbarOp. a[0]: state (arrive, kNoReg for '_') or waitComplete predicate (test/try_wait);
// a[1]: count (init, arrive; kNoReg: 1), txCount (expect_tx, complete_tx), state or phase
// parity (waits); a[2]: txCount of arrive.expect_tx. flags bit1: .noComplete, bit2: arrive_drop,
// bit3: .parity.
bool ExecMbarrier(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const auto op = static_cast<MbarOp>(in.aux);
  const char* what = kMbarNames[op];
  uint32_t done = 0;
  for (uint32_t t = m; t; t &= t - 1) {
    const int i = __builtin_ctz(t);
    if (op == kInit) {
      uint64_t* word = MbarWord(in, w, i, what);
      if (!word) return true;
      uint32_t count = LoadReg<uint32_t>(r, in.a[1], i);
      if (count == 0 || count > kCountMask)
        return MbarFault(w, in, i, what, "expected arrival count out of range [1, 2^20 - 1]");
      *word = Encode(Mbar{count, count, 0, false, true});
      ++w.block->mbarrier_events;
      continue;
    }
    if (op == kInval) {
      uint64_t* word = MbarWord(in, w, i, what);
      if (!word) return true;
      *word = 0;
      ++w.block->mbarrier_events;
      continue;
    }
    uint64_t* word;
    Mbar b;
    if (!LoadMbar(in, w, i, what, &word, &b)) return true;
    switch (op) {
      case kArrive: {
        const uint64_t state = *word;
        if (in.a[2] != kNoReg && !AddTx(in, w, i, b, LoadReg<uint32_t>(r, in.a[2], i), what))
          return true;
        uint32_t count = in.a[1] != kNoReg ? LoadReg<uint32_t>(r, in.a[1], i) : 1;
        if (!Arrive(in, w, i, word, b, count, in.flags & 4, in.flags & 2, what)) return true;
        if (in.a[0] != kNoReg) StoreReg<uint64_t>(r, in.a[0], i, state);
        break;
      }
      case kExpectTx:
      case kCompleteTx: {
        int64_t n = LoadReg<uint32_t>(r, in.a[1], i);
        if (!AddTx(in, w, i, b, op == kExpectTx ? n : -n, what)) return true;
        if (op == kCompleteTx) MaybeCompletePhase(b);
        *word = Encode(b);
        ++w.block->mbarrier_events;
        break;
      }
      default: {
        // The phase named by the state (or parity) is complete once the current phase's parity
        // differs: the ISA allows only the current or the immediately preceding phase here.
        bool parity = (in.flags & 8) ? (LoadReg<uint32_t>(r, in.a[1], i) & 1) != 0
                                     : (LoadReg<uint64_t>(r, in.a[1], i) & kPhaseBit) != 0;
        if (parity != b.phase) done |= 1u << i;
        break;
      }
    }
  }
  if (op != kTestWait && op != kTryWait) return false;
  uint32_t& p = *RegPtr<uint32_t>(r, in.a[0]);
  p = (p & ~m) | done;
  if (done == m) return false;
  // An incomplete phase can only be completed by another thread of the block: let the other
  // warps run before this one polls again.
  ++w.pc;
  if (w.pc >= w.next_wait) w.Reschedule();
  if (w.state == WarpState::kRunning) w.state = WarpState::kYielded;
  return true;
}

// mbarrier.pending_count.b64 count, state.
bool ExecPendingCount(const Inst& in, Warp& w, uint32_t m) {
  ForLanes(m, [&](int i) {
    StoreReg<uint32_t>(w.regs, in.a[0], i,
                       static_cast<uint32_t>(LoadReg<uint64_t>(w.regs, in.a[1], i) & kCountMask));
  });
  return false;
}

MemSpace MbarSpace(const LowerCtx& c) {
  if (c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster"))
    return MemSpace::kShared;
  return MemSpace::kGeneric;
}

Status NeedAtLeast(const LowerCtx& c, size_t n) {
  if (c.ops().size() >= n) return Status::Ok();
  return c.Err("'" + c.inst().text + "' expects at least " + std::to_string(n) + " operands");
}

// Operand i as a source of type t, or kNoReg when it is absent.
StatusOr<uint32_t> OptionalSrc(LowerCtx& c, size_t i, Ty t) {
  if (i >= c.ops().size()) return kNoReg;
  return c.Src(static_cast<int>(i), t);
}

Status LowerMbarrier(LowerCtx& c) {
  if (c.Has(".pending_count")) {
    PVGPU_TRY(c.NeedOps(2));
    Inst in;
    in.fn = ExecPendingCount;
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kB64));
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kU32));
    c.Emit(in);
    return Status::Ok();
  }
  if (c.TypeMod() != Ty::kB64) return c.Unsupported("mbarrier objects are .b64");
  // Cluster scope and shared::cluster addresses name this CTA's objects: every launch here is a
  // cluster of one CTA. The release/acquire semantics need no host fence: only the block's own
  // threads use its mbarriers, and they run on one host thread.
  const bool expect_tx = c.Has(".expect_tx");
  Inst in;
  in.fn = ExecMbarrier;
  size_t addr_op = 0;
  const auto& ops = c.ops();
  if (c.Has(".init")) {
    in.aux = kInit;
  } else if (c.Has(".inval")) {
    in.aux = kInval;
  } else if (c.Has(".arrive") || c.Has(".arrive_drop")) {
    in.aux = kArrive;
    addr_op = 1;
    in.flags |= (c.Has(".noComplete") ? 2 : 0) | (c.Has(".arrive_drop") ? 4 : 0);
  } else if (expect_tx) {
    in.aux = kExpectTx;
  } else if (c.Has(".complete_tx")) {
    in.aux = kCompleteTx;
  } else if (c.Has(".test_wait") || c.Has(".try_wait")) {
    in.aux = c.Has(".try_wait") ? kTryWait : kTestWait;
    addr_op = 1;
    in.flags |= c.Has(".parity") ? 8 : 0;
  } else {
    return c.Unsupported();
  }
  PVGPU_TRY(NeedAtLeast(c, addr_op + 1));
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(ops[addr_op], MbarSpace(c)));
  if (a.space != MemSpace::kShared && a.space != MemSpace::kGeneric)
    return c.ErrAt(ops[addr_op], "an mbarrier object lives in shared memory");
  in.a[4] = a.base;
  in.flags |= a.base32 ? 1 : 0;
  in.imm = a.imm;
  in.n = static_cast<uint16_t>(a.space);
  if (in.aux == kInval) {
    PVGPU_TRY(c.NeedOps(1));
  } else if (in.aux == kInit || in.aux == kExpectTx || in.aux == kCompleteTx) {
    PVGPU_TRY(c.NeedOps(2));
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(1, Ty::kU32));
  } else if (in.aux == kArrive) {
    // state, [addr], txCount (expect_tx) or state, [addr]{, count}; .noComplete needs the count.
    if (ops.size() < 2 || ops.size() > 3 || (expect_tx && ops.size() != 3) ||
        ((in.flags & 2) && ops.size() != 3))
      return c.Err("bad operands for " + c.inst().text);
    if (expect_tx) {
      PVGPU_ASSIGN_OR_RETURN(in.a[2], c.Src(2, Ty::kU32));
    } else {
      PVGPU_ASSIGN_OR_RETURN(in.a[1], OptionalSrc(c, 2, Ty::kU32));
    }
    if (ops[0].kind != ast::Operand::Kind::kSink) {
      PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kB64));
    }
  } else {
    // waitComplete, [addr], state | phaseParity{, suspendTimeHint}. The hint bounds how long
    // hardware may suspend the thread; a wait here never suspends, it yields to other warps.
    PVGPU_TRY(NeedAtLeast(c, 3));
    if (ops.size() > (in.aux == kTryWait ? 4u : 3u))
      return c.Err("bad operands for " + c.inst().text);
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(2, (in.flags & 8) ? Ty::kU32 : Ty::kB64));
    PVGPU_ASSIGN_OR_RETURN(in.a[2], OptionalSrc(c, 3, Ty::kU32));
    PVGPU_ASSIGN_OR_RETURN(in.a[0], c.Dst(0, Ty::kPred));
  }
  c.Emit(in);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// cp.async and cp.async.bulk

// a[0] = a[1] (kNoReg: 0; flags bit0: 32-bit) + imm: an address operand folded into one 64-bit
// register, because the copies name two or three addresses and an Inst has one offset.
bool ExecAddressOf(const Inst& in, Warp& w, uint32_t m) {
  auto one = [&](int i) { StoreReg<uint64_t>(w.regs, in.a[0], i, LaneAddress(in, w, i, 1)); };
  if (m == kFullMask) {  // a whole warp: a loop without mask tests, which compiles to vectors
    for (int i = 0; i < 32; ++i) one(i);
  } else {
    ForLanes(m, one);
  }
  return false;
}

void CopyFault(Warp& w, const Inst& in, int lane, const char* role, uint64_t addr, uint32_t size,
               MemSpace s, bool misaligned) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), "cp.async: %s %u-byte %s %s at address 0x%" PRIx64,
                misaligned ? "misaligned" : "out-of-bounds", size, SpaceName(s), role, addr);
  w.Fault(misaligned ? Code::kMisalignedAddress : Code::kIllegalAddress, in, lane, buf);
}

// Host pointer for a copy's side in space s, or nullptr after a fault; `align` checks it too.
uint8_t* CopySide(Warp& w, const Inst& in, int lane, const char* role, uint64_t addr, uint32_t size,
                  MemSpace s, uint32_t align, bool writable) {
  uint8_t* p = ResolveAny(w, s, lane, addr, size, writable);
  if (!p || (addr & (align - 1))) {
    CopyFault(w, in, lane, role, addr, size, s, p != nullptr);
    return nullptr;
  }
  return p;
}

// Performs one recorded copy; false after a fault (only if memory went away since the issue).
bool PerformCopy(const Inst& in, Warp& w, const AsyncCopy& e) {
  const MemSpace src_space = e.bulk ? MemSpace::kShared : MemSpace::kGlobal;
  const MemSpace dst_space = e.bulk ? MemSpace::kGlobal : MemSpace::kShared;
  uint8_t* dst = CopySide(w, in, e.lane, "destination", e.dst, e.size, dst_space, 1, true);
  if (!dst) return false;
  if (e.src_size) {
    uint8_t* src = CopySide(w, in, e.lane, "source", e.src, e.src_size, src_space, 1, false);
    if (!src) return false;
    // Global and shared memory never overlap. cp.async's sizes (4, 8, 16) as fixed-size
    // copies, which compile to a load and a store instead of a library call.
    switch (e.src_size) {
      case 4: std::memcpy(dst, src, 4); break;
      case 8: std::memcpy(dst, src, 8); break;
      case 16: std::memcpy(dst, src, 16); break;
      default: std::memcpy(dst, src, e.src_size); break;
    }
  }
  if (e.src_size < e.size) std::memset(dst + e.src_size, 0, e.size - e.src_size);
  return true;
}

// A batch of lanes' cp.async copies (AsyncCopy::lanes) as one: true when both sides resolve as
// one range (nothing is reported otherwise: the caller then copies lane by lane, which does).
bool PerformBatch(Warp& w, const AsyncCopy& e) {
  const uint32_t bytes = e.size * e.lanes;
  uint8_t* dst = ResolveAny(w, MemSpace::kShared, e.lane, e.dst, bytes, true);
  if (dst == nullptr) return false;
  const uint8_t* src = ResolveAny(w, MemSpace::kGlobal, e.lane, e.src, bytes, false);
  if (src == nullptr) return false;
  std::memcpy(dst, src, bytes);
  return true;
}

// Performs, in issue order, the pending copies (bulk ones when `bulk`) of the lanes in m whose
// group lies below limit[lane], and drops them from the list. False after a fault.
bool PerformBelow(const Inst& in, Warp& w, uint32_t m, const uint32_t* limit, bool bulk) {
  std::vector<AsyncCopy>& v = w.async_copies;
  auto due = [&](const AsyncCopy& e, int lane) {
    return e.bulk == bulk && ((m >> lane) & 1) && e.group < limit[lane];
  };
  auto lane_of = [](const AsyncCopy& e, int k) {
    AsyncCopy one = e;
    one.lanes = 1;
    one.lane = static_cast<uint8_t>(e.lane + k);
    one.src += uint64_t{e.size} * static_cast<uint64_t>(k);
    one.dst += uint64_t{e.size} * static_cast<uint64_t>(k);
    return one;
  };
  size_t keep = 0;
  std::vector<AsyncCopy> split;  // the lanes of a batch that stay, in lane order
  for (size_t k = 0; k < v.size(); ++k) {
    const AsyncCopy e = v[k];
    if (e.lanes == 1) {
      if (due(e, e.lane)) {
        if (!PerformCopy(in, w, e)) return false;
        continue;
      }
      v[keep++] = e;
      continue;
    }
    int n_due = 0;
    for (int i = 0; i < e.lanes; ++i) n_due += due(e, e.lane + i);
    if (n_due == 0) {
      v[keep++] = e;
      continue;
    }
    if (n_due == e.lanes) {
      // One copy for all of them (the sides checked as one range); where that fails, lane by
      // lane, which reports the first lane at fault after the earlier lanes' copies.
      if (!PerformBatch(w, e)) {
        for (int i = 0; i < e.lanes; ++i)
          if (!PerformCopy(in, w, lane_of(e, i))) return false;
      }
      continue;
    }
    // Some lanes due (a divergent wait): perform those, keep the others as single copies.
    split.clear();
    for (int i = 0; i < e.lanes; ++i) {
      const AsyncCopy one = lane_of(e, i);
      if (due(one, one.lane)) {
        if (!PerformCopy(in, w, one)) return false;
      } else {
        split.push_back(one);
      }
    }
    // keep <= k, and the batch's slot k is free: the kept lanes go in its place, and what
    // follows moves up behind them.
    std::vector<AsyncCopy> tail(v.begin() + static_cast<std::ptrdiff_t>(k) + 1, v.end());
    v.resize(keep);
    v.insert(v.end(), split.begin(), split.end());
    keep = v.size();
    v.insert(v.end(), tail.begin(), tail.end());
    k = keep - 1;
  }
  v.resize(keep);
  return true;
}

// cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size | ignore-src}.
// a[4]: destination (64-bit, shared offset), a[3]: source (64-bit, global), a[1]: src-size
// (kNoReg: cp-size), a[2]: ignore-src predicate (kNoReg: none); n: cp-size.
bool ExecCpAsync(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const uint32_t size = in.n;
  if (m == kFullMask && in.a[2] == kNoReg) {
    // Each half-warp copying consecutive elements to consecutive elements, all in one
    // async-group (a tile's rows, the common form), is recorded as one copy per half when its
    // ranges check as one.
    AsyncCopy half[2];
    bool batch = true;
    for (int h = 0; h < 2 && batch; ++h) {
      const int first = 16 * h;
      const uint64_t dst0 = LoadReg<uint64_t>(r, in.a[4], first);
      const uint64_t src0 = LoadReg<uint64_t>(r, in.a[3], first);
      batch = (dst0 & (size - 1)) == 0 && (src0 & (size - 1)) == 0;
      for (int i = 0; i < 16 && batch; ++i) {
        // Consecutive on both sides, one group, and no zero fill (all of its cp-size).
        batch = LoadReg<uint64_t>(r, in.a[4], first + i) == dst0 + uint64_t{size} * i &&
                LoadReg<uint64_t>(r, in.a[3], first + i) == src0 + uint64_t{size} * i &&
                w.async_groups[first + i] == w.async_groups[0] &&
                (in.a[1] == kNoReg || LoadReg<uint32_t>(r, in.a[1], first + i) == size);
      }
      batch = batch && ResolveAny(w, MemSpace::kShared, first, dst0, 16 * size, true) != nullptr &&
              ResolveAny(w, MemSpace::kGlobal, first, src0, 16 * size, false) != nullptr;
      half[h] = AsyncCopy{src0, dst0, size, size, w.async_groups[0],
                          static_cast<uint8_t>(first), false};
      half[h].lanes = 16;
    }
    if (batch) {
      w.async_copies.push_back(half[0]);
      w.async_copies.push_back(half[1]);
      return false;
    }
  }
  for (uint32_t t = m; t; t &= t - 1) {
    const int i = __builtin_ctz(t);
    uint64_t dst = LoadReg<uint64_t>(r, in.a[4], i), src = LoadReg<uint64_t>(r, in.a[3], i);
    uint32_t src_size = in.a[1] != kNoReg ? LoadReg<uint32_t>(r, in.a[1], i) : size;
    if (in.a[2] != kNoReg && ((*RegPtr<uint32_t>(r, in.a[2]) >> i) & 1)) src_size = 0;
    if (src_size > size) {
      w.Fault(Code::kIllegalInstruction, in, i,
              "cp.async: src-size " + std::to_string(src_size) + " exceeds cp-size " +
                  std::to_string(size));
      return true;
    }
    if (!CopySide(w, in, i, "destination", dst, size, MemSpace::kShared, size, true)) return true;
    if (src_size && !CopySide(w, in, i, "source", src, src_size, MemSpace::kGlobal, size, false))
      return true;
    w.async_copies.push_back(
        AsyncCopy{src, dst, size, src_size, w.async_groups[i], static_cast<uint8_t>(i), false});
  }
  return false;
}

// cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size: a[4] destination (global),
// a[3] source (shared), a[1] size; recorded in the lane's current bulk async-group.
bool ExecBulkToGlobal(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  for (uint32_t t = m; t; t &= t - 1) {
    const int i = __builtin_ctz(t);
    uint64_t dst = LoadReg<uint64_t>(r, in.a[4], i), src = LoadReg<uint64_t>(r, in.a[3], i);
    uint32_t size = LoadReg<uint32_t>(r, in.a[1], i);
    if (size == 0 || size % 16) {
      w.Fault(Code::kIllegalInstruction, in, i,
              "cp.async.bulk: size " + std::to_string(size) + " is not a multiple of 16");
      return true;
    }
    if (!CopySide(w, in, i, "destination", dst, size, MemSpace::kGlobal, 16, true) ||
        !CopySide(w, in, i, "source", src, size, MemSpace::kShared, 16, false))
      return true;
    w.async_copies.push_back(
        AsyncCopy{src, dst, size, size, w.bulk_groups[i], static_cast<uint8_t>(i), true});
  }
  return false;
}

// cp.async.bulk.shared::cluster.{global,shared::cta}.mbarrier::complete_tx::bytes
//   [dst], [src], size, [mbar]
// a[4] destination (shared), a[3] source (n: its space), a[1] size, a[5] mbarrier (64-bit
// shared offset). The copy is performed at issue and completes its bytes on the mbarrier at
// once: its completion is observable only through that mbarrier's phase, whose
// tx-count may go negative until the expect_tx arrives, so this is one of the orders hardware
// may produce.
bool ExecBulkToShared(const Inst& in, Warp& w, uint32_t m) {
  uint8_t* r = w.regs;
  const auto src_space = static_cast<MemSpace>(in.n);
  const char* what = "cp.async.bulk";
  for (uint32_t t = m; t; t &= t - 1) {
    const int i = __builtin_ctz(t);
    uint64_t dst = LoadReg<uint64_t>(r, in.a[4], i), src = LoadReg<uint64_t>(r, in.a[3], i);
    uint32_t size = LoadReg<uint32_t>(r, in.a[1], i);
    if (size == 0 || size % 16) {
      w.Fault(Code::kIllegalInstruction, in, i,
              "cp.async.bulk: size " + std::to_string(size) + " is not a multiple of 16");
      return true;
    }
    uint8_t* d = CopySide(w, in, i, "destination", dst, size, MemSpace::kShared, 16, true);
    if (!d) return true;
    uint8_t* s = CopySide(w, in, i, "source", src, size, src_space, 16, false);
    if (!s) return true;
    uint64_t mbar = LoadReg<uint64_t>(r, in.a[5], i);
    uint8_t* p = Resolve<MemSpace::kShared>(w, i, mbar, 8, true);
    if (!p || (mbar & 7)) {
      CopyFault(w, in, i, "mbarrier", mbar, 8, MemSpace::kShared, p != nullptr);
      return true;
    }
    uint64_t* word = reinterpret_cast<uint64_t*>(p);
    Mbar b = Decode(*word);
    if (!b.valid) return MbarFault(w, in, i, what, "the mbarrier object is not initialized");
    std::memmove(d, s, size);
    if (!AddTx(in, w, i, b, -static_cast<int64_t>(size), what)) return true;
    MaybeCompletePhase(b);
    *word = Encode(b);
    ++w.block->mbarrier_events;
  }
  return false;
}

// cp.async.commit_group / cp.async.bulk.commit_group; flags bit0: bulk.
bool ExecCommitGroup(const Inst& in, Warp& w, uint32_t m) {
  uint32_t* groups = (in.flags & 1) ? w.bulk_groups : w.async_groups;
  ForLanes(m, [&](int i) { ++groups[i]; });
  return false;
}

// cp.async.wait_group N / cp.async.wait_all / cp.async.bulk.wait_group{.read} N: performs
// every copy of the lane's committed groups except the newest N. aux: N; flags bit0: bulk,
// bit1: commit first (wait_all).
bool ExecWaitGroup(const Inst& in, Warp& w, uint32_t m) {
  const bool bulk = in.flags & 1;
  uint32_t* groups = bulk ? w.bulk_groups : w.async_groups;
  uint32_t limit[32] = {};
  ForLanes(m, [&](int i) {
    if (in.flags & 2) ++groups[i];
    limit[i] = groups[i] >= in.aux ? groups[i] - static_cast<uint32_t>(in.aux) : 0;
  });
  return !PerformBelow(in, w, m, limit, bulk);
}

// cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar]: the lane's cp.async copies complete, then
// the arrive-on they trigger happens. Without .noinc the pending count was raised by one for
// it first, so the arrival leaves the count as it was. a[4]/imm/flags bit0: the mbarrier
// address as for ExecMbarrier; flags bit4: .noinc.
bool ExecCpAsyncArrive(const Inst& in, Warp& w, uint32_t m) {
  const char* what = "cp.async.mbarrier.arrive";
  uint32_t all[32];
  for (uint32_t& x : all) x = UINT32_MAX;
  for (uint32_t t = m; t; t &= t - 1) {
    const int i = __builtin_ctz(t);
    uint64_t* word;
    Mbar b;
    if (!LoadMbar(in, w, i, what, &word, &b)) return true;
  }
  if (!PerformBelow(in, w, m, all, false)) return true;
  if (!(in.flags & 16)) return false;
  for (uint32_t t = m; t; t &= t - 1) {
    const int i = __builtin_ctz(t);
    uint64_t* word;
    Mbar b;
    if (!LoadMbar(in, w, i, what, &word, &b) || !Arrive(in, w, i, word, b, 1, false, false, what))
      return true;
  }
  return false;
}

// Folds address operand o (in `space`) into a 64-bit register; *space_out: the space it
// resolved to.
StatusOr<uint32_t> AddressReg(LowerCtx& c, const ast::Operand& o, MemSpace space,
                              MemSpace* space_out = nullptr) {
  PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(o, space));
  if (space_out) *space_out = a.space;
  Inst in;
  in.fn = ExecAddressOf;
  in.a[1] = a.base;
  in.flags = a.base32 ? 1 : 0;
  in.imm = a.imm;
  in.a[0] = c.Temp('d');
  c.Emit(in);
  return in.a[0];
}

StatusOr<uint64_t> ImmediateOp(LowerCtx& c, size_t i) {
  PVGPU_TRY(NeedAtLeast(c, i + 1));
  const ast::Operand& o = c.ops()[i];
  if (o.kind != ast::Operand::Kind::kInt) return c.ErrAt(o, "expected an integer constant");
  return o.value;
}

// The cache-policy operand of .L2::cache_hint (the last one) must name a 64-bit value; the
// hint itself changes nothing here.
Status CheckCachePolicy(LowerCtx& c) {
  if (!c.Has(".L2::cache_hint")) return Status::Ok();
  PVGPU_ASSIGN_OR_RETURN(uint32_t policy, c.Src(static_cast<int>(c.ops().size() - 1), Ty::kB64));
  (void)policy;
  return Status::Ok();
}

MemSpace SharedSpace(const LowerCtx& c) {
  return c.Has(".shared") || c.Has(".shared::cta") || c.Has(".shared::cluster")
             ? MemSpace::kShared
             : MemSpace::kGeneric;
}

Status LowerCpAsyncCopy(LowerCtx& c) {
  if (!c.Has(".ca") && !c.Has(".cg")) return c.Unsupported();
  if (!c.Has(".global") || SharedSpace(c) != MemSpace::kShared) return c.Unsupported();
  PVGPU_ASSIGN_OR_RETURN(uint64_t size, ImmediateOp(c, 2));
  if (size != 4 && size != 8 && size != 16) return c.Err("cp.async cp-size must be 4, 8 or 16");
  if (c.Has(".cg") && size != 16) return c.Err("cp.async.cg copies 16 bytes");
  // The operands after cp-size: src-size or the ignore-src predicate, then the cache policy
  // when .L2::cache_hint is given. Cache and prefetch hints change nothing here.
  const size_t extra = c.ops().size() - 3 - (c.Has(".L2::cache_hint") ? 1 : 0);
  if (c.ops().size() < 3 || extra > 1) return c.Err("bad operands for " + c.inst().text);
  Inst in;
  in.fn = ExecCpAsync;
  in.n = static_cast<uint16_t>(size);
  if (extra == 1) {
    const ast::Operand& o = c.ops()[3];
    StatusOr<uint32_t> pred =
        o.kind == ast::Operand::Kind::kReg || o.kind == ast::Operand::Kind::kSymbol
            ? c.Src(3, Ty::kPred)
            : StatusOr<uint32_t>(Status(Code::kInvalidPtx, ""));
    if (pred.ok()) {
      in.a[2] = *pred;
    } else {
      PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(3, Ty::kU32));
    }
  }
  PVGPU_TRY(CheckCachePolicy(c));
  PVGPU_ASSIGN_OR_RETURN(in.a[4], AddressReg(c, c.ops()[0], MemSpace::kShared));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], AddressReg(c, c.ops()[1], MemSpace::kGlobal));
  c.Emit(in);
  return Status::Ok();
}

Status LowerBulk(LowerCtx& c) {
  if (c.Has(".tensor")) return c.Unsupported("tensor copies (a tensor map)");
  if (c.Has(".commit_group")) {
    Inst in;
    in.fn = ExecCommitGroup;
    in.flags = 1;
    c.Emit(in);
    return Status::Ok();
  }
  if (c.Has(".wait_group")) {
    Inst in;
    in.fn = ExecWaitGroup;
    in.flags = 1;
    PVGPU_ASSIGN_OR_RETURN(in.aux, ImmediateOp(c, 0));
    c.Emit(in);
    return Status::Ok();
  }
  if (c.Has(".prefetch")) {
    // A hint: nothing to check or do.
    Inst in;
    in.fn = [](const Inst&, Warp&, uint32_t) { return false; };
    c.Emit(in);
    return Status::Ok();
  }
  if (c.Has(".multicast::cluster") || c.Has(".cp_mask")) return c.Unsupported();
  PVGPU_TRY(NeedAtLeast(c, 3));
  const size_t hint = c.Has(".L2::cache_hint") ? 1 : 0;
  Inst in;
  if (c.Has(".bulk_group")) {
    // global <- shared::cta
    if (!c.Has(".global") || !c.Has(".shared::cta") || c.ops().size() != 3 + hint)
      return c.Unsupported();
    in.fn = ExecBulkToGlobal;
    PVGPU_TRY(CheckCachePolicy(c));
    PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(2, Ty::kU32));
    PVGPU_ASSIGN_OR_RETURN(in.a[4], AddressReg(c, c.ops()[0], MemSpace::kGlobal));
    PVGPU_ASSIGN_OR_RETURN(in.a[3], AddressReg(c, c.ops()[1], MemSpace::kShared));
    c.Emit(in);
    return Status::Ok();
  }
  if (!c.Has(".mbarrier::complete_tx::bytes") || c.ops().size() != 4 + hint) return c.Unsupported();
  // [dst] in mods[2] (shared::cluster, or shared::cta), [src] in mods[3] (global or shared::cta).
  const auto& mods = c.inst().mods;
  if (mods.size() < 4 || (mods[2] != ".shared::cluster" && mods[2] != ".shared::cta"))
    return c.Unsupported();
  const MemSpace src = mods[3] == ".global"        ? MemSpace::kGlobal
                       : mods[3] == ".shared::cta" ? MemSpace::kShared
                                                   : MemSpace::kGeneric;
  if (src == MemSpace::kGeneric) return c.Unsupported();
  in.fn = ExecBulkToShared;
  in.n = static_cast<uint16_t>(src);
  PVGPU_TRY(CheckCachePolicy(c));
  PVGPU_ASSIGN_OR_RETURN(in.a[1], c.Src(2, Ty::kU32));
  PVGPU_ASSIGN_OR_RETURN(in.a[4], AddressReg(c, c.ops()[0], MemSpace::kShared));
  PVGPU_ASSIGN_OR_RETURN(in.a[3], AddressReg(c, c.ops()[1], src));
  PVGPU_ASSIGN_OR_RETURN(in.a[5], AddressReg(c, c.ops()[3], MemSpace::kShared));
  c.Emit(in);
  return Status::Ok();
}

Status LowerCp(LowerCtx& c) {
  if (c.inst().mods.empty() || c.inst().mods[0] != ".async") return c.Unsupported();
  if (c.Has(".bulk")) return LowerBulk(c);
  Inst in;
  if (c.Has(".commit_group")) {
    in.fn = ExecCommitGroup;
  } else if (c.Has(".wait_group")) {
    in.fn = ExecWaitGroup;
    PVGPU_ASSIGN_OR_RETURN(in.aux, ImmediateOp(c, 0));
  } else if (c.Has(".wait_all")) {
    in.fn = ExecWaitGroup;
    in.flags = 2;
  } else if (c.Has(".mbarrier") && c.Has(".arrive")) {
    if (c.TypeMod() != Ty::kB64) return c.Unsupported("mbarrier objects are .b64");
    PVGPU_TRY(c.NeedOps(1));
    PVGPU_ASSIGN_OR_RETURN(Addr a, c.Address(c.ops()[0], SharedSpace(c)));
    if (a.space != MemSpace::kShared && a.space != MemSpace::kGeneric)
      return c.ErrAt(c.ops()[0], "an mbarrier object lives in shared memory");
    in.fn = ExecCpAsyncArrive;
    in.a[4] = a.base;
    in.flags = (a.base32 ? 1 : 0) | (c.Has(".noinc") ? 16 : 0);
    in.imm = a.imm;
    in.n = static_cast<uint16_t>(a.space);
  } else {
    return LowerCpAsyncCopy(c);
  }
  c.Emit(in);
  return Status::Ok();
}

}  // namespace

bool FinishAsyncCopies(const Inst& in, Warp& w, uint32_t lanes) {
  uint32_t all[32];
  for (uint32_t& x : all) x = UINT32_MAX;
  return PerformBelow(in, w, lanes, all, false) && PerformBelow(in, w, lanes, all, true);
}

void RegisterAsync(OpTable& t) {
  t.Add("cp", LowerCp);
  t.Add("mbarrier", LowerMbarrier);
}

}  // namespace pvgpu::ptx
