// NVML device enumeration and the static and dynamic device queries.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "guest/nvml/nvml_api.h"
#include "guest/nvml/state.h"
#include "guest/nvml/trace.h"

using pvgpu::guest::nvml::AdapterView;
using pvgpu::guest::nvml::CopyString;
using pvgpu::guest::nvml::State;

namespace {

// The nvmlPciInfo_t of programs built against nvml.h before busId grew to 32 bytes; the
// unversioned and _v2 entry points must not write past it.
struct LegacyPciInfo {
  char busId[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  unsigned int reserved[4];
};
static_assert(sizeof(LegacyPciInfo) == 52);

// NVIDIA's PCI vendor id in the low half, as NVML reports it for its GPUs; the device id half
// is 0 because a pvgpu adapter is no PCI function of its own.
constexpr unsigned kPciDeviceId = 0x10de;

nvmlReturn_t GetCount(const char* name, unsigned int* deviceCount) {
  PVGPU_NVML_TRACE(name, deviceCount);
  State& state = State::Get();
  if (nvmlReturn_t init = state.CheckInit(); init != NVML_SUCCESS) return init;
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned>(state.Devices().size());
  return NVML_SUCCESS;
}

nvmlReturn_t GetHandleByIndex(const char* name, unsigned int index, nvmlDevice_t* device) {
  PVGPU_NVML_TRACE(name, index, device);
  State& state = State::Get();
  if (nvmlReturn_t init = state.CheckInit(); init != NVML_SUCCESS) return init;
  const auto devices = state.Devices();
  if (device == nullptr || index >= devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t GetHandleByPciBusId(const char* name, const char* pciBusId, nvmlDevice_t* device) {
  PVGPU_NVML_TRACE(name, pciBusId, device);
  State& state = State::Get();
  if (nvmlReturn_t init = state.CheckInit(); init != NVML_SUCCESS) return init;
  unsigned domain, bus, dev, function;
  if (pciBusId == nullptr || device == nullptr ||
      !pvgpu::guest::nvml::ParsePciBusId(pciBusId, &domain, &bus, &dev, &function)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  // Adapters of different hosts may share a bus id; the first in PVGPU_HOST order wins.
  for (nvmlDevice_st* candidate : state.Devices()) {
    const AdapterView& a = candidate->adapter;
    if (a.pci_domain == domain && a.pci_bus == bus && a.pci_device == dev && function == 0) {
      *device = candidate;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

void FillPci(const AdapterView& a, nvmlPciInfo_t* pci) {
  std::memset(pci, 0, sizeof(*pci));
  pci->domain = a.pci_domain;
  pci->bus = a.pci_bus;
  pci->device = a.pci_device;
  pci->pciDeviceId = kPciDeviceId;
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
                a.pci_domain & 0xffff, a.pci_bus, a.pci_device);
  std::snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, a.pci_domain, a.pci_bus,
                a.pci_device);
}

nvmlReturn_t GetLegacyPciInfo(const char* name, nvmlDevice_t handle, nvmlPciInfo_t* pci) {
  PVGPU_NVML_TRACE(name, handle, pci);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlPciInfo_t full;
  FillPci(device->adapter, &full);
  LegacyPciInfo legacy{};
  std::memcpy(legacy.busId, full.busIdLegacy, sizeof(legacy.busId));
  legacy.domain = full.domain;
  legacy.bus = full.bus;
  legacy.device = full.device;
  legacy.pciDeviceId = full.pciDeviceId;
  legacy.pciSubSystemId = full.pciSubSystemId;
  std::memcpy(static_cast<void*>(pci), &legacy, sizeof(legacy));
  return NVML_SUCCESS;
}

// Current memory of the adapter as this session sees it. With a quota, total is the quota and
// used is the adapter's whole use (other sessions included), so used is capped at total.
nvmlReturn_t CurrentMemory(nvmlDevice_st* device, unsigned long long* total,
                           unsigned long long* used) {
  AdapterView now;
  if (nvmlReturn_t r = State::Get().Refresh(device, &now, nullptr); r != NVML_SUCCESS) return r;
  *total = now.memory_total;
  *used = std::min(now.memory_used, now.memory_total);
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return GetCount("nvmlDeviceGetCount_v2", deviceCount);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return GetCount("nvmlDeviceGetCount", deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return GetHandleByIndex("nvmlDeviceGetHandleByIndex_v2", index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return GetHandleByIndex("nvmlDeviceGetHandleByIndex", index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  PVGPU_NVML_TRACE("nvmlDeviceGetHandleByUUID", uuid, device);
  State& state = State::Get();
  if (nvmlReturn_t init = state.CheckInit(); init != NVML_SUCCESS) return init;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (nvmlDevice_st* candidate : state.Devices()) {
    if (candidate->adapter.uuid == uuid) {
      *device = candidate;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  return GetHandleByPciBusId("nvmlDeviceGetHandleByPciBusId_v2", pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) {
  return GetHandleByPciBusId("nvmlDeviceGetHandleByPciBusId", pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t handle, char* name, unsigned int length) {
  PVGPU_NVML_TRACE("nvmlDeviceGetName", handle, name, length);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  return CopyString(device->adapter.name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t handle, char* uuid, unsigned int length) {
  PVGPU_NVML_TRACE("nvmlDeviceGetUUID", handle, uuid, length);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  return CopyString(device->adapter.uuid, uuid, length);
}

// NVML_BRAND_UNKNOWN: no pvgpu adapter is a product of any NVIDIA brand (the cpu adapter is
// software; a future cuda adapter would report the host GPU's brand from the host).
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t handle, nvmlBrandType_t* type) {
  PVGPU_NVML_TRACE("nvmlDeviceGetBrand", handle, type);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *type = NVML_BRAND_UNKNOWN;
  return NVML_SUCCESS;
}

// NOT_SUPPORTED: the minor number names a /dev/nvidiaN node, and a pvgpu guest has none (it
// reaches the host through a socket). A made-up number would send container tooling looking
// for device nodes that do not exist.
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t handle, unsigned int* minorNumber) {
  PVGPU_NVML_TRACE("nvmlDeviceGetMinorNumber", handle, minorNumber);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t handle, nvmlPciInfo_t* pci) {
  PVGPU_NVML_TRACE("nvmlDeviceGetPciInfo_v3", handle, pci);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  FillPci(device->adapter, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t handle, nvmlPciInfo_t* pci) {
  return GetLegacyPciInfo("nvmlDeviceGetPciInfo_v2", handle, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t handle, nvmlPciInfo_t* pci) {
  return GetLegacyPciInfo("nvmlDeviceGetPciInfo", handle, pci);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t handle, nvmlMemory_t* memory) {
  PVGPU_NVML_TRACE("nvmlDeviceGetMemoryInfo", handle, memory);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long total, used;
  if (nvmlReturn_t r = CurrentMemory(device, &total, &used); r != NVML_SUCCESS) return r;
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t handle, nvmlMemory_v2_t* memory) {
  PVGPU_NVML_TRACE("nvmlDeviceGetMemoryInfo_v2", handle, memory);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  unsigned long long total, used;
  if (nvmlReturn_t r = CurrentMemory(device, &total, &used); r != NVML_SUCCESS) return r;
  memory->total = total;
  memory->reserved = 0;  // the host keeps nothing back from a session's memory
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

// gpu: the host's sampled busy percentage of the adapter. memory: 0, because no adapter
// measures memory-controller activity (the cpu adapter has none of its own).
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t handle, nvmlUtilization_t* utilization) {
  PVGPU_NVML_TRACE("nvmlDeviceGetUtilizationRates", handle, utilization);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  AdapterView now;
  if (nvmlReturn_t r = State::Get().Refresh(device, &now, nullptr); r != NVML_SUCCESS) return r;
  utilization->gpu = std::min(now.utilization_percent, 100u);
  utilization->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t handle, int* major, int* minor) {
  PVGPU_NVML_TRACE("nvmlDeviceGetCudaComputeCapability", handle, major, minor);
  nvmlDevice_st* device;
  if (nvmlReturn_t r = State::Get().Lookup(handle, &device); r != NVML_SUCCESS) return r;
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *major = device->adapter.cc_major;
  *minor = device->adapter.cc_minor;
  return NVML_SUCCESS;
}

}  // extern "C"
