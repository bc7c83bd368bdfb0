// The process state of the user-mode driver: initialization, devices, primary contexts, the
// typed stores of live objects (one lock each) and the per-thread context stack, with the
// lookups every call uses.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "common/status.h"
#include "guest/client/client.h"
#include "guest/cuda/address_map.h"
#include "guest/cuda/handle_store.h"
#include "guest/cuda/objects.h"

struct CUlib_st;
struct CUkern_st;
struct CUlinkState_st;

namespace pvgpu::guest {

// Converts an internal code to the CUresult the API returns.
inline CUresult ToCu(Code code) { return static_cast<CUresult>(code); }
inline Code FromCu(CUresult result) { return static_cast<Code>(result); }

struct PrimaryContext {
  CUctx_st* ctx = nullptr;  // live while refcount > 0
  int refcount = 0;
  unsigned int flags = 0;
  // The record whose address is the device's primary-context handle: made on first use and
  // kept for the life of the process, so that the handle is the same before the first retain
  // (the CUDA runtime asks for it then), after a release and after a reset.
  Ref<CUctx_st> record;
};

// `device`'s primary-context handle (PrimaryContext::record), made on first use; the device
// ordinal must be valid.
CUctx_st* PrimaryContextRecord(CUdevice device);
// Whether `ctx` is some device's primary-context record, live or not (never dereferenced).
bool IsPrimaryContextRecord(const CUctx_st* ctx);

// A mapping of virtual memory (api_vmm.cc): which reservation of which context, and whether
// the context may access it (cuMemSetAccess).
struct VmmPiece {
  CUctx_st* ctx = nullptr;
  uint64_t reservation = 0;  // its base address
  uint64_t physical = 0;     // the CUmemGenericAllocationHandle mapped there
  bool accessible = false;
};

// The live objects behind the API's handles, one store per kind, each with its own lock. A
// store's lock is innermost: nothing else is locked while it is held. Held while a store is
// used: DriverState::primaries_mutex and a library's lock (api_library.cc), across a host round
// trip so that two threads create a primary context or load a library's module once; a pinned
// region's lock.
struct Objects {
  HandleStore<CUctx_st> contexts;  // records are never freed (api_context.cc says why)
  HandleStore<CUmod_st> modules;
  HandleStore<CUfunc_st> functions;  // each Ref keeps its module alive
  HandleStore<CUstream_st> streams;
  HandleStore<CUevent_st> events;
  HandleStore<CUlib_st> libraries;
  HandleStore<CUkern_st> kernels;
  HandleStore<CUlinkState_st> links;
  // Device memory by address, with the context that owns it: allocations, module globals and
  // pinned memory mapped for kernels, for range checks and cuMemGetAddressRange.
  AddressMap<CUctx_st*> device_memory;
  // Pinned host memory by address.
  AddressMap<Ref<PinnedRegion>> pinned;
  // Virtual memory mapped into reservations (api_vmm.cc), one range per cuMemMap.
  AddressMap<VmmPiece> vmm_mapped;
};

class DriverState {
 public:
  static DriverState& Get();

  // cuInit: connects to the host and caches its devices.
  Code Init(unsigned int flags) EXCLUDES(init_mutex_);
  // kNotInitialized until cuInit succeeded (or why cuInit failed).
  Code CheckInit() const {
    return initialized_.load(std::memory_order_acquire) ? Code::kOk : init_error_.load();
  }
  // The devices are set once, before initialized_, and never change after: no lock to read.
  int device_count() const { return static_cast<int>(devices_.size()); }
  const Device* device(CUdevice ordinal) const {
    return ordinal >= 0 && ordinal < device_count() ? &devices_[ordinal] : nullptr;
  }

  Objects& objects() { return objects_; }

  // One per device. A primary context is created on the host under this lock, so that two
  // threads retaining it at once create it once.
  Mutex primaries_mutex;
  std::vector<PrimaryContext> primaries GUARDED_BY(primaries_mutex);

 private:
  DriverState() = default;

  Mutex init_mutex_;
  std::atomic<bool> initialized_{false};
  std::atomic<Code> init_error_{Code::kNotInitialized};
  std::vector<Device> devices_;
  Objects objects_;
};

inline Objects& objects() { return DriverState::Get().objects(); }

// The calling thread's context stack; the top is the current context. Contexts are never freed,
// so the stack may hold destroyed ones (calls then find them gone from the store).
std::vector<CUctx_st*>& ContextStack();
CUctx_st* CurrentContext();

// Resolves the context a call works in: the current one, which must be live.
Code CurrentLiveContext(CUctx_st** ctx);
inline bool LiveContext(CUctx_st* ctx) { return objects().contexts.Contains(ctx); }

// Whether `stream` names a default stream (nullptr, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)
// rather than a created one.
inline bool IsDefaultStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

// Resolves a stream handle: a default stream is the current context's, a created one must be
// live with a live context.
Code ResolveStream(CUstream stream, StreamRef* out);
// For stream-ordered work: waits for the pending host functions `stream` must follow
// (host_func.h).
Code OrderAfterHostFuncs(const StreamRef& stream);
// The legacy default stream of the current context, for stream-ordered work.
Code DefaultStream(StreamRef* out);
// Waits for the work submitted so far on `stream` and returns its first error
// (cuStreamSynchronize).
Code SynchronizeStream(const StreamRef& stream);
// Synchronizes with the work submitted in `ctx` up to `seq` and returns its first error, as
// cuCtxSynchronize and cuStreamSynchronize do. When the host publishes its fault count and it
// has not moved since the context last asked, finished work needs no message: the fence says
// it is done, the count that nothing failed. Otherwise `ask` (the round trip) decides.
template <typename Ask>
Code SynchronizeContext(CUctx_st* ctx, uint64_t seq, Ask ask);
// Copies a JIT log into a CU_JIT_*_LOG_BUFFER of `size` bytes (truncated, NUL-terminated) and,
// when `size_slot` is given, writes the bytes used (NUL included) back into that
// *_LOG_BUFFER_SIZE_BYTES option slot, as the driver does.
void WriteJitLog(const std::string& log, char* buffer, size_t size, void** size_slot);
// Notes that work was submitted on `stream` (seq from the client).
void NoteSubmitted(const StreamRef& stream, uint64_t seq);
// Notes work submitted in `ctx` on its legacy default stream.
void NoteSubmitted(CUctx_st* ctx, uint64_t seq);
// The last work the calling thread submitted on its per-thread default stream in `ctx` (0:
// none). The host runs a context's work in submission order, so once it is done, everything the
// per-thread stream must follow (earlier legacy-stream work) is too.
uint64_t PerThreadStreamSeq(CUctx_st* ctx);

// A new id, unique for the life of the process (never 0): the ids cuCtxGetId and
// cuStreamGetId give.
uint64_t NextObjectId();

// The bytes of a module image (PTX text with its NUL, a fatbin, or an ELF cubin).
Code ImageBytes(const void* image, std::string_view* bytes);

// The function behind `function` while its module is loaded (the Ref keeps the module), else
// null.
inline Ref<CUfunc_st> FindFunction(CUfunction function) {
  return objects().functions.Find(function);
}

// The function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set by cuFuncSetAttribute,
// else by cuKernelSetAttribute for its CUkernel; 0 when neither set it.
inline int MaxDynamicSharedSet(const CUfunc_st& f) {
  const int own = f.max_dynamic_shared.load(std::memory_order_relaxed);
  return own != 0 ? own : f.kernel_max_dynamic_shared.load(std::memory_order_relaxed);
}

// The context owning device memory [dptr, dptr + size), if any memory holds all of it.
inline std::optional<CUctx_st*> FindAllocation(CUdeviceptr dptr, size_t size) {
  auto range = objects().device_memory.Find(dptr, size);
  if (range.has_value()) return range->value;
  // Accessible mappings of one reservation are one buffer, across their boundaries too.
  auto mapped = objects().vmm_mapped.FindRun(dptr, size, [](const VmmPiece& a, const VmmPiece& b) {
    return a.accessible && b.accessible && a.reservation == b.reservation;
  });
  if (!mapped.has_value() || !mapped->value.accessible) return std::nullopt;
  return mapped->value.ctx;
}

// Device memory of `ctx` from the host, and its release (api_memory.cc): cuMemAlloc and
// cuMemFree without their capture checks, for memory the driver itself manages (graph
// allocation nodes).
Code AllocateDevice(CUctx_st* ctx, size_t bytesize, CUdeviceptr* dptr);
Code ReleaseDevice(CUdeviceptr dptr);

// Forgets the virtual memory records of a destroyed context (api_vmm.cc).
void DropVirtualMemoryOf(CUctx_st* ctx);

// The pinned region holding [p, p + size) and the offset of p in it; null when the range is
// pageable memory.
Ref<PinnedRegion> FindPinned(const void* p, size_t size, size_t* offset);
// The region's handle on `client`, registering it there on first use. kNotSupported when the
// region cannot be shared with that host (registered memory, remote hosts): copy it instead.
Code RegionOnHost(PinnedRegion* region, Client* client, uint64_t* handle);

// Takes the record behind `handle` from `store` and posts the host's destroy request for it
// (which names the record by `field`): for records destroyed without waiting, streams and
// events. Of two threads destroying one handle at once, one takes it.
template <typename Request, typename T>
Code DestroyPosted(HandleStore<T>& store, T* handle, uint64_t Request::*field) {
  Ref<T> object = store.Take(handle);
  if (object == nullptr) return Code::kInvalidHandle;
  Request request;
  request.ctx = object->ctx->handle;
  request.*field = object->handle;
  return object->ctx->client->Post(request);
}

template <typename Ask>
Code SynchronizeContext(CUctx_st* ctx, uint64_t seq, Ask ask) {
  Client& client = *ctx->client;
  const std::optional<uint64_t> before = client.FaultCount();
  const bool can_skip = client.pipelined() && before.has_value() &&
                        *before != transport::Endpoint::kErrorCountUnknown;
  // Only for work about to finish: a long wait sleeps better on the host's reply, which rings
  // once, than on the fence, which rings at every message the host finishes meanwhile.
  if (can_skip && client.SpinUntilDone(seq, std::chrono::microseconds(20))) {
    // The count is published before the fence that covers the work that raised it.
    const std::optional<uint64_t> after = client.FaultCount();
    if (after == ctx->faults_seen.load(std::memory_order_relaxed)) return Code::kOk;
  }
  const Code result = ask();
  // Learnt now: no error up to the count read before asking (anything recorded after that
  // moves the count again).
  if (result == Code::kOk && before.has_value()) {
    ctx->faults_seen.store(*before, std::memory_order_relaxed);
  }
  return result;
}

}  // namespace pvgpu::guest
