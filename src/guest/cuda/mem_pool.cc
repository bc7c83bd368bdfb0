// Stream-ordered memory pools: the pools, their chunks and suballocations, and the driver API
// calls on them (mem_pool.h).
//
// Why a block freed with cuMemFreeAsync may be handed out again at once, whatever stream the
// next cuMemAllocAsync names: the host runs all the work of a context in the order it was
// submitted, on one queue (host/session_stream.cc; the cuda adapter queues a context's work on
// one stream of the real driver). Work that used the block before its free was submitted
// earlier, so it has finished before any work submitted after the new allocation starts. The
// REUSE_* attributes are kept and reported, and every setting of them is safe here.
//
// Chunks belong to one context (the host checks every address against the context's
// allocations), so a pool's allocations in a context come from that context's chunks.
#include "guest/cuda/mem_pool.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

namespace {

// One chunk: a host allocation of `size` bytes, its unused ranges by offset.
struct Chunk {
  CUctx_st* ctx = nullptr;
  uint64_t size = 0;
  uint64_t used = 0;
  std::map<uint64_t, uint64_t> free;  // offset -> bytes
};

}  // namespace

// The record behind a CUmemoryPool. Its fields are read and written only with the pools'
// lock held (Registry::mutex_ below), by the functions of this file.
struct CUmemPoolHandle_st {
  CUdevice device = 0;
  bool is_default = false;
  bool destroyed = false;  // cuMemPoolDestroy'd with allocations outstanding
  uint64_t max_size = 0;   // CUmemPoolProps::maxSize; 0: no limit of its own
  uint64_t release_threshold = 0;
  int reuse_follow_event = 1, reuse_opportunistic = 1, reuse_internal = 1;
  uint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  uint64_t live = 0;  // allocations outstanding
  std::map<CUdeviceptr, Chunk> chunks;
};

namespace pvgpu::guest {

namespace {

using Pool = CUmemPoolHandle_st;

constexpr uint64_t kAlignment = 512;          // as cuMemAlloc's, stronger than CUDA's 256
constexpr uint64_t kChunkBytes = 2ull << 20;  // what a pool takes from the host at least
constexpr uint64_t kChunkGranule = 64ull << 10;

uint64_t RoundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

struct Allocation {
  Pool* pool;
  CUdeviceptr chunk;
  uint64_t bytes;  // as carved (rounded)
};

class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry();  // never destroyed: used at exit
    return *registry;
  }

  Mutex mutex_;
  std::map<Pool*, std::unique_ptr<Pool>> pools_ GUARDED_BY(mutex_);  // live or draining
  std::map<CUdevice, Pool*> defaults_ GUARDED_BY(mutex_);
  std::map<CUdevice, Pool*> current_ GUARDED_BY(mutex_);
  std::map<CUdeviceptr, Allocation> allocations_ GUARDED_BY(mutex_);
  bool any_ GUARDED_BY(mutex_) = false;  // a pool ever held memory (skips work at syncs)

  // A live (not destroyed) pool, or null.
  Pool* Live(CUmemoryPool handle) REQUIRES(mutex_) {
    auto it = pools_.find(handle);
    return it == pools_.end() || it->second->destroyed ? nullptr : it->second.get();
  }
  Pool* Default(CUdevice device) REQUIRES(mutex_) {
    Pool*& pool = defaults_[device];
    if (pool == nullptr) {
      auto made = std::make_unique<Pool>();
      made->device = device;
      made->is_default = true;
      pool = made.get();
      pools_[pool] = std::move(made);
    }
    return pool;
  }
  Pool* Current(CUdevice device) REQUIRES(mutex_) {
    auto it = current_.find(device);
    return it != current_.end() ? it->second : Default(device);
  }

  // Gives chunk `it` back to the host and forgets it.
  std::map<CUdeviceptr, Chunk>::iterator Release(Pool& pool,
                                                 std::map<CUdeviceptr, Chunk>::iterator it)
      REQUIRES(mutex_) {
    CUctx_st* ctx = it->second.ctx;
    if (LiveContext(ctx)) {
      protocol::MemFreeRequest request;
      request.ctx = ctx->handle;
      request.dptr = it->first;
      if (Code code = ctx->client->Call(request); code != Code::kOk) {
        PVGPU_DEBUG("memory pool: giving back a chunk of " << it->second.size
                                                           << " bytes: " << ResultName(code));
      }
    }
    pool.reserved -= it->second.size;
    return pool.chunks.erase(it);
  }

  // Gives unused chunks back while the pool holds more than `keep` bytes; only those of `ctx`
  // unless it is null.
  void ReleaseUnused(Pool& pool, uint64_t keep, CUctx_st* ctx) REQUIRES(mutex_) {
    for (auto it = pool.chunks.begin(); it != pool.chunks.end() && pool.reserved > keep;) {
      const bool unused = it->second.used == 0 && (ctx == nullptr || it->second.ctx == ctx);
      it = unused ? Release(pool, it) : std::next(it);
    }
  }

  // A destroyed pool goes once its last allocation does.
  void ForgetIfDrained(Pool* pool) REQUIRES(mutex_) {
    if (!pool->destroyed || pool->live != 0) return;
    ReleaseUnused(*pool, 0, nullptr);
    pools_.erase(pool);
  }

  // Carves `bytes` (rounded) from a chunk of `ctx`; 0 when none has room.
  CUdeviceptr Carve(Pool& pool, CUctx_st* ctx, uint64_t bytes) REQUIRES(mutex_) {
    for (auto& [base, chunk] : pool.chunks) {
      if (chunk.ctx != ctx) continue;
      for (auto it = chunk.free.begin(); it != chunk.free.end(); ++it) {
        if (it->second < bytes) continue;
        const uint64_t offset = it->first, room = it->second;
        chunk.free.erase(it);
        if (room > bytes) chunk.free[offset + bytes] = room - bytes;
        chunk.used += bytes;
        allocations_[base + offset] = Allocation{&pool, base, bytes};
        return base + offset;
      }
    }
    return 0;
  }

  // Takes a chunk of at least `bytes` from the host for `ctx`.
  Code Grow(Pool& pool, CUctx_st* ctx, uint64_t bytes) REQUIRES(mutex_) {
    uint64_t size = bytes <= kChunkBytes ? kChunkBytes : RoundUp(bytes, kChunkGranule);
    if (pool.max_size != 0) {
      if (pool.reserved + bytes > pool.max_size) return Code::kOutOfMemory;
      size = std::min(size, pool.max_size - pool.reserved);
    }
    protocol::MemAllocRequest request;
    request.ctx = ctx->handle;
    request.size = size;
    protocol::MemAllocReply reply;
    Code code = ctx->client->Call(request, {}, &reply);
    if (code == Code::kOutOfMemory && size > bytes) {
      // The quota or the device may hold the allocation without the rest of a chunk.
      request.size = size = bytes;
      code = ctx->client->Call(request, {}, &reply);
    }
    if (code != Code::kOk) return code;
    Chunk& chunk = pool.chunks[reply.dptr];
    chunk.ctx = ctx;
    chunk.size = size;
    chunk.free[0] = size;
    pool.reserved += size;
    pool.reserved_high = std::max(pool.reserved_high, pool.reserved);
    any_ = true;
    return Code::kOk;
  }

  Code Allocate(Pool& pool, CUctx_st* ctx, uint64_t size, CUdeviceptr* dptr) REQUIRES(mutex_) {
    if (size == 0) return Code::kInvalidValue;
    if (size > ~0ull - kChunkGranule) return Code::kOutOfMemory;
    const uint64_t bytes = RoundUp(size, kAlignment);
    CUdeviceptr address = Carve(pool, ctx, bytes);
    if (address == 0) {
      Code code = Grow(pool, ctx, bytes);
      if (code == Code::kOutOfMemory) {
        // What this pool holds unused may be what stands in the way (of the quota or the
        // device): give it back and try once more, as CUDA does before failing.
        ReleaseUnused(pool, 0, nullptr);
        code = Grow(pool, ctx, bytes);
      }
      if (code != Code::kOk) return code;
      address = Carve(pool, ctx, bytes);
      if (address == 0) return Code::kOutOfMemory;
    }
    pool.used += bytes;
    pool.used_high = std::max(pool.used_high, pool.used);
    ++pool.live;
    // The guest's record of device memory holds the allocation itself, not its chunk: ranges
    // are checked against what the program was given.
    objects().device_memory.Assign(address, size, ctx);
    *dptr = address;
    return Code::kOk;
  }

  // Returns the allocation at `dptr` to its pool; false when none starts there.
  bool Free(CUdeviceptr dptr) REQUIRES(mutex_) {
    auto found = allocations_.find(dptr);
    if (found == allocations_.end()) return false;
    const Allocation allocation = found->second;
    allocations_.erase(found);
    objects().device_memory.TakeBase(dptr);
    Pool* pool = allocation.pool;
    pool->used -= allocation.bytes;
    --pool->live;
    auto chunk_it = pool->chunks.find(allocation.chunk);
    if (chunk_it != pool->chunks.end()) {
      Chunk& chunk = chunk_it->second;
      chunk.used -= allocation.bytes;
      auto [it, inserted] = chunk.free.emplace(dptr - allocation.chunk, allocation.bytes);
      (void)inserted;
      if (auto next = std::next(it);
          next != chunk.free.end() && it->first + it->second == next->first) {
        it->second += next->second;
        chunk.free.erase(next);
      }
      if (it != chunk.free.begin()) {
        if (auto prev = std::prev(it); prev->first + prev->second == it->first) {
          prev->second += it->second;
          chunk.free.erase(it);
        }
      }
    }
    ForgetIfDrained(pool);
    return true;
  }
};

// Reads or writes one attribute's value of type T through the caller's pointer.
template <typename T>
T LoadValue(const void* value) {
  T out;
  std::memcpy(&out, value, sizeof(T));
  return out;
}
template <typename T>
void StoreValue(void* value, T in) {
  std::memcpy(value, &in, sizeof(T));
}

Code CheckDeviceLocation(const CUmemLocation& location) {
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE) return Code::kInvalidValue;
  if (DriverState::Get().device(location.id) == nullptr) return Code::kInvalidDevice;
  return Code::kOk;
}

}  // namespace

void DropPoolMemoryOf(CUctx_st* ctx) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  std::vector<Pool*> touched;
  for (auto it = r.allocations_.begin(); it != r.allocations_.end();) {
    Pool* pool = it->second.pool;
    auto chunk = pool->chunks.find(it->second.chunk);
    if (chunk == pool->chunks.end() || chunk->second.ctx != ctx) {
      ++it;
      continue;
    }
    pool->used -= it->second.bytes;
    --pool->live;
    touched.push_back(pool);
    it = r.allocations_.erase(it);
  }
  for (auto& [handle, pool] : r.pools_) {
    for (auto it = pool->chunks.begin(); it != pool->chunks.end();) {
      if (it->second.ctx != ctx) {
        ++it;
        continue;
      }
      pool->reserved -= it->second.size;
      it = pool->chunks.erase(it);  // the host freed it with the context
    }
  }
  for (Pool* pool : touched) {
    if (r.pools_.count(pool) != 0) r.ForgetIfDrained(pool);
  }
}

void ReleasePoolMemoryAfterSync(CUctx_st* ctx) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  if (!r.any_) return;
  for (auto& [handle, pool] : r.pools_) {
    if (pool->reserved > pool->release_threshold) {
      r.ReleaseUnused(*pool, pool->release_threshold, ctx);
    }
  }
}

bool FreePoolAllocation(CUdeviceptr dptr, Code* code) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  if (!r.Free(dptr)) return false;
  *code = Code::kOk;
  return true;
}

void AdjustMemoryAttributes(Device* device) {
  auto& a = device->info.attributes;
  // Pools live in the guest: the same on every adapter and channel.
  a[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] = 1;
  a[CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES] = 0;  // no IPC pools
  a[CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED] = 0;     // device locations only
  a[CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED] = 0;
  // Stream memory operations: writes are copies and waits the session's polls, on every
  // adapter (host/session_memops.cc); nothing to flush remote writes for.
  a[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1] = 1;
  a[CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1] = 1;
  a[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1] = 1;
  a[CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS] = 1;
  a[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR] = 1;
  a[CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES] = 0;
  // Virtual memory management (api_vmm.cc) works on every adapter, without host locations.
  // Its shareable handles are POSIX file descriptors, which only a local host can pass (no
  // fabric or Windows handles).
  a[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 1;
  const bool local = device->client != nullptr && device->client->address().starts_with("unix:");
  a[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = local ? 1 : 0;
  a[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED] = 0;
  a[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED] = 0;
  a[CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED] = 0;
  a[CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 0;
  a[CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 0;
  a[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED] = 0;
}

namespace api {

Code MemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                           const StreamRef& hStream) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* live = r.Live(pool);
  if (live == nullptr) return Code::kInvalidValue;
  if (live->device != hStream.ctx->device) return Code::kInvalidValue;
  return r.Allocate(*live, hStream.ctx, bytesize, dptr);
}

// cuMemAllocAsync and cuMemFreeAsync on a capturing stream become the graph's allocation and
// free nodes (api_graph_memory.cc): the memory is the graph's, at its address for the graph's
// life. Nothing (nullopt) when the stream is not capturing.
static std::optional<Code> CaptureAlloc(CUdeviceptr* dptr, size_t bytesize,
                                        const StreamRef& stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (StreamIsCapturing(stream, &status) != Code::kOk || status == CU_STREAM_CAPTURE_STATUS_NONE) {
    return std::nullopt;
  }
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, stream.ctx->device};
  params.bytesize = bytesize;
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    if (Code code = MakeGraphAllocation(params, &node->allocation); code != Code::kOk) {
      return code;
    }
  }
  const CUdeviceptr address = node->allocation != nullptr ? node->allocation->dptr : 0;
  std::optional<Code> captured = CaptureNode(stream, std::move(node));
  if (captured == Code::kOk) *dptr = address;
  return captured;
}

static std::optional<Code> CaptureFree(CUdeviceptr dptr, const StreamRef& stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (StreamIsCapturing(stream, &status) != Code::kOk || status == CU_STREAM_CAPTURE_STATUS_NONE) {
    return std::nullopt;
  }
  // Only the graph's own memory can be freed by it; freeing other memory while capturing
  // would free it at capture time, before the graph's work that may still use it.
  if (!IsGraphAllocation(dptr)) return Code::kInvalidValue;
  auto node = std::make_unique<CUgraphNode_st>();
  node->type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  node->freed = dptr;
  return CaptureNode(stream, std::move(node));
}

Code MemAllocAsync(CUdeviceptr* dptr, size_t bytesize, const StreamRef& hStream) {
  if (CaptureActive()) {
    if (bytesize == 0) return Code::kInvalidValue;
    if (auto captured = CaptureAlloc(dptr, bytesize, hStream)) return *captured;
  }
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  return r.Allocate(*r.Current(hStream.ctx->device), hStream.ctx, bytesize, dptr);
}

Code MemFreeAsync(CUdeviceptr dptr, const StreamRef& hStream) {
  if (CaptureActive()) {
    if (auto captured = CaptureFree(dptr, hStream)) return *captured;
  }
  // The host runs the context's work in order: the block is free at once.
  if (Code code; FreePoolAllocation(dptr, &code)) return code;
  if (Code code; FreeGraphAllocation(dptr, &code)) return code;
  // Memory from cuMemAlloc may be freed this way too; its free follows earlier work anyway.
  if (!objects().device_memory.FindBase(dptr).has_value()) return Code::kInvalidValue;
  return MemFree_v2(dptr);
}

Code MemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return Code::kInvalidValue;
  if (Code code = CheckDeviceLocation(poolProps->location); code != Code::kOk) {
    return code == Code::kInvalidDevice ? Code::kInvalidValue : code;
  }
  if (poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE) {
    PVGPU_WARN("cuMemPoolCreate: pools with shareable handles (IPC) are not supported by pvgpu");
    return Code::kNotSupported;
  }
  auto made = std::make_unique<Pool>();
  made->device = poolProps->location.id;
  made->max_size = poolProps->maxSize;
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  *pool = made.get();
  r.pools_[made.get()] = std::move(made);
  return Code::kOk;
}

Code MemPoolDestroy(CUmemoryPool pool) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* live = r.Live(pool);
  if (live == nullptr || live->is_default) return Code::kInvalidValue;
  for (auto it = r.current_.begin(); it != r.current_.end();) {
    it = it->second == live ? r.current_.erase(it) : std::next(it);
  }
  // Outstanding allocations stay valid until freed; the pool goes with the last of them.
  live->destroyed = true;
  r.ForgetIfDrained(live);
  return Code::kOk;
}

Code MemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* live = r.Live(pool);
  if (live == nullptr) return Code::kInvalidValue;
  r.ReleaseUnused(*live, minBytesToKeep, nullptr);
  return Code::kOk;
}

Code MemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (value == nullptr) return Code::kInvalidValue;
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* p = r.Live(pool);
  if (p == nullptr) return Code::kInvalidValue;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      p->reuse_follow_event = LoadValue<int>(value) != 0;
      return Code::kOk;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      p->reuse_opportunistic = LoadValue<int>(value) != 0;
      return Code::kOk;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->reuse_internal = LoadValue<int>(value) != 0;
      return Code::kOk;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = LoadValue<cuuint64_t>(value);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (LoadValue<cuuint64_t>(value) != 0) return Code::kInvalidValue;  // only a reset
      p->reserved_high = p->reserved;
      return Code::kOk;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (LoadValue<cuuint64_t>(value) != 0) return Code::kInvalidValue;
      p->used_high = p->used;
      return Code::kOk;
    default:
      return Code::kInvalidValue;  // the current counters are read-only
  }
}

Code MemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* p = r.Live(pool);
  if (p == nullptr) return Code::kInvalidValue;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      StoreValue<int>(value, p->reuse_follow_event);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      StoreValue<int>(value, p->reuse_opportunistic);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      StoreValue<int>(value, p->reuse_internal);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      StoreValue<cuuint64_t>(value, p->release_threshold);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      StoreValue<cuuint64_t>(value, p->reserved);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      StoreValue<cuuint64_t>(value, p->reserved_high);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      StoreValue<cuuint64_t>(value, p->used);
      return Code::kOk;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      StoreValue<cuuint64_t>(value, p->used_high);
      return Code::kOk;
    default:
      return Code::kInvalidValue;
  }
}

Code MemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* p = r.Live(pool);
  if (p == nullptr) return Code::kInvalidValue;
  for (size_t i = 0; i < count; ++i) {
    if (Code code = CheckDeviceLocation(map[i].location); code != Code::kOk) return code;
    const unsigned int flags = map[i].flags;
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return Code::kInvalidValue;
    }
    if (map[i].location.id == p->device) {
      // The pool's own device always has read-write access, and cannot lose it.
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return Code::kInvalidValue;
    } else if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) {
      // No device reaches another's memory in pvgpu (cuDeviceCanAccessPeer says 0).
      return Code::kInvalidDevice;
    }
  }
  return Code::kOk;  // nothing changes: the owner keeps read-write, the others none
}

Code MemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  if (Code code = CheckDeviceLocation(*location); code != Code::kOk) return code;
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* p = r.Live(memPool);
  if (p == nullptr) return Code::kInvalidValue;
  *flags = location->id == p->device ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                     : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return Code::kOk;
}

Code DeviceGetDefaultMemPool(CUmemoryPool* pool_out, const Device& dev) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  *pool_out = r.Default(dev.ordinal);
  return Code::kOk;
}

Code DeviceGetMemPool(CUmemoryPool* pool, const Device& dev) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  *pool = r.Current(dev.ordinal);
  return Code::kOk;
}

Code DeviceSetMemPool(const Device& dev, CUmemoryPool pool) {
  Registry& r = Registry::Get();
  MutexLock lock(&r.mutex_);
  Pool* p = r.Live(pool);
  if (p == nullptr || p->device != dev.ordinal) return Code::kInvalidValue;
  r.current_[dev.ordinal] = p;
  return Code::kOk;
}

}  // namespace api

}  // namespace pvgpu::guest
