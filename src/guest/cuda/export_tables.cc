// Every export table pvgpu's libcuda answers, in one place: UUID, layout, and one line per slot.
//
// Slots the runtime was never seen to call are NotImplemented<table, slot>: each returns
// CUDA_ERROR_NOT_SUPPORTED and logs its table and slot the first time, so a runtime that starts
// using one says so. A size slot holds the table's byte size, slot 0 included. The tables are
// statics: the integrity check hashes their addresses, which must not change while the process
// lives.
#include "guest/cuda/export_tables.h"

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "common/log.h"
#include "common/uuid.h"
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
  std::array<uint8_t, 16> id;  // CUuuid bytes in memory order
  const void* const* table;    // nullptr: known, declined with CUDA_ERROR_NOT_FOUND
};

const ExportTable kExportTables[] = {
    {"CUDART_INTERFACE", ParseUuid("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"), kCudartInterfaceTable},
    {"TOOLS_RUNTIME_CALLBACK_HOOKS", ParseUuid("a094798c-2e74-2e74-93f2-0800200c0a66"),
     kToolsRuntimeCallbackHooksTable},
    {"TOOLS_TLS", ParseUuid("42d85a81-23f6-cb47-8298-f6e78a3aecdc"), kToolsTlsTable},
    {"CONTEXT_LOCAL_STORAGE", ParseUuid("c693336e-1121-df11-a8c3-68f355d89593"),
     kContextLocalStorageTable},
    {"CONTEXT_CHECKS", ParseUuid("263e8860-7cd2-6143-92f6-bbd5006dfa7e"), kContextChecksTable},
    {"INTEGRITY_CHECK", ParseUuid("d4082055-bde6-704b-8d34-ba123c66e1f2"), kIntegrityCheckTable},
    // Asked for first by 12.9 and 13.0, before cuInit. They go on without it; a table of
    // NOT_SUPPORTED slots would instead fail any runtime that does use it.
    {"f8cff951 (unnamed)", ParseUuid("f8cff951-2146-8b4e-b9e2-fb469e7c0dd9"), nullptr},
};

// Tables of NVIDIA's libraries that pvgpu has seen asked for and does not have. They are
// refused like any unknown table (CUDA_ERROR_INVALID_VALUE); the line logged says whose table
// it is and what the refusal costs.
struct RefusedTable {
  std::array<uint8_t, 16> id;
  bool harmless;  // the caller carries on without it: logged at debug level only
  const char* what;
};

const RefusedTable kRefusedTables[] = {
    // NVRTC asks for it while it compiles, and compiles just as well without it (CuPy's and
    // cuda-bindings' kernels are built with NVRTC on pvgpu every day).
    {ParseUuid("da9151d3-3ae6-cc41-a5c0-4f26d533e328"), true,
     "NVRTC's private table; NVRTC compiles without it"},
    // cuFFT gives up without it: every plan then fails with CUFFT_INTERNAL_ERROR.
    {ParseUuid("21318c60-9714-3248-8ca6-41ff7324c8f2"), false,
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
    if (std::memcmp(known.id.data(), id.bytes, known.id.size()) != 0) continue;
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
  return FormatUuid(reinterpret_cast<const uint8_t*>(id.bytes), "");
}

CUresult GetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  for (const ExportTable& known : kExportTables) {
    if (std::memcmp(known.id.data(), id->bytes, known.id.size()) != 0) continue;
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
