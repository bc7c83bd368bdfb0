// NVML device enumeration and the static and dynamic device queries.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "guest/nvml/nvml_api.h"
#include "guest/nvml/nvml_api_autogen.h"
#include "guest/nvml/state.h"

namespace pvgpu::guest::nvml {

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

namespace api {

nvmlReturn_t DeviceGetCount_v2(unsigned int* deviceCount) {
  *deviceCount = static_cast<unsigned>(State::Get().Devices().size());
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  const auto devices = State::Get().Devices();
  if (index >= devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  for (nvmlDevice_st* candidate : State::Get().Devices()) {
    if (candidate->adapter.uuid == uuid) {
      *device = candidate;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t DeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  unsigned domain, bus, dev, function;
  if (!ParsePciBusId(pciBusId, &domain, &bus, &dev, &function)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  // Adapters of different hosts may share a bus id; the first in PVGPU_HOST order wins.
  for (nvmlDevice_st* candidate : State::Get().Devices()) {
    const AdapterView& a = candidate->adapter;
    if (a.pci_domain == domain && a.pci_bus == bus && a.pci_device == dev && function == 0) {
      *device = candidate;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t DeviceGetName(nvmlDevice_st* device, char* name, unsigned int length) {
  return CopyString(device->adapter.name, name, length);
}

nvmlReturn_t DeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned int length) {
  return CopyString(device->adapter.uuid, uuid, length);
}

// NVML_BRAND_UNKNOWN: no pvgpu adapter is a product of any NVIDIA brand (the cpu adapter is
// software; a future cuda adapter would report the host GPU's brand from the host).
nvmlReturn_t DeviceGetBrand(nvmlDevice_st* device, nvmlBrandType_t* type) {
  *type = NVML_BRAND_UNKNOWN;
  return NVML_SUCCESS;
}

// NOT_SUPPORTED: the minor number names a /dev/nvidiaN node, and a pvgpu guest has none (it
// reaches the host through a socket). A made-up number would send container tooling looking
// for device nodes that do not exist.
nvmlReturn_t DeviceGetMinorNumber(nvmlDevice_st* device, unsigned int* minorNumber) {
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t DeviceGetPciInfo_v3(nvmlDevice_st* device, nvmlPciInfo_t* pci) {
  FillPci(device->adapter, pci);
  return NVML_SUCCESS;
}

// The unversioned and _v2 entry points fill the layout before busId grew to 32 bytes.
nvmlReturn_t DeviceGetPciInfo_v2(nvmlDevice_st* device, nvmlPciInfo_t* pci) {
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

nvmlReturn_t DeviceGetMemoryInfo(nvmlDevice_st* device, nvmlMemory_t* memory) {
  unsigned long long total, used;
  if (nvmlReturn_t r = CurrentMemory(device, &total, &used); r != NVML_SUCCESS) return r;
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetMemoryInfo_v2(nvmlDevice_st* device, nvmlMemory_v2_t* memory) {
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
nvmlReturn_t DeviceGetUtilizationRates(nvmlDevice_st* device, nvmlUtilization_t* utilization) {
  AdapterView now;
  if (nvmlReturn_t r = State::Get().Refresh(device, &now, nullptr); r != NVML_SUCCESS) return r;
  utilization->gpu = std::min(now.utilization_percent, 100u);
  utilization->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t DeviceGetCudaComputeCapability(nvmlDevice_st* device, int* major, int* minor) {
  *major = device->adapter.cc_major;
  *minor = device->adapter.cc_minor;
  return NVML_SUCCESS;
}

}  // namespace api
}  // namespace pvgpu::guest::nvml
