#include "ptx/block_run.h"

#include <algorithm>
#include <cstring>

#include "ptx/program.h"
#include "ptx/warp_loop.h"

namespace pvgpu::ptx {

void RunWarp(Warp& w);

namespace {

uint8_t* Aligned64(std::vector<uint8_t>& v, size_t bytes) {
  if (v.size() < bytes + 64) v.resize(bytes + 64);
  uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<uint8_t*>((p + 63) & ~uintptr_t{63});
}

size_t RegStride(const KernelImage& img) { return (img.reg_bytes + 63) & ~size_t{63}; }

Status Deadlock(const LaunchCtx& L) {
  return Status(Code::kLaunchFailed, "barrier deadlock in kernel " + L.image->name +
                                         ": every live warp waits at a barrier");
}

// Rounds in which every runnable warp waited on an mbarrier phase and no mbarrier changed
// before an ordinary launch reports a deadlock. Only this block's threads can complete its
// mbarriers, so such rounds repeat until a wait loop gives up by itself (a retry limit): the
// bound leaves those loops ample room.
constexpr uint32_t kMaxIdleMbarrierRounds = 1u << 20;

}  // namespace

uint64_t BlockScratchBytes(const LaunchCtx& L) {
  const KernelImage& img = *L.image;
  return uint64_t{RegStride(img)} * L.num_warps + uint64_t{img.local_bytes} * 32 * L.num_warps +
         L.shared_bytes;
}

void StartBlock(LaunchCtx& L, uint64_t linear, Block& block, Scratch& s) {
  const KernelImage& img = *L.image;
  const Dim3& g = L.config.grid;
  const Dim3& bd = L.config.block;
  block.ctaid =
      Dim3{static_cast<uint32_t>(linear % g.x), static_cast<uint32_t>((linear / g.x) % g.y),
           static_cast<uint32_t>(linear / (uint64_t{g.x} * g.y))};
  const uint32_t nthreads = static_cast<uint32_t>(bd.Count());
  const uint32_t nwarps = L.num_warps;
  block.shared_size = L.shared_bytes;
  block.shared = Aligned64(s.shared, L.shared_bytes);
  std::memset(block.shared, 0, L.shared_bytes);
  block.live_threads = nthreads;
  block.mbarrier_events = 0;
  const size_t reg_stride = RegStride(img);
  uint8_t* regs = Aligned64(s.regs, reg_stride * nwarps);
  uint8_t* local = Aligned64(s.local, size_t{img.local_bytes} * nwarps * 32);
  s.warps.resize(nwarps);
  block.warps = &s.warps;
  // Register files are initialized once per worker and launch: constants and special
  // registers are never written by kernels, and other registers start undefined in PTX, so
  // later blocks of the same launch only refresh the block-dependent slots.
  const bool fresh = s.launch_id != L.id;
  s.launch_id = L.id;
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = s.warps[wi];
    w.regs = regs + reg_stride * wi;
    if (fresh) std::memcpy(w.regs, L.reg_template.data(), img.reg_bytes);
    w.local = local + size_t{img.local_bytes} * 32 * wi;
    w.local_stride = img.local_bytes;
    w.code = img.code.data();
    w.pc = 0;
    w.blocked = 0;
    std::memset(w.bar_wait, 0, sizeof(w.bar_wait));
    w.warp_id = wi;
    w.block = &block;
    w.launch = &L;
    w.cache = &s.cache;
    w.worker = s.index;
    uint32_t lanes = std::min<uint32_t>(32, nthreads - wi * 32);
    w.live = lanes == 32 ? kFullMask : ((1u << lanes) - 1);
    w.active = w.live;
    w.next_wait = UINT32_MAX;
    w.state = WarpState::kRunning;
    w.uniform_wait = false;
    w.has_called = false;
    w.spins = 0;
    w.async_copies.clear();
    std::memset(w.async_groups, 0, sizeof(w.async_groups));
    std::memset(w.bulk_groups, 0, sizeof(w.bulk_groups));
    for (int i = 0; i < 32; ++i) {
      w.lane_pc[i] = 0;
      w.stack[i].clear();
    }
    const SpecialSlots& sp = img.sp;
    auto put = [&](uint32_t off, int lane, uint32_t v) {
      StoreReg<uint32_t>(w.regs, off, lane, v);
    };
    for (int i = 0; i < 32; ++i) {
      put(sp.ctaid[0], i, block.ctaid.x);
      put(sp.ctaid[1], i, block.ctaid.y);
      put(sp.ctaid[2], i, block.ctaid.z);
      StoreReg<uint64_t>(w.regs, sp.fp, i, 0);
    }
    for (int i = 0; i < 32 && fresh; ++i) {
      uint32_t t = wi * 32 + i;
      put(sp.tid[0], i, t % bd.x);
      put(sp.tid[1], i, (t / bd.x) % bd.y);
      put(sp.tid[2], i, t / (bd.x * bd.y));
      put(sp.ntid[0], i, bd.x);
      put(sp.ntid[1], i, bd.y);
      put(sp.ntid[2], i, bd.z);
      put(sp.nctaid[0], i, g.x);
      put(sp.nctaid[1], i, g.y);
      put(sp.nctaid[2], i, g.z);
      put(sp.laneid, i, i);
      put(sp.warpid, i, wi);
      put(sp.nwarpid, i, nwarps);
      put(sp.smid, i, s.index);
      put(sp.nsmid, i, 1024);
      put(sp.lanemask_eq, i, 1u << i);
      put(sp.lanemask_lt, i, (1u << i) - 1);
      put(sp.lanemask_le, i, i == 31 ? kFullMask : (2u << i) - 1);
      put(sp.lanemask_gt, i, i == 31 ? 0 : ~((2u << i) - 1));
      put(sp.lanemask_ge, i, ~((1u << i) - 1));
      put(sp.dynamic_smem, i, L.config.dynamic_shared_bytes);
      put(sp.total_smem, i, L.user_shared_bytes);
      StoreReg<uint64_t>(w.regs, sp.gridid, i, 1);
    }
  }
}

void FinishBlock(LaunchCtx& L, Scratch& s) {
  // Round-robin over warps; each runs until it exits, waits at a barrier or yields in an
  // mbarrier wait whose phase is incomplete.
  const Block* block = s.warps.empty() ? nullptr : s.warps[0].block;
  uint32_t idle_rounds = 0;
  while (!L.failed.load(std::memory_order_relaxed)) {
    bool progress = false, all_done = true, only_waits = true;
    const uint64_t events = block ? block->mbarrier_events : 0;
    for (Warp& w : s.warps) {
      if (w.state == WarpState::kYielded) w.state = WarpState::kRunning;
      if (w.state == WarpState::kRunning) {
        if (w.active == 0) w.Reschedule();
        if (w.state == WarpState::kRunning) {
          RunWarp(w);
          progress = true;
          only_waits &= w.state == WarpState::kYielded;
        }
      }
      if (w.state != WarpState::kDone) all_done = false;
      if (L.failed.load(std::memory_order_relaxed)) return;
    }
    if (all_done) return;
    if (!progress) {
      L.Fail(Deadlock(L));
      return;
    }
    idle_rounds = only_waits && block->mbarrier_events == events ? idle_rounds + 1 : 0;
    if (idle_rounds >= kMaxIdleMbarrierRounds) {
      L.Fail(Status(Code::kLaunchFailed, "mbarrier deadlock in kernel " + L.image->name +
                                             ": every live warp waits on an mbarrier phase "
                                             "that no thread can complete"));
      return;
    }
  }
}

SliceEnd RunBlockSlice(LaunchCtx& L, Scratch& s) {
  // A warp that yields in a spin loop returns long before RunWarp's own cancellation check, so
  // every slice looks.
  if (L.Stopped()) {
    if (!L.failed.load()) {
      L.Fail(Status(Code::kLaunchFailed, "launch cancelled in kernel " + L.image->name));
    }
    return SliceEnd::kFinished;
  }
  bool progress = false, all_done = true, waiting = false;
  for (Warp& w : s.warps) {
    if (w.state == WarpState::kYielded) w.state = WarpState::kRunning;
    if (w.state == WarpState::kRunning) {
      if (w.active == 0) w.Reschedule();
      if (w.state == WarpState::kRunning) {
        RunWarpLoop<true>(w);
        progress = true;
        waiting |= w.state == WarpState::kYielded;
      }
    }
    if (w.state != WarpState::kDone) all_done = false;
    if (L.failed.load(std::memory_order_relaxed)) return SliceEnd::kFinished;
  }
  if (all_done) return SliceEnd::kFinished;
  if (!progress) {
    L.Fail(Deadlock(L));
    return SliceEnd::kFinished;
  }
  return waiting ? SliceEnd::kWaiting : SliceEnd::kMore;
}

}  // namespace pvgpu::ptx
