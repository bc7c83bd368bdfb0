// Guest-side objects behind the CUDA driver API's opaque handles, and the process state of the
// user-mode driver: initialization, devices, primary contexts, the per-thread context stack.
//
// Handles given to the application are pointers to these objects. Every entry point checks a
// handle against the registry of live objects before touching it, so a stale or forged handle
// gets CUDA_ERROR_INVALID_HANDLE / INVALID_CONTEXT instead of a crash.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/log.h"
#include "common/status.h"
#include "guest/client/client.h"
#include "protocol/wire.h"

// The opaque types cuda.h declares; defined here as the guest's records.
namespace pvgpu::guest {
class Client;
}

struct CUctx_st {
  pvgpu::guest::Client* client = nullptr;  // the host the context lives on
  uint64_t handle = 0;
  CUdevice device = 0;
  unsigned int flags = 0;
  bool primary = false;
  uint64_t last_seq = 0;  // fence value of the last work submitted in this context
  size_t limits[16] = {};
  // The host's fault count when this context last learnt, by asking, that it had no error
  // (pvgpu::guest::SynchronizeContext); ~0: never.
  std::atomic<uint64_t> faults_seen{~uint64_t{0}};
};

struct CUmod_st;

struct CUfunc_st {
  CUmod_st* module = nullptr;
  uint32_t index = 0;
  const pvgpu::protocol::KernelDescription* kernel = nullptr;
  int max_dynamic_shared = 0;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

struct CUmod_st {
  uint64_t handle = 0;
  CUctx_st* ctx = nullptr;
  pvgpu::protocol::ModuleDescription description;
  std::vector<CUfunc_st> functions;
};

struct CUstream_st {
  uint64_t handle = 0;
  CUctx_st* ctx = nullptr;
  unsigned int flags = 0;
  int priority = 0;
  uint64_t last_seq = 0;
};

struct CUevent_st {
  uint64_t handle = 0;
  CUctx_st* ctx = nullptr;
  unsigned int flags = 0;
  uint64_t record_seq = 0;  // 0: never recorded
};

namespace pvgpu::guest {

// Converts an internal code to the CUresult the API returns.
inline CUresult ToCu(Code code) { return static_cast<CUresult>(code); }

struct Device {
  Client* client = nullptr;   // the host that serves this device
  uint32_t remote_index = 0;  // the adapter's index on that host
  protocol::DeviceGetInfoReply info{};
};

// Pinned host memory. Memory from cuMemHostAlloc lives in a sealed memfd that each host the
// guest copies with maps too, so copies need no staging; memory registered with
// cuMemHostRegister is the application's own and is copied through the ring like pageable
// memory.
struct PinnedRegion {
  void* base = nullptr;
  size_t size = 0;
  unsigned int flags = 0;
  int fd = -1;             // a shared file behind the pages; -1 when there is none
  bool allocated = false;  // by cuMemHostAlloc (else registered application memory)
  std::map<Client*, uint64_t> handles;             // registration on each host
  std::map<CUctx_st*, CUdeviceptr> device_pointers;  // CU_MEMHOSTALLOC_DEVICEMAP mappings
};

struct PrimaryContext {
  CUctx_st* ctx = nullptr;  // live while refcount > 0
  int refcount = 0;
  unsigned int flags = 0;
};

class DriverState {
 public:
  static DriverState& Get();

  // cuInit: connects to the host and caches its devices.
  CUresult Init(unsigned int flags);
  // CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded.
  CUresult CheckInit() const {
    return initialized_.load(std::memory_order_acquire) ? CUDA_SUCCESS : init_error_.load();
  }
  int device_count() const { return static_cast<int>(devices_.size()); }
  const Device* device(CUdevice ordinal) const {
    return ordinal >= 0 && ordinal < device_count() ? &devices_[ordinal] : nullptr;
  }

  std::mutex& mutex() { return mutex_; }
  PrimaryContext& primary(CUdevice device) { return primaries_[device]; }

  // Registries of live objects (take mutex()).
  std::unordered_set<CUctx_st*> contexts;
  std::unordered_set<CUmod_st*> modules;
  std::unordered_set<CUstream_st*> streams;
  std::unordered_set<CUevent_st*> events;
  // Device allocations per context, for range checks and cuMemGetAddressRange.
  std::map<CUdeviceptr, std::pair<size_t, CUctx_st*>> allocations;
  // Pinned host memory by base address.
  std::map<uintptr_t, PinnedRegion*> pinned;

 private:
  DriverState() = default;
  std::mutex mutex_;
  std::atomic<bool> initialized_{false};
  std::atomic<CUresult> init_error_{CUDA_ERROR_NOT_INITIALIZED};
  std::vector<Device> devices_;
  std::vector<PrimaryContext> primaries_;
};

// The calling thread's context stack; the top is the current context.
std::vector<CUctx_st*>& ContextStack();
CUctx_st* CurrentContext();

// Resolves the context a call works in: the current one, which must be live.
CUresult CurrentLiveContext(CUctx_st** ctx);
bool LiveContext(CUctx_st* ctx);  // takes the driver mutex

// Whether `stream` names a default stream (nullptr, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)
// rather than a created one.
inline bool IsDefaultStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

// Resolves a stream handle for `ctx`: nullptr/CU_STREAM_LEGACY/PER_THREAD mean the default
// stream (wire handle 0). For stream-ordered work (`after_host_funcs`), first waits for the
// pending host functions the stream must follow (host_func.h).
CUresult ResolveStream(CUstream stream, CUctx_st** ctx, uint64_t* wire_handle,
                       bool after_host_funcs = true);
// Synchronizes with the work submitted in `ctx` up to `seq` and returns its first error, as
// cuCtxSynchronize and cuStreamSynchronize do. When the host publishes its fault count and it
// has not moved since the context last asked, finished work needs no message: the fence says
// it is done, the count that nothing failed. Otherwise `ask` (the round trip) decides.
template <typename Ask>
CUresult SynchronizeContext(CUctx_st* ctx, uint64_t seq, Ask ask);
// Copies a JIT log into a CU_JIT_*_LOG_BUFFER of `size` bytes (truncated, NUL-terminated) and,
// when `size_slot` is given, writes the bytes used (NUL included) back into that
// *_LOG_BUFFER_SIZE_BYTES option slot, as the driver does.
void WriteJitLog(const std::string& log, char* buffer, size_t size, void** size_slot);
// Notes that work was submitted on `stream` (seq from the client).
void NoteSubmitted(CUctx_st* ctx, CUstream stream, uint64_t seq);
// The last work the calling thread submitted on its per-thread default stream in `ctx` (0:
// none). The host runs a context's work in submission order, so once it is done, everything the
// per-thread stream must follow (earlier legacy-stream work) is too.
uint64_t PerThreadStreamSeq(CUctx_st* ctx);

// The bytes of a module image (PTX text with its NUL, a fatbin, or an ELF cubin).
CUresult ImageBytes(const void* image, std::string_view* bytes);

// A CUkernel passed where a CUfunction is expected: its function in the current context.
bool ResolveKernel(CUfunction maybe_kernel, CUfunction* function);

// True while `function`'s module is loaded.
bool LiveFunction(CUfunc_st* function);

// Finds the allocation holding [dptr, dptr + size); false when there is none.
bool FindAllocation(CUdeviceptr dptr, size_t size, CUctx_st** owner = nullptr);

// Finds the pinned region holding [p, p + size); false when the range is pageable memory.
bool FindPinned(const void* p, size_t size, PinnedRegion** region, size_t* offset);
// The region's handle on `client`, registering it there on first use. kNotSupported when the
// region cannot be shared with that host (registered memory, remote hosts): copy it instead.
Code RegionOnHost(PinnedRegion* region, Client* client, uint64_t* handle);

// Logs an API call at trace level (PVGPU_LOG=trace).
#define PVGPU_API_TRACE(name, args) PVGPU_TRACE(name << "(" << args << ")")

template <typename Ask>
CUresult SynchronizeContext(CUctx_st* ctx, uint64_t seq, Ask ask) {
  Client& client = *ctx->client;
  const std::optional<uint64_t> before = client.FaultCount();
  const bool can_skip = client.pipelined() && before.has_value() &&
                        *before != transport::Endpoint::kErrorCountUnknown;
  // Only for work about to finish: a long wait sleeps better on the host's reply, which rings
  // once, than on the fence, which rings at every message the host finishes meanwhile.
  if (can_skip && client.SpinUntilDone(seq, std::chrono::microseconds(20))) {
    // The count is published before the fence that covers the work that raised it.
    const std::optional<uint64_t> after = client.FaultCount();
    if (after == ctx->faults_seen.load(std::memory_order_relaxed)) return CUDA_SUCCESS;
  }
  const CUresult result = ask();
  // Learnt now: no error up to the count read before asking (anything recorded after that
  // moves the count again).
  if (result == CUDA_SUCCESS && before.has_value()) {
    ctx->faults_seen.store(*before, std::memory_order_relaxed);
  }
  return result;
}

}  // namespace pvgpu::guest
