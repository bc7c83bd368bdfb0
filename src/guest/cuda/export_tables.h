// cuGetExportTable: the driver's private interfaces that NVIDIA's CUDA runtime (cudart) asks
// for by UUID. All tables are declared in export_tables.cc; docs/cudart.md describes them.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace pvgpu::guest {

// What cuGetExportTable answers: the table for `id`, CUDA_ERROR_NOT_FOUND for a table pvgpu
// knows and declines, CUDA_ERROR_INVALID_VALUE (logged with the UUID) for an unknown one.
CUresult GetExportTable(const void** table, const CUuuid* id);

// What the integrity check hashes about the tables themselves: their fixed addresses and the
// function stored in INTEGRITY_CHECK slot 1.
struct ExportTableAddresses {
  uint64_t cudart_interface;
  uint64_t integrity_check;
  uint64_t integrity_check_slot1;
};
ExportTableAddresses GetExportTableAddresses();

// "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9": the bytes in memory order, as the runtime lists them.
std::string UuidText(const CUuuid& id);

}  // namespace pvgpu::guest
