// cuProfilerStart / cuProfilerStop: they only bracket what an attached profiler records. With
// no profiler (pvgpu never has one) the driver accepts them in any valid context, and
// frameworks (torch.cuda.profiler, cudaProfilerStart) treat an error here as fatal, so they
// succeed instead of being NOT_SUPPORTED stubs. cuProfilerInitialize, deprecated since CUDA
// 11, stays a stub.
#include <cuda.h>
#include <cudaProfiler.h>

#include "guest/cuda/state.h"

extern "C" {

CUresult CUDAAPI cuProfilerStart(void) {
  PVGPU_API_TRACE("cuProfilerStart", "");
  CUctx_st* ctx = nullptr;
  return pvgpu::guest::CurrentLiveContext(&ctx);
}

CUresult CUDAAPI cuProfilerStop(void) {
  PVGPU_API_TRACE("cuProfilerStop", "");
  CUctx_st* ctx = nullptr;
  return pvgpu::guest::CurrentLiveContext(&ctx);
}

}  // extern "C"
