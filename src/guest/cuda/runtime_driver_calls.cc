// Driver API calls that NVIDIA's CUDA runtime makes during start-up and that pvgpu had not
// implemented. They live here until the export layer declares them with the rest.
#include <cuda.h>

#include "guest/cuda/state.h"

extern "C" {

// The runtime asks before its first module load; an error here fails cudaGetDeviceCount and
// every call after it. pvgpu sends a module to the host whole when it is loaded, which is what
// CUDA calls eager loading (CUDA_MODULE_LOADING has no effect on it).
CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  PVGPU_TRACE("cuModuleGetLoadingMode(" << mode << ")");
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

// CUDA 13's forms of two context calls, which take the context instead of using the current
// one (NULL: the current one). The 13.0 runtime resolves cuCtxGetDevice and cuCtxSynchronize to
// these.
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  PVGPU_API_TRACE("cuCtxGetDevice_v2", device << ", " << ctx);
  if (ctx == nullptr) return cuCtxGetDevice(device);
  if (CUresult r = pvgpu::guest::DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!pvgpu::guest::LiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  PVGPU_API_TRACE("cuCtxSynchronize_v2", ctx);
  if (ctx == nullptr || ctx == pvgpu::guest::CurrentContext()) return cuCtxSynchronize();
  if (CUresult r = cuCtxPushCurrent(ctx); r != CUDA_SUCCESS) return r;
  const CUresult result = cuCtxSynchronize();
  CUcontext popped = nullptr;
  (void)cuCtxPopCurrent(&popped);
  return result;
}

}  // extern "C"
