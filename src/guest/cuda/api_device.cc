// Driver API: initialization, versions and devices. Device properties were fetched once by
// cuInit, so these calls cost no round trip.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"
#include "guest/pci_bus_id.h"
#include "host/version.h"

namespace {

// Reads PVGPU_LOG when the library is loaded, so that the calls made before cuInit
// (cuDriverGetVersion, cuGetProcAddress) are traced too.
__attribute__((constructor)) void InitLogging() {
  pvgpu::log::Init("libcuda", pvgpu::log::Level::kWarn);
}

}  // namespace

namespace pvgpu::guest::api {

Code Init(unsigned int Flags) { return DriverState::Get().Init(Flags); }

Code DriverGetVersion(int* driverVersion) {
  *driverVersion = static_cast<int>(host::kCudaDriverVersion);
  return Code::kOk;
}

Code DeviceGetCount(int* count) {
  *count = DriverState::Get().device_count();
  return Code::kOk;
}

Code DeviceGet(CUdevice* device, const Device& ordinal) {
  *device = ordinal.ordinal;
  return Code::kOk;
}

Code DeviceGetName(char* name, int len, const Device& dev) {
  if (len <= 0) return Code::kInvalidValue;
  const size_t n =
      std::min<size_t>(static_cast<size_t>(len) - 1, strnlen(dev.info.name, sizeof(dev.info.name)));
  std::memcpy(name, dev.info.name, n);
  name[n] = '\0';
  return Code::kOk;
}

Code DeviceTotalMem_v2(size_t* bytes, const Device& dev) {
  *bytes = dev.info.total_memory;
  return Code::kOk;
}

Code DeviceGetAttribute(int* pi, CUdevice_attribute attrib, const Device& dev) {
  const int index = static_cast<int>(attrib);
  constexpr int kSlots = sizeof(dev.info.attributes) / sizeof(dev.info.attributes[0]);
  if (index <= 0 || index >= CU_DEVICE_ATTRIBUTE_MAX || index >= kSlots) {
    return Code::kInvalidValue;
  }
  *pi = dev.info.attributes[index];
  return Code::kOk;
}

Code DeviceComputeCapability(int* major, int* minor, const Device& dev) {
  *major = dev.info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
  *minor = dev.info.attributes[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
  return Code::kOk;
}

Code DeviceGetUuid_v2(CUuuid* uuid, const Device& dev) {
  std::memcpy(uuid->bytes, dev.info.uuid, sizeof(uuid->bytes));
  return Code::kOk;
}

Code DeviceGetPCIBusId(char* pciBusId, int len, const Device& dev) {
  if (len <= 0) return Code::kInvalidValue;
  std::snprintf(pciBusId, static_cast<size_t>(len), "%08x:%02x:%02x.0", dev.info.pci_domain,
                dev.info.pci_bus, dev.info.pci_device);
  return Code::kOk;
}

// The inverse of cuDeviceGetPCIBusId, over the devices the application sees (after
// CUDA_VISIBLE_DEVICES). Adapters of different hosts may share a bus id: the first ordinal
// wins, as NVML's lookup by bus id does.
Code DeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  PciBusId id;
  if (!ParsePciBusId(pciBusId, /*function_optional=*/true, &id)) return Code::kInvalidValue;
  const DriverState& state = DriverState::Get();
  for (CUdevice ordinal = 0; ordinal < state.device_count(); ++ordinal) {
    const protocol::DeviceGetInfoReply& info = state.device(ordinal)->info;
    if (info.pci_domain == id.domain && info.pci_bus == id.bus && info.pci_device == id.device &&
        id.function == 0) {
      *dev = ordinal;
      return Code::kOk;
    }
  }
  return Code::kInvalidDevice;
}

}  // namespace pvgpu::guest::api
