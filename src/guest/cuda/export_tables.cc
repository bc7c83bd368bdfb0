// Every export table pvgpu's libcuda answers, in one place: UUID, layout, and one line per slot.
//
// Slots the runtime was never seen to call are NotImplemented<table, slot>: each returns
// CUDA_ERROR_NOT_SUPPORTED and logs its table and slot the first time, so a runtime that starts
// using one says so. A size slot holds the table's byte size, slot 0 included. The tables are
// statics: the integrity check hashes their addresses, which must not change while the process
// lives.
#include "guest/cuda/export_tables.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "common/log.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/runtime_slots.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {
namespace {

enum TableId : int {
  kCudartInterface,
  kToolsRuntimeCallbackHooks,
  kToolsTls,
  kContextLocalStorage,
  kContextChecks,
  kIntegrityCheck,
};
constexpr const char* kTableNames[] = {"CUDART_INTERFACE", "TOOLS_RUNTIME_CALLBACK_HOOKS",
                                       "TOOLS_TLS",        "CONTEXT_LOCAL_STORAGE",
                                       "CONTEXT_CHECKS",   "INTEGRITY_CHECK"};

CUresult SlotNotSupported(TableId table, int slot, std::atomic<bool>* once) {
  if (!once->exchange(true, std::memory_order_relaxed)) {
    PVGPU_WARN("export table " << kTableNames[table] << " slot " << slot
                               << " is not supported by pvgpu");
  } else {
    PVGPU_TRACE("export table " << kTableNames[table] << " slot " << slot
                                << "() -> CUDA_ERROR_NOT_SUPPORTED");
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

// A slot of unknown signature. Declared without parameters: the caller owns its arguments
// (System V ABI), and a CUresult is what every known slot of these tables returns.
template <TableId kTable, int kSlot>
CUresult NotImplementedSlot() {
  static std::atomic<bool> once{false};
  return SlotNotSupported(kTable, kSlot, &once);
}

template <TableId kTable, int kSlot>
const void* NotImplemented() {
  return reinterpret_cast<const void*>(&NotImplementedSlot<kTable, kSlot>);
}
template <typename F>
const void* Fn(F* function) {
  return reinterpret_cast<const void*>(function);
}
const void* Size(size_t slots) { return reinterpret_cast<const void*>(slots * sizeof(void*)); }

// CUDART_INTERFACE: module loading and the primary context. 13 slots in 13.x (10 in older).
const void* const kCudartInterfaceTable[] = {
    Size(13),                                // [0] size
    Fn(&CudartModuleFromWrapper),            // [1] module from a __fatBinC_Wrapper_t
    Fn(&CudartPrimaryContext),               // [2] a device's primary context, unretained
    NotImplemented<kCudartInterface, 3>(),   // [3] unknown
    NotImplemented<kCudartInterface, 4>(),   // [4] unknown
    NotImplemented<kCudartInterface, 5>(),   // [5] unknown
    Fn(&CudartModuleFromWrapperEx),          // [6] [1] with three more (unused) arguments
    Fn(&CudartIgnoreSize),                   // [7] takes a size; nothing to do
    Fn(&CudartModuleFromFatbin),             // [8] module from a fatbin header
    NotImplemented<kCudartInterface, 9>(),   // [9] unknown
    NotImplemented<kCudartInterface, 10>(),  // [10] unknown
    NotImplemented<kCudartInterface, 11>(),  // [11] unknown
    Fn(&CudartLoadCompilers),                // [12] "load the JIT compilers": nothing to load
};

// TOOLS_RUNTIME_CALLBACK_HOOKS: where a profiler's runtime callbacks would be enabled. The
// runtime checks the size (at least 56).
const void* const kToolsRuntimeCallbackHooksTable[] = {
    Size(7),                                          // [0] size
    NotImplemented<kToolsRuntimeCallbackHooks, 1>(),  // [1] unknown
    Fn(&ToolsRuntimeCallbackFlags),                   // [2] per-runtime-API-call flags (zeros)
    NotImplemented<kToolsRuntimeCallbackHooks, 3>(),  // [3] unknown
    NotImplemented<kToolsRuntimeCallbackHooks, 4>(),  // [4] unknown
    NotImplemented<kToolsRuntimeCallbackHooks, 5>(),  // [5] unknown
    Fn(&ToolsSecondCallbackFlags),                    // [6] a second, smaller flag array (zeros)
};

// TOOLS_TLS: thread-local state for tools. Must exist; no slot was ever seen called.
const void* const kToolsTlsTable[] = {
    Size(4),                         // [0] size
    NotImplemented<kToolsTls, 1>(),  // [1] unknown
    NotImplemented<kToolsTls, 2>(),  // [2] unknown
    NotImplemented<kToolsTls, 3>(),  // [3] unknown
};

// CONTEXT_LOCAL_STORAGE: the runtime's per-context state. No size slot; ends with NULL.
const void* const kContextLocalStorageTable[] = {
    Fn(&ContextStoragePut),     // [0] put(ctx, key, value, destructor)
    Fn(&ContextStorageDelete),  // [1] delete(ctx, key), destructor not run
    Fn(&ContextStorageGet),     // [2] get(&value, ctx, key); a miss is an error
    nullptr,                    // [3] end of table
};

// CONTEXT_CHECKS: asked when the runtime adopts, synchronizes or resets a context.
const void* const kContextChecksTable[] = {
    Size(4),                              // [0] size
    NotImplemented<kContextChecks, 1>(),  // [1] unknown
    Fn(&ContextCheck),                    // [2] check(ctx, &result, &unused): result 0, success
    Fn(&ContextCheckMode),                // [3] returns 0 (1 adds a cuCtxSetCurrent per adoption)
};

// INTEGRITY_CHECK: the driver proves who it is (integrity_message.h).
const void* const kIntegrityCheckTable[] = {
    Size(3),                               // [0] size
    Fn(&IntegrityCheck),                   // [1] HMAC-MD2 of the process and its devices
    NotImplemented<kIntegrityCheck, 2>(),  // [2] unknown
};

struct ExportTable {
  const char* name;
  uint8_t id[16];            // CUuuid bytes in memory order
  const void* const* table;  // nullptr: known, declined with CUDA_ERROR_NOT_FOUND
};

const ExportTable kExportTables[] = {
    {"CUDART_INTERFACE",
     {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
      0xf9},
     kCudartInterfaceTable},
    {"TOOLS_RUNTIME_CALLBACK_HOOKS",
     {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
      0x66},
     kToolsRuntimeCallbackHooksTable},
    {"TOOLS_TLS",
     {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
      0xdc},
     kToolsTlsTable},
    {"CONTEXT_LOCAL_STORAGE",
     {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
      0x93},
     kContextLocalStorageTable},
    {"CONTEXT_CHECKS",
     {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
      0x7e},
     kContextChecksTable},
    {"INTEGRITY_CHECK",
     {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
      0xf2},
     kIntegrityCheckTable},
    // Asked for first by 12.9 and 13.0, before cuInit. They go on without it; a table of
    // NOT_SUPPORTED slots would instead fail any runtime that does use it.
    {"f8cff951 (unnamed)",
     {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d,
      0xd9},
     nullptr},
};

// Tables of NVIDIA's libraries that pvgpu has seen asked for and does not have. They are
// refused like any unknown table (CUDA_ERROR_INVALID_VALUE); the line logged says whose table
// it is and what the refusal costs.
struct RefusedTable {
  uint8_t id[16];
  bool harmless;  // the caller carries on without it: logged at debug level only
  const char* what;
};

const RefusedTable kRefusedTables[] = {
    // NVRTC asks for it while it compiles, and compiles just as well without it (CuPy's and
    // cuda-bindings' kernels are built with NVRTC on pvgpu every day).
    {{0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41, 0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3,
      0x28},
     true,
     "NVRTC's private table; NVRTC compiles without it"},
    // cuFFT gives up without it: every plan then fails with CUFFT_INTERNAL_ERROR.
    {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
      0xf2},
     false,
     "cuFFT's private table (libcufft's), which pvgpu does not have: cuFFT is not supported "
     "by pvgpu (its plans fail with CUFFT_INTERNAL_ERROR)"},
};

// Logs each refused UUID once: a library that asks in a loop needs only one line.
void LogRefused(const CUuuid& id) {
  static std::mutex mutex;
  static std::set<std::string>* seen = new std::set<std::string>();
  const std::string text = UuidText(id);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen->insert(text).second) return;
  }
  for (const RefusedTable& known : kRefusedTables) {
    if (std::memcmp(known.id, id.bytes, sizeof(known.id)) != 0) continue;
    if (known.harmless) {
      PVGPU_DEBUG("cuGetExportTable: refused export table " << text << ", " << known.what);
    } else {
      PVGPU_WARN("cuGetExportTable: refused export table " << text << ", " << known.what);
    }
    return;
  }
  PVGPU_WARN("cuGetExportTable: unknown export table " << text << " is not supported by pvgpu");
}

}  // namespace

std::string UuidText(const CUuuid& id) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    const auto b = static_cast<uint8_t>(id.bytes[i]);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

CUresult GetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  for (const ExportTable& known : kExportTables) {
    if (std::memcmp(known.id, id->bytes, sizeof(known.id)) != 0) continue;
    PVGPU_TRACE("cuGetExportTable(" << UuidText(*id) << ") -> " << known.name
                                    << (known.table != nullptr ? "" : ": declined"));
    if (known.table == nullptr) return CUDA_ERROR_NOT_FOUND;
    *table = known.table;
    return CUDA_SUCCESS;
  }
  LogRefused(*id);
  return CUDA_ERROR_INVALID_VALUE;
}

ExportTableAddresses GetExportTableAddresses() {
  return {reinterpret_cast<uint64_t>(kCudartInterfaceTable),
          reinterpret_cast<uint64_t>(kIntegrityCheckTable),
          reinterpret_cast<uint64_t>(kIntegrityCheckTable[1])};
}

// The export's body (exports.txt).
namespace api {

Code GetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  return FromCu(pvgpu::guest::GetExportTable(ppExportTable, pExportTableId));
}

}  // namespace api
}  // namespace pvgpu::guest
