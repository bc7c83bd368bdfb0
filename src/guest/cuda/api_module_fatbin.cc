// cuModuleLoadFatBinary: the CUDA 2.x entry point for fat binaries. The image it takes is the
// same as cuModuleLoadData's (a fatbin, or its wrapper struct), which already recognizes it.
#include <cuda.h>

#include "common/log.h"

extern "C" CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  PVGPU_TRACE("cuModuleLoadFatBinary(" << module << ", " << fatCubin << ")");
  return cuModuleLoadData(module, fatCubin);
}
