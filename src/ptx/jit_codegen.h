// Between the compiling engine's runtime (jit_runtime.cc) and its code generator (jit.cc,
// built only with LLVM; jit_none.cc otherwise).
#pragma once

#include <memory>

#include "common/status.h"
#include "ptx/jit.h"

namespace pvgpu::ptx {

// What compiled code calls back into; addresses are fixed for the process.
struct JitHelpers {
  void (*step)(Warp* w);           // one interpreter step at w->pc
  void (*resched)(Warp* w);        // w->Reschedule()
  void (*after_handler)(Warp* w);  // a handler returned true and the warp still runs
  int (*check_stop)(Warp* w);      // 1: the launch stopped, the warp is done
  uint8_t* (*global_range)(Warp* w, uint64_t lo, uint64_t end);
};
const JitHelpers& TheJitHelpers();

struct CompiledCode {
  JitEntry entry = nullptr;
  std::shared_ptr<void> keep_alive;  // releases the code when the last holder goes
  JitStats stats;
};

// Compiles one kernel image (its code array is read at run time through JitArgs::code, so the
// image compiled may be a copy of the one that runs).
StatusOr<CompiledCode> CompileImage(const KernelImage& img);

}  // namespace pvgpu::ptx
