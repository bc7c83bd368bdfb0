// Warp scheduling: the interpreter loop, min-pc reconvergence, barriers and fault reports.
//
// Divergence: every lane has a pc; the warp always executes the group of runnable lanes with
// the lowest pc. For the structured control flow nvcc emits, lanes that branched forward wait
// until the others reach the same pc, so they reconverge at the join point (the immediate
// post-dominator) without a reconvergence stack, and warp-synchronous instructions after a
// divergent region see the full warp as on hardware.
#include "ptx/warp.h"

#include <algorithm>
#include <cstdio>

#include "ptx/families.h"
#include "ptx/jit.h"
#include "ptx/program.h"
#include "ptx/warp_loop.h"

namespace pvgpu::ptx {

void Warp::Reschedule() {
  for (uint32_t m = active; m; m &= m - 1) lane_pc[__builtin_ctz(m)] = pc;
  const uint32_t runnable = live & ~blocked;
  if (runnable == 0) {
    active = 0;
    next_wait = UINT32_MAX;
    if (state == WarpState::kRunning) state = live ? WarpState::kBlocked : WarpState::kDone;
    return;
  }
  // Lanes deeper in a call chain go first: they must return before the callers' pcs mean
  // anything relative to theirs (the callee's code may sit anywhere in the image).
  uint32_t cand = runnable;
  if (has_called) {
    size_t deepest = 0;
    for (uint32_t m = runnable; m; m &= m - 1)
      deepest = std::max(deepest, stack[__builtin_ctz(m)].size());
    cand = 0;
    for (uint32_t m = runnable; m; m &= m - 1) {
      int i = __builtin_ctz(m);
      if (stack[i].size() == deepest) cand |= 1u << i;
    }
  }
  // Branch-free passes over the 32 lanes (they vectorize): lowest pc, its lanes, next pc.
  uint32_t key[32];
  for (int i = 0; i < 32; ++i) key[i] = ((cand >> i) & 1) ? lane_pc[i] : UINT32_MAX;
  uint32_t best = UINT32_MAX;
  for (int i = 0; i < 32; ++i) best = key[i] < best ? key[i] : best;
  uint32_t second = UINT32_MAX;
  int32_t eq[32];
  for (int i = 0; i < 32; ++i) {
    eq[i] = -static_cast<int32_t>(key[i] == best);
    uint32_t k = key[i] == best ? UINT32_MAX : key[i];
    second = k < second ? k : second;
  }
  pc = best;
  active = PackLaneMask(eq) & cand;
  next_wait = second;
}

void Warp::Fault(Code code_value, const Inst& in, int lane, const std::string& what) {
  const KernelImage& img = *launch->image;
  uint32_t p = PcOf(in);
  const DebugInfo* dbg = p < img.debug.size() ? &img.debug[p] : nullptr;
  const Dim3& b = launch->config.block;
  uint32_t t = warp_id * 32 + static_cast<uint32_t>(lane < 0 ? 0 : lane);
  char buf[256];
  std::snprintf(
      buf, sizeof(buf), " in kernel %s, PTX line %d (%s), block (%u,%u,%u), thread (%u,%u,%u)",
      img.name.c_str(), dbg ? dbg->line : 0, dbg ? dbg->text.c_str() : "?", block->ctaid.x,
      block->ctaid.y, block->ctaid.z, t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
  launch->Fail(Status(code_value, what + buf));
  state = WarpState::kDone;
  active = 0;
}

void Block::MaybeRelease(int id) {
  Barrier& b = bars[id];
  uint32_t expected = b.expected ? b.expected : live_threads;
  if (b.arrived == 0 || b.arrived < expected) return;
  b.arrived = 0;
  b.expected = 0;
  b.res_popc = b.red_popc;
  b.res_and = b.red_and;
  b.res_or = b.red_or;
  b.red_popc = 0;
  b.red_and = true;
  b.red_or = false;
  for (Warp& w : *warps) {
    uint32_t waiting = w.bar_wait[id];
    if (!waiting) continue;
    w.bar_wait[id] = 0;
    w.blocked &= ~waiting;
    if (w.uniform_wait) {
      w.uniform_wait = false;
      w.active = w.live & ~w.blocked;
      w.next_wait = UINT32_MAX;
    }
    if (w.state == WarpState::kBlocked) w.state = WarpState::kRunning;
  }
}

uint8_t* TranslateGlobal(Warp& w, uint64_t addr, uint32_t size) {
  TranslateCache& c = *w.cache;
  uint64_t end = addr + size;
  if (addr >= c.lo && end <= c.hi && end >= addr) return c.host + (addr - c.lo);
  if (addr >= kWindowFloor || end < addr || w.launch->env.memory == nullptr) return nullptr;
  AddressSpace::Range r;
  if (!w.launch->env.memory->Lookup(addr, size, &r) || r.host == nullptr) return nullptr;
  if (addr < r.base || end > r.base + r.size) return nullptr;
  c.lo = r.base;
  c.hi = r.base + r.size;
  c.host = r.host;
  return r.host + (addr - r.base);
}

// Runs the warp until it finishes, blocks at a barrier, faults or the launch stops.
void RunWarp(Warp& w) {
  JitEntry entry = w.launch->jit;
  if (entry == nullptr && w.launch->jit_pending != nullptr) entry = ReadyEntry(*w.launch->jit_pending);
  if (entry != nullptr) {
    // The compiled code keeps the interpreter's state exactly, so it may take over a warp
    // the interpreter has run so far, at any pc.
    RunCompiledWarp(entry, w);
    return;
  }
  RunWarpLoop<false>(w);
}

}  // namespace pvgpu::ptx
