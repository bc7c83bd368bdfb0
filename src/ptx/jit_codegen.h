// Between the compiling engine's runtime (jit_runtime.cc) and its code generator (jit.cc,
// built only with LLVM; jit_none.cc otherwise).
#pragma once

#include <memory>

#include "common/status.h"
#include "ptx/jit.h"

namespace pvgpu::ptx {

// What compiled code calls back into. The code names them by symbol (kHelper*), bound to these
// addresses when it is linked into the process (so object code does not depend on where this
// process has them, and can be cached on disk).
struct JitHelpers {
  void (*step)(Warp* w);           // one interpreter step at w->pc
  void (*resched)(Warp* w);        // w->Reschedule()
  void (*after_handler)(Warp* w);  // a handler returned true and the warp still runs
  int (*check_stop)(Warp* w);      // 1: the launch stopped, the warp is done
  uint8_t* (*global_range)(Warp* w, uint64_t lo, uint64_t end);
};
const JitHelpers& TheJitHelpers();
inline constexpr const char* kHelperStep = "pvgpu_jit_step";
inline constexpr const char* kHelperResched = "pvgpu_jit_resched";
inline constexpr const char* kHelperAfterHandler = "pvgpu_jit_after_handler";
inline constexpr const char* kHelperCheckStop = "pvgpu_jit_check_stop";
inline constexpr const char* kHelperGlobalRange = "pvgpu_jit_global_range";

struct CompiledCode {
  JitEntry entry = nullptr;
  std::shared_ptr<void> keep_alive;  // releases the code when the last holder goes
  JitStats stats;
};

// Compiles one kernel image (its code array is read at run time through JitArgs::code, so the
// image compiled may be a copy of the one that runs). Identical code is shared with a live
// earlier compilation and, when use_cache, taken from the disk cache (jit_cache.h).
StatusOr<CompiledCode> CompileImage(const KernelImage& img, bool use_cache = true);

// Whether compiled code outlives this process (the disk cache is in use).
bool JitDiskCacheEnabled();

}  // namespace pvgpu::ptx
