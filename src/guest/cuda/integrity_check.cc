// INTEGRITY_CHECK slot 1. The runtime hashes what the public driver API told it, so the inputs
// are gathered through the same public calls (never from DriverState directly): whatever they
// report, CUDA_VISIBLE_DEVICES included, is what both sides hash.
#include <pthread.h>
#include <unistd.h>

#include <cstring>

#include "guest/cuda/export_tables.h"
#include "guest/cuda/integrity_message.h"
#include "guest/cuda/runtime_slots.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {
namespace {

CUresult GatherDevices(std::vector<IntegrityDevice>* devices) {
  int count = 0;
  if (CUresult r = cuDeviceGetCount(&count); r != CUDA_SUCCESS) return r;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    if (CUresult r = cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS) return r;
    IntegrityDevice record;
    CUuuid uuid;
    if (CUresult r = cuDeviceGetUuid(&uuid, device); r != CUDA_SUCCESS) return r;
    std::memcpy(record.uuid, uuid.bytes, sizeof(record.uuid));
    const struct {
      CUdevice_attribute attribute;
      int32_t* value;
    } kPci[] = {{CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &record.pci_domain},
                {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &record.pci_bus},
                {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &record.pci_device}};
    for (const auto& pci : kPci) {
      int value = 0;
      if (CUresult r = cuDeviceGetAttribute(&value, pci.attribute, device); r != CUDA_SUCCESS) {
        return r;
      }
      *pci.value = value;
    }
    devices->push_back(record);
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult IntegrityCheck(uint32_t version, uint64_t unix_seconds, uint64_t out[2]) {
  PVGPU_SLOT_TRACE("INTEGRITY_CHECK[1]", version << ", " << unix_seconds << ", " << out);
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  IntegrityInputs inputs;
  int driver_version = 0;
  if (CUresult r = cuDriverGetVersion(&driver_version); r != CUDA_SUCCESS) return r;
  inputs.driver_version = static_cast<uint32_t>(driver_version);
  inputs.version = version;
  inputs.pid = static_cast<uint32_t>(getpid());
  // pthread_self, not gettid: the runtime hashes the thread's pthread_t.
  inputs.thread = static_cast<uint32_t>(pthread_self());
  const ExportTableAddresses tables = GetExportTableAddresses();
  inputs.cudart_table = tables.cudart_interface;
  inputs.integrity_table = tables.integrity_check;
  inputs.check_function = tables.integrity_check_slot1;
  inputs.unix_seconds = unix_seconds;
  if (CUresult r = GatherDevices(&inputs.devices); r != CUDA_SUCCESS) return r;
  // The runtime checks only the answer for version % 10 == 2; the others get the same
  // computation, which it accepts as well.
  const Md2Digest answer = IntegrityAnswer(inputs);
  std::memcpy(out, answer.data(), answer.size());
  return CUDA_SUCCESS;
}

}  // namespace pvgpu::guest
