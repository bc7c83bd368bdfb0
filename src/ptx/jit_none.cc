// The compiling engine's stand-in where LLVM was not found at configure time: every kernel is
// interpreted, and asking for the jit engine by name is an error (ParseEngine).
#include "ptx/jit_codegen.h"

namespace pvgpu::ptx {

bool JitAvailable() { return false; }

bool JitDiskCacheEnabled() { return false; }

StatusOr<CompiledCode> CompileImage(const KernelImage&, bool) {
  return Status(Code::kNotSupported, "this build has no compiling engine");
}

}  // namespace pvgpu::ptx
