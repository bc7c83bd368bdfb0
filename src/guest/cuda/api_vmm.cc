// Driver API: virtual memory management (docs/memory.md). Reservations, physical allocations
// and mappings live on the host, which checks each request against them; the guest keeps what
// the calls after them need without a round trip: which reservation and context an address
// belongs to (cuMemMap names only an address), the properties and reference count of each
// physical allocation (cuMemRetainAllocationHandle adds a reference that cuMemRelease drops),
// and which mappings are accessible (Objects::vmm_mapped, read by copies and pointer queries).
//
// A CUmemGenericAllocationHandle is the host's handle of the physical memory. The host is told
// to release it once no reference and no mapping names it any more, so a handle the guest can
// still hand to cuMemMap is always one the host knows.
#include <unordered_map>

#include "common/log.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// What every adapter offers: CUDA's granularity on NVIDIA GPUs, minimum and recommended alike.
// The host checks sizes against its adapter's own, which is the same.
constexpr uint64_t kGranularity = 2u << 20;

struct ReservationRecord {
  CUctx_st* ctx;
  uint64_t handle;  // the host's
};

struct PhysicalRecord {
  CUctx_st* ctx;
  uint64_t size;
  CUmemAllocationProp prop;
  uint64_t refs;  // cuMemCreate and each retain, plus one per mapping
};

class Registry {
 public:
  static Registry& Get() {
    static Registry* registry = new Registry;  // never destroyed: used until the process exits
    return *registry;
  }

  AddressMap<ReservationRecord> reservations;

  // Adds a reference to physical memory `id`; false when the guest holds none.
  bool Ref(uint64_t id, PhysicalRecord* record = nullptr) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = physicals_.find(id);
    if (it == physicals_.end()) return false;
    ++it->second.refs;
    if (record != nullptr) *record = it->second;
    return true;
  }
  // Drops one; the last tells the host to release the memory. False for an unknown handle.
  bool Unref(uint64_t id) EXCLUDES(mutex_) {
    CUctx_st* ctx = nullptr;
    {
      MutexLock lock(&mutex_);
      auto it = physicals_.find(id);
      if (it == physicals_.end()) return false;
      if (--it->second.refs > 0) return true;
      ctx = it->second.ctx;
      physicals_.erase(it);
    }
    if (LiveContext(ctx)) {
      protocol::VmmReleaseRequest request;
      request.ctx = ctx->handle;
      request.physical = id;
      (void)ctx->client->Post(request);
    }
    return true;
  }
  void Add(uint64_t id, const PhysicalRecord& record) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    physicals_[id] = record;
  }
  std::optional<PhysicalRecord> Find(uint64_t id) const EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    auto it = physicals_.find(id);
    if (it == physicals_.end()) return std::nullopt;
    return it->second;
  }
  // A destroyed context took its memory with it on the host.
  void DropOf(CUctx_st* ctx) EXCLUDES(mutex_) {
    reservations.EraseIf([ctx](const ReservationRecord& r) { return r.ctx == ctx; });
    objects().vmm_mapped.EraseIf([ctx](const VmmPiece& p) { return p.ctx == ctx; });
    MutexLock lock(&mutex_);
    std::erase_if(physicals_, [ctx](const auto& entry) { return entry.second.ctx == ctx; });
  }

 private:
  Registry() = default;
  mutable Mutex mutex_;
  std::unordered_map<uint64_t, PhysicalRecord> physicals_ GUARDED_BY(mutex_);
};

// Checks the properties of an allocation as cuMemCreate and cuMemGetAllocationGranularity
// take them.
Code CheckProp(const CUmemAllocationProp& prop, const char* call) {
  if (prop.type != CU_MEM_ALLOCATION_TYPE_PINNED) return Code::kInvalidValue;
  if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    if (prop.location.type == CU_MEM_LOCATION_TYPE_HOST ||
        prop.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
        prop.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) {
      PVGPU_WARN(call << ": host memory locations are not supported by pvgpu");
      return Code::kNotSupported;
    }
    return Code::kInvalidValue;
  }
  if (DriverState::Get().device(prop.location.id) == nullptr) return Code::kInvalidDevice;
  // POSIX file descriptors are what pvgpu exports (cuMemExportToShareableHandle).
  if ((prop.requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0) {
    PVGPU_WARN(call << ": shareable handles of type " << prop.requestedHandleTypes
                    << " are not supported by pvgpu (POSIX file descriptors are)");
    return Code::kNotSupported;
  }
  return Code::kOk;
}

// The reservation holding [ptr, ptr + size), in a live context.
Code FindReservation(CUdeviceptr ptr, size_t size, AddressMap<ReservationRecord>::Range* out) {
  auto found = Registry::Get().reservations.Find(ptr, size);
  if (!found.has_value()) return Code::kInvalidValue;
  if (!LiveContext(found->value.ctx)) return Code::kContextIsDestroyed;
  *out = *found;
  return Code::kOk;
}

// Calls `each(base, piece)` for the consecutive mappings starting at `ptr` and covering `size`
// bytes (the host has just confirmed they are whole mappings).
template <typename F>
void ForMappings(CUdeviceptr ptr, size_t size, F each) {
  for (uint64_t address = ptr; address - ptr < size;) {
    auto piece = objects().vmm_mapped.FindBase(address);
    if (!piece.has_value()) break;
    each(*piece);
    address += piece->size;
  }
}

// The shareable handle type of an export or import: kOk for POSIX file descriptors, the only
// kind pvgpu has; `call` names the API call for the log.
Code CheckShareableType(CUmemAllocationHandleType type, const char* call) {
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return Code::kOk;
  if (type == CU_MEM_HANDLE_TYPE_NONE) return Code::kInvalidValue;
  PVGPU_WARN(call << ": handles of type " << type
                  << " are not supported by pvgpu (POSIX file descriptors are)");
  return Code::kNotSupported;
}

}  // namespace

void DropVirtualMemoryOf(CUctx_st* ctx) { Registry::Get().DropOf(ctx); }

namespace api {

Code MemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                 CUmemAllocationGranularity_flags option) {
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return Code::kInvalidValue;
  }
  if (Code code = CheckProp(*prop, "cuMemGetAllocationGranularity"); code != Code::kOk) {
    return code;
  }
  *granularity = kGranularity;
  return Code::kOk;
}

Code MemAddressReserve(CUctx_st* ctx, CUdeviceptr* ptr, size_t size, size_t alignment,
                       CUdeviceptr addr, unsigned long long flags) {
  (void)addr;  // a hint, which CUDA may ignore too
  if (size == 0 || flags != 0) return Code::kInvalidValue;
  protocol::VmmReserveRequest request;
  request.ctx = ctx->handle;
  request.reservation = NextObjectId();
  request.size = size;
  request.alignment = alignment;
  protocol::VmmReserveReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return code;
  Registry::Get().reservations.Assign(reply.dptr, size, {ctx, request.reservation});
  *ptr = reply.dptr;
  return Code::kOk;
}

Code MemAddressFree(CUdeviceptr ptr, size_t size) {
  auto found = Registry::Get().reservations.FindBase(ptr);
  if (!found.has_value() || found->size != size) return Code::kInvalidValue;
  CUctx_st* ctx = found->value.ctx;
  if (!LiveContext(ctx)) return Code::kContextIsDestroyed;
  protocol::VmmFreeRequest request;
  request.ctx = ctx->handle;
  request.reservation = found->value.handle;
  if (Code code = ctx->client->Call(request); code != Code::kOk) return code;
  Registry::Get().reservations.TakeBase(ptr);
  return Code::kOk;
}

Code MemCreate(CUctx_st* ctx, CUmemGenericAllocationHandle* handle, size_t size,
               const CUmemAllocationProp* prop, unsigned long long flags) {
  if (flags != 0 || size == 0) return Code::kInvalidValue;
  if (Code code = CheckProp(*prop, "cuMemCreate"); code != Code::kOk) return code;
  if (prop->location.id != ctx->device) {
    PVGPU_WARN("cuMemCreate: memory of device " << prop->location.id
                                                << " made from a context of device " << ctx->device
                                                << " is not supported by pvgpu");
    return Code::kNotSupported;
  }
  if (size % kGranularity != 0) return Code::kInvalidValue;
  protocol::VmmCreateRequest request;
  request.ctx = ctx->handle;
  request.physical = NextObjectId();
  request.size = size;
  if (Code code = ctx->client->Call(request); code != Code::kOk) return code;
  CUmemAllocationProp kept = *prop;
  kept.win32HandleMetaData = nullptr;
  kept.allocFlags.compressionType = 0;  // what the memory is: neither compressed nor RDMA-capable
  kept.allocFlags.gpuDirectRDMACapable = 0;
  Registry::Get().Add(request.physical, {ctx, size, kept, 1});
  *handle = request.physical;
  return Code::kOk;
}

Code MemRelease(CUmemGenericAllocationHandle handle) {
  return Registry::Get().Unref(handle) ? Code::kOk : Code::kInvalidValue;
}

Code MemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
            unsigned long long flags) {
  if (flags != 0 || size == 0) return Code::kInvalidValue;
  AddressMap<ReservationRecord>::Range reservation;
  if (Code code = FindReservation(ptr, size, &reservation); code != Code::kOk) return code;
  Registry& registry = Registry::Get();
  PhysicalRecord physical;
  if (!registry.Ref(handle, &physical)) return Code::kInvalidValue;  // the mapping's reference
  CUctx_st* ctx = reservation.value.ctx;
  if (physical.ctx != ctx) {
    registry.Unref(handle);
    PVGPU_WARN(
        "cuMemMap: memory created in one context mapped into a reservation of another "
        "is not supported by pvgpu");
    return Code::kNotSupported;
  }
  protocol::VmmMapRequest request;
  request.ctx = ctx->handle;
  request.reservation = reservation.value.handle;
  request.physical = handle;
  request.address = ptr;
  request.size = size;
  request.offset = offset;
  if (Code code = ctx->client->Call(request); code != Code::kOk) {
    registry.Unref(handle);
    return code;
  }
  objects().vmm_mapped.Assign(ptr, size, VmmPiece{ctx, reservation.base, handle, false});
  return Code::kOk;
}

Code MemUnmap(CUdeviceptr ptr, size_t size) {
  if (size == 0) return Code::kInvalidValue;
  AddressMap<ReservationRecord>::Range reservation;
  if (Code code = FindReservation(ptr, size, &reservation); code != Code::kOk) return code;
  CUctx_st* ctx = reservation.value.ctx;
  protocol::VmmUnmapRequest request;
  request.ctx = ctx->handle;
  request.reservation = reservation.value.handle;
  request.address = ptr;
  request.size = size;
  if (Code code = ctx->client->Call(request); code != Code::kOk) return code;
  ForMappings(ptr, size, [](const AddressMap<VmmPiece>::Range& piece) {
    objects().vmm_mapped.TakeBase(piece.base);
    Registry::Get().Unref(piece.value.physical);
  });
  return Code::kOk;
}

Code MemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (size == 0 || count == 0) return Code::kInvalidValue;
  AddressMap<ReservationRecord>::Range reservation;
  if (Code code = FindReservation(ptr, size, &reservation); code != Code::kOk) return code;
  CUctx_st* ctx = reservation.value.ctx;
  unsigned int flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  bool named = false;
  for (size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& d = desc[i];
    if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        DriverState::Get().device(d.location.id) == nullptr) {
      return Code::kInvalidValue;
    }
    if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return Code::kInvalidValue;
    }
    if (d.location.id != ctx->device) {
      if (d.flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) continue;  // nothing to grant there
      PVGPU_WARN("cuMemSetAccess: access from device " << d.location.id << " to memory of device "
                                                       << ctx->device
                                                       << " is not supported by pvgpu");
      return Code::kNotSupported;
    }
    flags = d.flags;
    named = true;
  }
  if (!named) return Code::kOk;
  protocol::VmmSetAccessRequest request;
  request.ctx = ctx->handle;
  request.reservation = reservation.value.handle;
  request.address = ptr;
  request.size = size;
  request.flags = flags;
  if (Code code = ctx->client->Call(request); code != Code::kOk) return code;
  const bool accessible = flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ForMappings(ptr, size, [accessible](const AddressMap<VmmPiece>::Range& piece) {
    VmmPiece updated = piece.value;
    updated.accessible = accessible;
    objects().vmm_mapped.Assign(piece.base, piece.size, updated);
  });
  return Code::kOk;
}

Code MemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
      DriverState::Get().device(location->id) == nullptr) {
    return Code::kInvalidValue;
  }
  auto piece = objects().vmm_mapped.Find(ptr);
  if (!piece.has_value()) return Code::kInvalidValue;
  const bool granted = piece->value.accessible && location->id == piece->value.ctx->device;
  *flags = granted ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return Code::kOk;
}

Code MemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  auto piece = objects().vmm_mapped.Find(reinterpret_cast<uintptr_t>(addr));
  if (!piece.has_value() || !Registry::Get().Ref(piece->value.physical)) {
    return Code::kInvalidValue;
  }
  *handle = piece->value.physical;
  return Code::kOk;
}

// A POSIX file descriptor for physical memory made exportable as one, which any process may
// import (the host passes it; remote hosts cannot).
Code MemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                CUmemAllocationHandleType handleType, unsigned long long flags) {
  if (flags != 0) return Code::kInvalidValue;
  std::optional<PhysicalRecord> physical = Registry::Get().Find(handle);
  if (!physical.has_value()) return Code::kInvalidValue;
  if (Code code = CheckShareableType(handleType, "cuMemExportToShareableHandle");
      code != Code::kOk) {
    return code;
  }
  // CUDA exports only the types asked for at creation.
  if ((physical->prop.requestedHandleTypes & handleType) == 0) return Code::kInvalidValue;
  CUctx_st* ctx = physical->ctx;
  if (!LiveContext(ctx)) return Code::kContextIsDestroyed;
  protocol::VmmExportRequest request;
  request.ctx = ctx->handle;
  request.physical = handle;
  int fd = -1;
  if (Code code = ctx->client->CallReceivingFd(request, nullptr, &fd); code != Code::kOk) {
    if (code == Code::kNotSupported) {
      PVGPU_WARN(
          "cuMemExportToShareableHandle: this device cannot export memory (a remote "
          "host, or an adapter without it)");
    }
    return code;
  }
  *static_cast<int*>(shareableHandle) = fd;
  return Code::kOk;
}

// Physical memory of the current context from a POSIX file descriptor another process (or this
// one) exported; the descriptor stays the caller's.
Code MemImportFromShareableHandle(CUctx_st* ctx, CUmemGenericAllocationHandle* handle,
                                  void* osHandle, CUmemAllocationHandleType shHandleType) {
  if (Code code = CheckShareableType(shHandleType, "cuMemImportFromShareableHandle");
      code != Code::kOk) {
    return code;
  }
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
  if (fd < 0) return Code::kInvalidValue;
  protocol::VmmImportRequest request;
  request.ctx = ctx->handle;
  request.physical = NextObjectId();
  protocol::VmmImportReply reply{};
  if (Code code = ctx->client->CallWithFd(fd, request, &reply); code != Code::kOk) return code;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ctx->device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  Registry::Get().Add(request.physical, {ctx, reply.size, prop, 1});
  *handle = request.physical;
  return Code::kOk;
}

Code MemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                          CUmemGenericAllocationHandle handle) {
  std::optional<PhysicalRecord> physical = Registry::Get().Find(handle);
  if (!physical.has_value()) return Code::kInvalidValue;
  *prop = physical->prop;
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
