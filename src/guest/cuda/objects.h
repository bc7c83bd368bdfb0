// The guest's records behind the CUDA driver API's opaque handles (CUcontext is a CUctx_st*,
// and so on). A handle given to the application is the address of its record; every call finds
// it in its typed store (stores.h) before touching it, so that a stale or forged handle is an
// error, not a crash.
//
// What a record's fields may do across threads: fields set when the record is made and never
// changed after it is stored are plain; fields that calls change while others read them are
// atomic (fence values, flags, limits), or guarded by the record's own Mutex.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/mutex.h"
#include "protocol/wire.h"

namespace pvgpu::guest {
class Client;
}

struct CUctx_st {
  pvgpu::guest::Client* client = nullptr;  // the host the context lives on
  // The host's handle; a new one after cuDevicePrimaryCtxReset.
  std::atomic<uint64_t> handle{0};
  // cuCtxGetId's answer and the id of the context's legacy default stream (cuStreamGetId):
  // new, like the handle, whenever the host side is created, so a reset context has new ids.
  std::atomic<uint64_t> id{0};
  std::atomic<uint64_t> legacy_stream_id{0};
  // The use count cuCtxAttach raises and cuCtxDetach lowers (created contexts; a primary
  // context counts its uses as retains).
  std::atomic<int> uses{1};
  CUdevice device = 0;
  std::atomic<unsigned int> flags{0};
  bool primary = false;
  std::atomic<uint64_t> last_seq{0};  // fence value of the last work submitted in this context
  std::atomic<size_t> limits[16]{};
  // The host's fault count when this context last learnt, by asking, that it had no error
  // (pvgpu::guest::SynchronizeContext); ~0: never.
  std::atomic<uint64_t> faults_seen{~uint64_t{0}};
};

struct CUmod_st;

// The execution state of CUDA 2.x's launch interface, kept per function: cuFuncSetBlockShape,
// cuFuncSetSharedSize and the parameter buffer of cuParamSetSize and cuParamSet{i,f,v}, which
// cuLaunch, cuLaunchGrid and cuLaunchGridAsync launch with (api_legacy_launch.cc).
struct LegacyLaunchState {
  unsigned int block[3] = {0, 0, 0};  // unset: a launch is refused
  unsigned int shared_bytes = 0;
  std::vector<uint8_t> params;  // cuParamSetSize bytes, written at the caller's offsets
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  uint32_t index = 0;
  const pvgpu::protocol::KernelDescription* kernel = nullptr;
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as cuFuncSetAttribute set it (0: unset),
  // and as cuKernelSetAttribute set it for the function's CUkernel on its device; the first
  // wins, whichever was set last (as CUDA documents).
  std::atomic<int> max_dynamic_shared{0};
  std::atomic<int> kernel_max_dynamic_shared{0};
  pvgpu::Mutex legacy_mutex;
  LegacyLaunchState legacy GUARDED_BY(legacy_mutex);
};

struct CUmod_st {
  uint64_t handle = 0;
  CUctx_st* ctx = nullptr;
  pvgpu::protocol::ModuleDescription description;
  std::vector<CUfunc_st> functions;  // one per description.kernels entry
};

struct CUstream_st {
  uint64_t handle = 0;
  CUctx_st* ctx = nullptr;
  unsigned int flags = 0;
  int priority = 0;
  uint64_t id = 0;  // cuStreamGetId
  std::atomic<uint64_t> last_seq{0};
};

struct CUevent_st {
  uint64_t handle = 0;
  CUctx_st* ctx = nullptr;
  unsigned int flags = 0;
  std::atomic<uint64_t> record_seq{0};  // 0: never recorded
};

namespace pvgpu::guest {

struct Device {
  CUdevice ordinal = 0;       // as the application numbers it (after CUDA_VISIBLE_DEVICES)
  Client* client = nullptr;   // the host that serves this device
  uint32_t remote_index = 0;  // the adapter's index on that host
  protocol::DeviceGetInfoReply info{};
};

// Pinned host memory. Memory from cuMemHostAlloc lives in a sealed memfd that each host the
// guest copies with maps too, so copies need no staging; memory registered with
// cuMemHostRegister is the application's own and is copied through the ring like pageable
// memory. The pages of allocated memory go when the last reference does (a copy in flight
// holds one), not at cuMemFreeHost.
struct PinnedRegion {
  PinnedRegion() = default;
  PinnedRegion(const PinnedRegion&) = delete;
  PinnedRegion& operator=(const PinnedRegion&) = delete;
  ~PinnedRegion();

  void* base = nullptr;
  size_t size = 0;
  unsigned int flags = 0;
  int fd = -1;             // a shared file behind the pages; -1 when there is none
  bool allocated = false;  // by cuMemHostAlloc (else registered application memory)
  Mutex mutex;
  std::map<Client*, uint64_t> handles GUARDED_BY(mutex);  // registration on each host
  // CU_MEMHOSTALLOC_DEVICEMAP mappings, per context.
  std::map<CUctx_st*, CUdeviceptr> device_pointers GUARDED_BY(mutex);
};

// A stream as a call works with it: a created stream, or a default stream (nullptr,
// CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) of the context it resolved to.
struct StreamRef {
  CUstream handle = nullptr;  // as the caller named it
  CUctx_st* ctx = nullptr;
  std::shared_ptr<CUstream_st> object;  // null for a default stream

  // The host's name for it: 0 for the default stream.
  uint64_t wire() const { return object != nullptr ? object->handle : 0; }
};

}  // namespace pvgpu::guest
