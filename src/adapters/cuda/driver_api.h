// The host's CUDA driver, loaded by path with dlopen and resolved entry point by entry point.
//
// pvgpud never links against libcuda: the daemon must start on machines without NVIDIA's
// driver, and the library it loads may be pvgpu's own guest driver (the chained test set-up,
// where host 1's cuda adapter forwards to host 2). Each entry point carries the ABI version of
// its cudaTypedefs.h PFN type, so cuGetProcAddress hands out exactly the ABI we call; dlsym of
// the versioned export name is the fallback for drivers without cuGetProcAddress_v2.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace pvgpu::adapters::cuda {

// X(member, PFN type, its ABI version, export name for dlsym). Required: the adapter cannot work
// without it. (Members such as cuMemAlloc are renamed by cuda.h's macros to cuMemAlloc_v2 in
// every file that includes it, consistently; the PFN type is spelled out so that it is not.)
#define PVGPU_CUDA_REQUIRED_ENTRIES(X)                                                  \
  X(cuInit, PFN_cuInit_v2000, 2000, "cuInit")                                           \
  X(cuDriverGetVersion, PFN_cuDriverGetVersion_v2020, 2020, "cuDriverGetVersion")       \
  X(cuGetErrorString, PFN_cuGetErrorString_v6000, 6000, "cuGetErrorString")             \
  X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000, 2000, "cuDeviceGetCount")             \
  X(cuDeviceGet, PFN_cuDeviceGet_v2000, 2000, "cuDeviceGet")                            \
  X(cuDeviceGetName, PFN_cuDeviceGetName_v2000, 2000, "cuDeviceGetName")                \
  X(cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000, 2000, "cuDeviceGetAttribute") \
  X(cuDeviceTotalMem, PFN_cuDeviceTotalMem_v3020, 3020, "cuDeviceTotalMem_v2")          \
  X(cuCtxPushCurrent, PFN_cuCtxPushCurrent_v4000, 4000, "cuCtxPushCurrent_v2")          \
  X(cuCtxPopCurrent, PFN_cuCtxPopCurrent_v4000, 4000, "cuCtxPopCurrent_v2")             \
  X(cuCtxDestroy, PFN_cuCtxDestroy_v4000, 4000, "cuCtxDestroy_v2")                      \
  X(cuStreamCreate, PFN_cuStreamCreate_v2000, 2000, "cuStreamCreate")                   \
  X(cuStreamDestroy, PFN_cuStreamDestroy_v4000, 4000, "cuStreamDestroy_v2")             \
  X(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000, 2000, "cuStreamSynchronize")    \
  X(cuEventCreate, PFN_cuEventCreate_v2000, 2000, "cuEventCreate")                      \
  X(cuEventDestroy, PFN_cuEventDestroy_v4000, 4000, "cuEventDestroy_v2")                \
  X(cuEventRecord, PFN_cuEventRecord_v2000, 2000, "cuEventRecord")                      \
  X(cuEventSynchronize, PFN_cuEventSynchronize_v2000, 2000, "cuEventSynchronize")       \
  X(cuMemAlloc, PFN_cuMemAlloc_v3020, 3020, "cuMemAlloc_v2")                            \
  X(cuMemFree, PFN_cuMemFree_v3020, 3020, "cuMemFree_v2")                               \
  X(cuMemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020, 3020, "cuMemcpyHtoDAsync_v2")       \
  X(cuMemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020, 3020, "cuMemcpyDtoHAsync_v2")       \
  X(cuMemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020, 3020, "cuMemcpyDtoDAsync_v2")       \
  X(cuMemsetD8Async, PFN_cuMemsetD8Async_v3020, 3020, "cuMemsetD8Async")                \
  X(cuMemsetD16Async, PFN_cuMemsetD16Async_v3020, 3020, "cuMemsetD16Async")             \
  X(cuMemsetD32Async, PFN_cuMemsetD32Async_v3020, 3020, "cuMemsetD32Async")             \
  X(cuModuleLoadDataEx, PFN_cuModuleLoadDataEx_v2010, 2010, "cuModuleLoadDataEx")       \
  X(cuModuleUnload, PFN_cuModuleUnload_v2000, 2000, "cuModuleUnload")                   \
  X(cuModuleGetFunction, PFN_cuModuleGetFunction_v2000, 2000, "cuModuleGetFunction")    \
  X(cuModuleGetGlobal, PFN_cuModuleGetGlobal_v3020, 3020, "cuModuleGetGlobal_v2")       \
  X(cuFuncGetAttribute, PFN_cuFuncGetAttribute_v2020, 2020, "cuFuncGetAttribute")       \
  X(cuLaunchKernel, PFN_cuLaunchKernel_v4000, 4000, "cuLaunchKernel")

// Optional: newer or less common calls; null (or answering CUDA_ERROR_NOT_SUPPORTED) is handled.
#define PVGPU_CUDA_OPTIONAL_ENTRIES(X)                                               \
  X(cuCtxCreate, PFN_cuCtxCreate_v3020, 3020, "cuCtxCreate_v2")                      \
  X(cuCtxCreate4, PFN_cuCtxCreate_v12050, 12050, "cuCtxCreate_v4")                   \
  X(cuDeviceGetUuid, PFN_cuDeviceGetUuid_v11040, 11040, "cuDeviceGetUuid_v2")        \
  X(cuDeviceGetUuid1, PFN_cuDeviceGetUuid_v9020, 9020, "cuDeviceGetUuid")            \
  X(cuMemsetD2D8Async, PFN_cuMemsetD2D8Async_v3020, 3020, "cuMemsetD2D8Async")       \
  X(cuMemsetD2D16Async, PFN_cuMemsetD2D16Async_v3020, 3020, "cuMemsetD2D16Async")    \
  X(cuMemsetD2D32Async, PFN_cuMemsetD2D32Async_v3020, 3020, "cuMemsetD2D32Async")    \
  X(cuModuleGetFunctionCount, PFN_cuModuleGetFunctionCount_v12040, 12040,            \
    "cuModuleGetFunctionCount")                                                      \
  X(cuModuleEnumerateFunctions, PFN_cuModuleEnumerateFunctions_v12040, 12040,        \
    "cuModuleEnumerateFunctions")                                                    \
  X(cuFuncGetName, PFN_cuFuncGetName_v12030, 12030, "cuFuncGetName")                 \
  X(cuFuncGetParamInfo, PFN_cuFuncGetParamInfo_v12040, 12040, "cuFuncGetParamInfo")  \
  X(cuFuncSetAttribute, PFN_cuFuncSetAttribute_v9000, 9000, "cuFuncSetAttribute")    \
  X(cuMemAllocHost, PFN_cuMemAllocHost_v3020, 3020, "cuMemAllocHost_v2")             \
  X(cuMemFreeHost, PFN_cuMemFreeHost_v2000, 2000, "cuMemFreeHost")                   \
  X(cuMemHostRegister, PFN_cuMemHostRegister_v6050, 6050, "cuMemHostRegister_v2")    \
  X(cuMemHostUnregister, PFN_cuMemHostUnregister_v4000, 4000, "cuMemHostUnregister") \
  X(cuMemHostGetDevicePointer, PFN_cuMemHostGetDevicePointer_v3020, 3020,            \
    "cuMemHostGetDevicePointer_v2")                                                  \
  X(cuLinkCreate, PFN_cuLinkCreate_v6050, 6050, "cuLinkCreate_v2")                   \
  X(cuLinkAddData, PFN_cuLinkAddData_v6050, 6050, "cuLinkAddData_v2")                \
  X(cuLinkComplete, PFN_cuLinkComplete_v5050, 5050, "cuLinkComplete")                \
  X(cuLinkDestroy, PFN_cuLinkDestroy_v5050, 5050, "cuLinkDestroy")                   \
  X(cuLaunchCooperativeKernel, PFN_cuLaunchCooperativeKernel_v9000, 9000,            \
    "cuLaunchCooperativeKernel")                                                     \
  X(cuTexObjectCreate, PFN_cuTexObjectCreate_v5000, 5000, "cuTexObjectCreate")       \
  X(cuTexObjectDestroy, PFN_cuTexObjectDestroy_v5000, 5000, "cuTexObjectDestroy") \
  X(cuSurfObjectCreate, PFN_cuSurfObjectCreate_v5000, 5000, "cuSurfObjectCreate")    \
  X(cuSurfObjectDestroy, PFN_cuSurfObjectDestroy_v5000, 5000, "cuSurfObjectDestroy") \
  X(cuArray3DCreate, PFN_cuArray3DCreate_v3020, 3020, "cuArray3DCreate_v2")          \
  X(cuArrayDestroy, PFN_cuArrayDestroy_v2000, 2000, "cuArrayDestroy")                \
  X(cuMipmappedArrayCreate, PFN_cuMipmappedArrayCreate_v5000, 5000,                  \
    "cuMipmappedArrayCreate")                                                        \
  X(cuMipmappedArrayGetLevel, PFN_cuMipmappedArrayGetLevel_v5000, 5000,              \
    "cuMipmappedArrayGetLevel")                                                      \
  X(cuMipmappedArrayDestroy, PFN_cuMipmappedArrayDestroy_v5000, 5000,                \
    "cuMipmappedArrayDestroy")                                                       \
  X(cuMemcpy3DAsync, PFN_cuMemcpy3DAsync_v3020, 3020, "cuMemcpy3DAsync_v2")          \
  X(cuMemGetAllocationGranularity, PFN_cuMemGetAllocationGranularity_v10020, 10020, \
    "cuMemGetAllocationGranularity")                                                \
  X(cuMemCreate, PFN_cuMemCreate_v10020, 10020, "cuMemCreate")                       \
  X(cuMemRelease, PFN_cuMemRelease_v10020, 10020, "cuMemRelease")                    \
  X(cuMemAddressReserve, PFN_cuMemAddressReserve_v10020, 10020, "cuMemAddressReserve") \
  X(cuMemAddressFree, PFN_cuMemAddressFree_v10020, 10020, "cuMemAddressFree")        \
  X(cuMemMap, PFN_cuMemMap_v10020, 10020, "cuMemMap")                                \
  X(cuMemUnmap, PFN_cuMemUnmap_v10020, 10020, "cuMemUnmap")                          \
  X(cuMemSetAccess, PFN_cuMemSetAccess_v10020, 10020, "cuMemSetAccess")             \
  X(cuMemExportToShareableHandle, PFN_cuMemExportToShareableHandle_v10020, 10020,    \
    "cuMemExportToShareableHandle")                                                  \
  X(cuMemImportFromShareableHandle, PFN_cuMemImportFromShareableHandle_v10020, 10020, \
    "cuMemImportFromShareableHandle")

struct DriverApi {
#define PVGPU_CUDA_MEMBER(name, type, version, symbol) type name = nullptr;
  PVGPU_CUDA_REQUIRED_ENTRIES(PVGPU_CUDA_MEMBER)
  PVGPU_CUDA_OPTIONAL_ENTRIES(PVGPU_CUDA_MEMBER)
#undef PVGPU_CUDA_MEMBER
};

// How the driver library was chosen; the loop guard depends on it.
struct DriverOptions {
  std::string path;  // --cuda-driver; empty: search the system's standard locations
  // The daemon's own listen addresses ("unix:/path"): a pvgpu guest driver aimed at one of
  // them would make the daemon its own client.
  std::vector<std::string> listen_addresses;
};

class Driver {
 public:
  // Loads, resolves and initializes (cuInit) the driver. kNotFound when no library exists,
  // kNotPermitted when the loop guard refuses the one found, else the driver's own error.
  static StatusOr<std::shared_ptr<Driver>> Load(const DriverOptions& options);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const DriverApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  int version() const { return version_; }
  bool is_pvgpu() const { return is_pvgpu_; }

  // A CUresult as a Status whose message names the call and the driver's description.
  Status Check(CUresult result, const char* what) const;

 private:
  Driver() = default;
  void* handle_ = nullptr;
  std::string path_;
  int version_ = 0;
  bool is_pvgpu_ = false;
  DriverApi api_;
};

// True when the library file at `path` is a pvgpu guest library: it embeds the PVGPU_HOST
// environment variable's name, which no vendor library does (exposed for tests).
bool IsPvgpuLibrary(const std::string& path);

// The standard places a distribution or NVIDIA's installer puts libcuda.so.1 (and WSL's).
std::vector<std::string> StandardLibraryPaths(const std::string& file_name);

}  // namespace pvgpu::adapters::cuda
