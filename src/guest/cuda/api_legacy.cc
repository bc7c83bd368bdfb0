// Older ABIs of implemented functions that real libcuda still exports for binaries built
// against earlier toolkits (and that cuGetProcAddress hands out for older cudaVersion values).
//
// Only names whose ABI matches a current function are forwarded. Those whose types changed
// (cuMemAlloc with a 32-bit CUdeviceptr_v1, cuModuleGetGlobal with 32-bit sizes) stay the
// generated NOT_SUPPORTED stubs: forwarding them would read garbage through their arguments.
#include <cuda.h>

// cuda.h maps these names to their newest ABI; here they must name the older symbols.
#undef cuCtxCreate_v2
#undef cuCtxCreate_v3
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuStreamDestroy

extern "C" {

// CUDA 3.2: no creation parameters.
CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

// CUDA 11.4: execution affinity parameters, now part of CUctxCreateParams.
CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray,
                                int numParams, unsigned int flags, CUdevice dev) {
  if (numParams < 0) return CUDA_ERROR_INVALID_VALUE;
  if (numParams == 0) return cuCtxCreate_v4(pctx, nullptr, flags, dev);
  // Passed on so that cuCtxCreate_v4 rejects (or one day honours) them in one place.
  CUctxCreateParams params{};
  params.execAffinityParams = paramsArray;
  params.numExecAffinityParams = numParams;
  return cuCtxCreate_v4(pctx, &params, flags, dev);
}

// CUDA 2.0-3.2 names whose _v2 differs only in semantics pvgpu does not distinguish (the v1
// destroy and pop calls had stricter rules about attached threads; MIG UUIDs for v1).
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
CUresult CUDAAPI cuEventDestroy(CUevent event) { return cuEventDestroy_v2(event); }
CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) { return cuStreamDestroy_v2(stream); }

}  // extern "C"
