// The interpreter loop, shared by RunWarp (warp.cc) and the time-sliced form cooperative
// launches use (block_run.cc). Two instantiations rather than a run-time test keep the
// ordinary loop's code exactly what it was.
#pragma once

#include "ptx/warp.h"

namespace pvgpu::ptx {

// Runs the warp until it finishes, blocks at a barrier, faults or the launch stops; with
// kSliced also until it has run 4096 instructions, so that its worker can run other blocks.
template <bool kSliced>
inline void RunWarpLoop(Warp& w) {
  const Inst* code = w.code;
  uint32_t budget = 4096;
  while (w.state == WarpState::kRunning) {
    if (--budget == 0) {
      budget = 4096;
      if (w.launch->Stopped()) {
        if (!w.launch->failed.load()) {
          w.launch->Fail(
              Status(Code::kLaunchFailed, "launch cancelled in kernel " + w.launch->image->name));
        }
        w.state = WarpState::kDone;
        return;
      }
      if constexpr (kSliced) return;
    }
    const Inst& in = code[w.pc];
    uint32_t m = w.active;
    if (in.guard != kNoReg) {
      uint32_t p = *RegPtr<uint32_t>(w.regs, in.guard);
      m &= in.guard_neg ? ~p : p;
    }
    if (m != 0 && in.fn(in, w, m)) {
      if (w.state != WarpState::kRunning) return;
      if (w.active == 0 || w.pc >= w.next_wait) w.Reschedule();
      continue;
    }
    ++w.pc;
    if (w.pc >= w.next_wait) w.Reschedule();
  }
}

}  // namespace pvgpu::ptx
