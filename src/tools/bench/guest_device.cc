#include "tools/bench/guest_device.h"

#include <vector>

#include "tools/bench/kernels.h"

namespace pvgpu::tools::bench {

StatusOr<std::unique_ptr<GuestDevice>> GuestDevice::Open(const std::string& library) {
  if (kBenchKernelsPtx[0] == '\0') {
    return Error(Code::kNotSupported, "pvgpu was built without nvcc: no benchmark kernels");
  }
  PVGPU_ASSIGN_OR_RETURN(DriverApi api, LoadDriverApi(library));
  std::unique_ptr<GuestDevice> device(new GuestDevice(api));
  PVGPU_TRY(api.Check(api.cuInit(0), "cuInit"));
  CUdevice ordinal = 0;
  PVGPU_TRY(api.Check(api.cuDeviceGet(&ordinal, 0), "cuDeviceGet"));
  char name[256] = {};
  PVGPU_TRY(api.Check(api.cuDeviceGetName(name, sizeof(name), ordinal), "cuDeviceGetName"));
  device->device_name_ = name;
  PVGPU_TRY(api.Check(api.CtxCreate(&device->context_, ordinal), "cuCtxCreate"));
  PVGPU_TRY(api.Check(api.cuModuleLoadData(&device->module_, kBenchKernelsPtx),
                      "cuModuleLoadData(bench kernels)"));
  return device;
}

GuestDevice::~GuestDevice() {
  // Also frees the module and every allocation; errors no longer matter here.
  if (context_ != nullptr) (void)api_.cuCtxDestroy_v2(context_);
}

StatusOr<uint64_t> GuestDevice::Allocate(size_t bytes) {
  CUdeviceptr dptr = 0;
  PVGPU_TRY(api_.Check(api_.cuMemAlloc_v2(&dptr, bytes), "cuMemAlloc"));
  return static_cast<uint64_t>(dptr);
}

Status GuestDevice::Free(uint64_t dptr) { return api_.Check(api_.cuMemFree_v2(dptr), "cuMemFree"); }

Status GuestDevice::Upload(uint64_t dst, const void* src, size_t bytes) {
  return api_.Check(api_.cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD");
}

Status GuestDevice::Download(void* dst, uint64_t src, size_t bytes) {
  return api_.Check(api_.cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH");
}

StatusOr<CUfunction> GuestDevice::Function(std::string_view kernel) {
  auto found = functions_.find(kernel);
  if (found != functions_.end()) return found->second;
  CUfunction function = nullptr;
  const std::string name(kernel);
  PVGPU_TRY(api_.Check(api_.cuModuleGetFunction(&function, module_, name.c_str()),
                       "cuModuleGetFunction"));
  functions_.emplace(name, function);
  return function;
}

Status GuestDevice::Launch(std::string_view kernel, Shape grid, Shape block,
                           std::initializer_list<KernelArg> args) {
  PVGPU_ASSIGN_OR_RETURN(CUfunction function, Function(kernel));
  // kernelParams: one pointer per parameter; the library copies the values before returning.
  std::vector<void*> params;
  params.reserve(args.size());
  for (const KernelArg& arg : args) params.push_back(const_cast<void*>(arg.data));
  return api_.Check(api_.cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                        0, nullptr, params.data(), nullptr),
                    "cuLaunchKernel");
}

Status GuestDevice::Synchronize() {
  return api_.Check(api_.cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace pvgpu::tools::bench
