// cuGetProcAddress: the driver's own symbol lookup, used by the CUDA runtime (cudart asks for
// every driver function it needs this way) and by loaders such as cuda-python.
//
// The answer depends on the ABI version the caller was compiled against: "cuMemAlloc" at 3020
// or later is cuMemAlloc_v2 (64-bit sizes), before that the original. The table of those
// (name, version, symbol) triples is generated from cudaTypedefs.h (gen_exports.py), and holds
// addresses, so no dlsym and no string search of our own dynamic symbol table is needed.
#include "guest/cuda/proc_address.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "host/version.h"

namespace pvgpu::guest {

LookupStatus LookupProc(std::string_view base, int version, bool per_thread,
                        const ProcEntry** entry) {
  const ProcEntry* begin = kProcTable;
  const ProcEntry* end = kProcTable + kProcTableSize;
  const ProcEntry* first = std::lower_bound(
      begin, end, base, [](const ProcEntry& e, std::string_view b) { return e.base < b; });
  const ProcEntry* last = first;
  while (last != end && last->base == base) ++last;
  if (first == last) return LookupStatus::kSymbolNotFound;
  const ProcEntry* best_legacy = nullptr;
  const ProcEntry* best_per_thread = nullptr;
  for (const ProcEntry* e = first; e != last; ++e) {
    if (e->version > version) continue;
    const ProcEntry*& best = e->stream == StreamKind::kPerThread ? best_per_thread : best_legacy;
    if (best == nullptr || e->version >= best->version) best = e;
  }
  // A function without a per-thread form (cuMemAlloc) is the same under either flag.
  const ProcEntry* chosen =
      per_thread && best_per_thread != nullptr ? best_per_thread : best_legacy;
  if (chosen == nullptr) return LookupStatus::kVersionNotSufficient;
  *entry = chosen;
  return LookupStatus::kFound;
}

}  // namespace pvgpu::guest

namespace pvgpu::guest::api {

namespace {

constexpr cuuint64_t kKnownFlags =
    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

}  // namespace

Code GetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult* symbolStatus) {
  if ((flags & ~kKnownFlags) != 0) return Code::kInvalidValue;
  // CU_GET_PROC_ADDRESS_DEFAULT follows how the caller was compiled; cuda.h's inline wrapper
  // adds the per-thread flag for per-thread builds, so plain DEFAULT reaching us means legacy.
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = nullptr;
  // The documented contract: asking for a newer ABI than this driver provides is an error,
  // not a silent downgrade.
  if (cudaVersion > static_cast<int>(host::kCudaDriverVersion)) return Code::kInvalidValue;
  const ProcEntry* entry = nullptr;
  const LookupStatus found = LookupProc(symbol, cudaVersion, per_thread, &entry);
  if (symbolStatus != nullptr) {
    *symbolStatus = found == LookupStatus::kFound ? CU_GET_PROC_ADDRESS_SUCCESS
                    : found == LookupStatus::kSymbolNotFound
                        ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
                        : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  }
  if (found != LookupStatus::kFound) {
    PVGPU_DEBUG("cuGetProcAddress: no " << symbol << " for CUDA " << cudaVersion);
    return Code::kNotFound;
  }
  PVGPU_DEBUG("cuGetProcAddress: " << symbol << " for CUDA " << cudaVersion << " -> "
                                   << entry->symbol);
  *pfn = entry->address;
  return Code::kOk;
}

// The CUDA 11.3 ABI, without the status argument.
Code GetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return GetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // namespace pvgpu::guest::api
