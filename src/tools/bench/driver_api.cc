#include "tools/bench/driver_api.h"

#include <dlfcn.h>

namespace pvgpu::tools::bench {
namespace {

// Resolves `name` into `*slot`; a required symbol that is missing is an error.
template <typename Fn>
Status Resolve(void* library, const char* name, bool required, Fn* slot) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr && required) {
    return Error(Code::kNotFound, std::string("guest library lacks ") + name);
  }
  *slot = reinterpret_cast<Fn>(symbol);
  return Status::Ok();
}

}  // namespace

CUresult DriverApi::CtxCreate(CUcontext* ctx, CUdevice device) const {
  if (cuCtxCreate_v4 != nullptr) return cuCtxCreate_v4(ctx, nullptr, 0, device);
  return cuCtxCreate_v2(ctx, 0, device);
}

Status DriverApi::Check(CUresult result, const char* what) const {
  if (result == CUDA_SUCCESS) return Status::Ok();
  const char* name = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS) name = "?";
  return Error(static_cast<Code>(result), std::string(what) + ": " + name + " (" +
                                              std::to_string(static_cast<int>(result)) + ")");
}

StatusOr<DriverApi> LoadDriverApi(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return Error(Code::kNotFound, "cannot load " + path + ": " + (why ? why : "unknown error"));
  }
  DriverApi api;
#define PVGPU_RESOLVE(name, required) PVGPU_TRY(Resolve(library, #name, required, &api.name))
  PVGPU_RESOLVE(cuInit, true);
  PVGPU_RESOLVE(cuDeviceGet, true);
  PVGPU_RESOLVE(cuDeviceGetName, true);
  PVGPU_RESOLVE(cuCtxCreate_v4, false);
  PVGPU_RESOLVE(cuCtxCreate_v2, api.cuCtxCreate_v4 == nullptr);
  PVGPU_RESOLVE(cuCtxDestroy_v2, true);
  PVGPU_RESOLVE(cuCtxSynchronize, true);
  PVGPU_RESOLVE(cuMemAlloc_v2, true);
  PVGPU_RESOLVE(cuMemFree_v2, true);
  PVGPU_RESOLVE(cuMemcpyHtoD_v2, true);
  PVGPU_RESOLVE(cuMemcpyDtoH_v2, true);
  PVGPU_RESOLVE(cuModuleLoadData, true);
  PVGPU_RESOLVE(cuModuleGetFunction, true);
  PVGPU_RESOLVE(cuLaunchKernel, true);
  PVGPU_RESOLVE(cuStreamQuery, true);
  PVGPU_RESOLVE(cuEventCreate, true);
  PVGPU_RESOLVE(cuEventRecord, true);
  PVGPU_RESOLVE(cuEventQuery, true);
  PVGPU_RESOLVE(cuEventDestroy_v2, true);
  PVGPU_RESOLVE(cuGetErrorName, false);
  PVGPU_RESOLVE(cuMemAllocHost_v2, false);
  PVGPU_RESOLVE(cuMemFreeHost, false);
#undef PVGPU_RESOLVE
  // Pinned memory needs both halves; one without the other is as good as none.
  if (api.cuMemAllocHost_v2 == nullptr || api.cuMemFreeHost == nullptr) {
    api.cuMemAllocHost_v2 = nullptr;
    api.cuMemFreeHost = nullptr;
  }
  return api;
}

}  // namespace pvgpu::tools::bench
