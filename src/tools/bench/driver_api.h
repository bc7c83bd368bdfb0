// The CUDA driver API entry points `pvgpu bench` calls, resolved from pvgpu's guest
// libcuda.so.1 with dlopen/dlsym. Loading by path (RTLD_LOCAL) instead of linking -lcuda keeps
// the benchmark honest: it measures exactly the library an application would get from
// `pvgpu run`, and pvgpu itself never depends on a libcuda at start-up.
#pragma once

#include <cuda.h>

#include <string>

#include "common/status.h"

namespace pvgpu::tools::bench {

struct DriverApi {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  // cuCtxCreate_v4 when the library has it, else cuCtxCreate_v2 wrapped to the same shape.
  CUresult (*cuCtxCreate_v4)(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice) = nullptr;
  CUresult (*cuCtxCreate_v2)(CUcontext*, unsigned int, CUdevice) = nullptr;
  CUresult (*cuCtxDestroy_v2)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventDestroy_v2)(CUevent) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  // Optional: pinned host memory. Null when the library does not export them.
  CUresult (*cuMemAllocHost_v2)(void**, size_t) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;

  // Creates a context with whichever cuCtxCreate the library has.
  CUresult CtxCreate(CUcontext* ctx, CUdevice device) const;
  // "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700)" as a Status, or Ok.
  Status Check(CUresult result, const char* what) const;
};

// dlopens `path` (RTLD_NOW | RTLD_LOCAL) and resolves every entry point above. Fails, naming
// the symbol, when a required one is missing. The library stays loaded for the process's life:
// its client is never torn down (see guest/client/client.h).
StatusOr<DriverApi> LoadDriverApi(const std::string& path);

}  // namespace pvgpu::tools::bench
