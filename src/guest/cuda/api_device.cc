// Driver API: initialization, versions and devices. Device properties were fetched once by
// cuInit, so these calls cost no round trip.
#include <cstdio>
#include <cstring>

#include "guest/cuda/state.h"
#include "host/version.h"

using pvgpu::guest::DriverState;

namespace {

CUresult CheckDevice(CUdevice dev, const pvgpu::guest::Device** device) {
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  *device = state.device(dev);
  return *device != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int Flags) {
  pvgpu::log::Init("libcuda", pvgpu::log::Level::kWarn);
  PVGPU_API_TRACE("cuInit", Flags);
  return DriverState::Get().Init(Flags);
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  PVGPU_API_TRACE("cuDriverGetVersion", driverVersion);
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = static_cast<int>(pvgpu::host::kCudaDriverVersion);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  PVGPU_API_TRACE("cuDeviceGetCount", count);
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  *count = state.device_count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  PVGPU_API_TRACE("cuDeviceGet", device << ", " << ordinal);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (state.device(ordinal) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  PVGPU_API_TRACE("cuDeviceGetName", static_cast<void*>(name) << ", " << len << ", " << dev);
  const pvgpu::guest::Device* device = nullptr;
  if (CUresult r = CheckDevice(dev, &device); r != CUDA_SUCCESS) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t n = std::min<size_t>(static_cast<size_t>(len) - 1,
                                    strnlen(device->info.name, sizeof(device->info.name)));
  std::memcpy(name, device->info.name, n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  PVGPU_API_TRACE("cuDeviceTotalMem", bytes << ", " << dev);
  const pvgpu::guest::Device* device = nullptr;
  if (CUresult r = CheckDevice(dev, &device); r != CUDA_SUCCESS) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = device->info.total_memory;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  PVGPU_API_TRACE("cuDeviceGetAttribute", pi << ", " << static_cast<int>(attrib) << ", " << dev);
  const pvgpu::guest::Device* device = nullptr;
  if (CUresult r = CheckDevice(dev, &device); r != CUDA_SUCCESS) return r;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int index = static_cast<int>(attrib);
  constexpr int kSlots = sizeof(device->info.attributes) / sizeof(device->info.attributes[0]);
  if (index <= 0 || index >= CU_DEVICE_ATTRIBUTE_MAX || index >= kSlots) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pi = device->info.attributes[index];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  PVGPU_API_TRACE("cuDeviceComputeCapability", major << ", " << minor << ", " << dev);
  const pvgpu::guest::Device* device = nullptr;
  if (CUresult r = CheckDevice(dev, &device); r != CUDA_SUCCESS) return r;
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *major = device->info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
  *minor = device->info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  PVGPU_API_TRACE("cuDeviceGetUuid_v2", uuid << ", " << dev);
  const pvgpu::guest::Device* device = nullptr;
  if (CUresult r = CheckDevice(dev, &device); r != CUDA_SUCCESS) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(uuid->bytes, device->info.uuid, sizeof(uuid->bytes));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  PVGPU_API_TRACE("cuDeviceGetPCIBusId", static_cast<void*>(pciBusId) << ", " << len << ", " << dev);
  const pvgpu::guest::Device* device = nullptr;
  if (CUresult r = CheckDevice(dev, &device); r != CUDA_SUCCESS) return r;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(pciBusId, static_cast<size_t>(len), "%08x:%02x:%02x.0", device->info.pci_domain,
                device->info.pci_bus, device->info.pci_device);
  return CUDA_SUCCESS;
}

}  // extern "C"
