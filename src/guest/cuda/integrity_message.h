// The answer to the CUDA runtime's integrity check (slot 1 of its INTEGRITY_CHECK export
// table): an HMAC-MD2, under a fixed key, of the driver's view of the process and its devices.
// The runtime computes the same value from what the public driver API told it; a mismatch makes
// every later runtime call fail with cudaErrorSoftwareValidityNotEstablished. docs/cudart.md
// describes the message; this file only lays it out, so that it can be tested on its own.
#pragma once

#include <cstdint>
#include <vector>

#include "common/md2.h"

namespace pvgpu::guest {

// One device as the public API reports it: cuDeviceGetUuid, and the PCI domain, bus and device
// attributes.
struct IntegrityDevice {
  uint8_t uuid[16] = {};
  int32_t pci_domain = 0;
  int32_t pci_bus = 0;
  int32_t pci_device = 0;
};

struct IntegrityInputs {
  uint32_t driver_version = 0;   // what cuDriverGetVersion returns
  uint32_t version = 0;          // the slot's argument: the runtime's version plus 0, 1 or 2
  uint32_t pid = 0;              // getpid()
  uint32_t thread = 0;           // the low 32 bits of the caller's pthread_self()
  uint64_t cudart_table = 0;     // address of the CUDART_INTERFACE table
  uint64_t integrity_table = 0;  // address of the INTEGRITY_CHECK table
  uint64_t check_function = 0;   // the address stored in INTEGRITY_CHECK slot 1
  uint64_t unix_seconds = 0;     // the slot's argument
  std::vector<IntegrityDevice> devices;  // in ordinal order, every device the API reports
};

// The message: the fields above in order, little-endian and packed (48 bytes), then 28 bytes
// per device (UUID, domain, bus, device).
std::vector<uint8_t> IntegrityMessage(const IntegrityInputs& inputs);

// HMAC-MD2 of IntegrityMessage(inputs) under the runtime's key.
Md2Digest IntegrityAnswer(const IntegrityInputs& inputs);

}  // namespace pvgpu::guest
