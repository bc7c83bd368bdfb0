// The implemented slots of the export tables that NVIDIA's CUDA runtime asks the driver for
// (export_tables.cc lists every table and slot). Each has exactly the C signature the runtime
// calls it with; docs/cudart.md says what each is for.
//
// Implementors: a new slot is a function here, its definition in the file of its table's job
// (runtime_slots.cc, context_storage_slots.cc, integrity_check.cc), and its line in
// export_tables.cc in place of the NotImplemented entry.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "common/log.h"

// The trace line of a slot call (PVGPU_LOG=trace), in the form the exports' shells write.
#define PVGPU_SLOT_TRACE(name, args) PVGPU_TRACE(name << "(" << args << ")")

namespace pvgpu::guest {

// CUDART_INTERFACE.
CUresult CudartModuleFromWrapper(CUmodule* module, const void* wrapper);  // [1]
CUresult CudartPrimaryContext(CUcontext* ctx, CUdevice device);           // [2]
CUresult CudartModuleFromWrapperEx(CUmodule* module, const void* wrapper, void* a, void* b,
                                   unsigned int c);  // [6]
void CudartIgnoreSize(size_t);                       // [7]
CUresult CudartModuleFromFatbin(const void* header, CUmodule* module, void* a, void* b,
                                unsigned int c);  // [8]
CUresult CudartLoadCompilers();                   // [12]

// TOOLS_RUNTIME_CALLBACK_HOOKS: tool-callback flag arrays, kept all zero (no tool attached).
void ToolsRuntimeCallbackFlags(void** buffer, size_t* count);  // [2]
void ToolsSecondCallbackFlags(void** buffer, size_t* count);   // [6]

// CONTEXT_LOCAL_STORAGE (context_storage_slots.cc).
CUresult ContextStoragePut(CUcontext ctx, void* key, void* value,
                           void (*destructor)(CUcontext, void*, void*));  // [0]
CUresult ContextStorageDelete(CUcontext ctx, void* key);                  // [1]
CUresult ContextStorageGet(void** value, CUcontext ctx, void* key);       // [2]

// CONTEXT_CHECKS.
CUresult ContextCheck(CUcontext ctx, uint32_t* result, void** unused);  // [2]
uint32_t ContextCheckMode();                                            // [3]

// INTEGRITY_CHECK (integrity_check.cc).
CUresult IntegrityCheck(uint32_t version, uint64_t unix_seconds, uint64_t out[2]);  // [1]

}  // namespace pvgpu::guest
