// Driver API: pinned (page-locked) host memory.
//
// cuMemHostAlloc memory is a sealed memfd mapped into the guest and, on first use with a host,
// into that host's daemon: copies from and to it go straight between the shared pages and
// device memory, and kernels can address it (CU_MEMHOSTALLOC_DEVICEMAP). cuMemHostRegister
// cannot move the application's existing pages into shared memory; it records the range
// (flags, lookups) and copies from it are staged like pageable memory — unless the range is
// exactly a shared mapping of a sealed memfd from its start (what pvgpud itself registers when
// it runs on pvgpu's driver), which is shared with the host like cuMemHostAlloc memory.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

constexpr unsigned int kAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned int kRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

size_t PageRound(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

// Creates a sealed, shared memfd of `size` bytes and maps it.
Code CreateSharedPages(size_t size, int* fd_out, void** base) {
  const int fd = memfd_create("pvgpu-pinned", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Code::kOutOfMemory;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return Code::kOutOfMemory;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return Code::kOutOfMemory;
  }
  *fd_out = fd;
  *base = p;
  return Code::kOk;
}

// An fd for the sealed memfd mapped shared at exactly `p` from file offset 0 and at least
// `size` bytes long, or -1. Opening /proc/self/map_files needs CAP_SYS_ADMIN or
// CAP_CHECKPOINT_RESTORE; without it the memory is simply staged.
int SharedFileAt(void* p, size_t size) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return -1;
  const auto address = reinterpret_cast<uintptr_t>(p);
  char line[512];
  int fd = -1;
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    unsigned long start = 0, end = 0, offset = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s %lx", &start, &end, perms, &offset) != 4) continue;
    if (start != address) continue;
    if (perms[3] == 's' && offset == 0 && end - start >= size &&
        std::strstr(line, "/memfd:") != nullptr) {
      char path[64];
      std::snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", start, end);
      fd = open(path, O_RDWR | O_CLOEXEC);
      // Only sealed memfds can be shared: the host refuses anything it could be crashed by.
      if (fd >= 0 && (fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
                         (F_SEAL_SHRINK | F_SEAL_GROW)) {
        close(fd);
        fd = -1;
      }
    }
    break;
  }
  std::fclose(maps);
  return fd;
}

// Forgets the region at `base` (exactly) and tells every host that mapped it to let go of it;
// null when no region starts there. Its pages go with the last reference to it.
Ref<PinnedRegion> ReleaseRegion(void* base, bool allocated) {
  Objects& objects = pvgpu::guest::objects();
  auto found = objects.pinned.FindBase(reinterpret_cast<uintptr_t>(base));
  if (!found.has_value() || found->value->allocated != allocated) return nullptr;
  auto taken = objects.pinned.TakeBase(reinterpret_cast<uintptr_t>(base));
  if (!taken.has_value()) return nullptr;  // another thread released it meanwhile
  Ref<PinnedRegion> region = std::move(taken->value);
  std::map<Client*, uint64_t> handles;
  {
    MutexLock lock(&region->mutex);
    for (auto& [ctx, dptr] : region->device_pointers) objects.device_memory.TakeBase(dptr);
    handles.swap(region->handles);
  }
  for (auto& [client, handle] : handles) {
    protocol::HostRegionDestroyRequest request;
    request.region = handle;
    (void)client->Post(request);
  }
  return region;
}

}  // namespace

namespace api {

Code MemHostAlloc(CUctx_st* ctx, void** pp, size_t bytesize, unsigned int Flags) {
  if (bytesize == 0 || (Flags & ~kAllocFlags) != 0) return Code::kInvalidValue;
  auto region = std::make_shared<PinnedRegion>();
  region->size = PageRound(bytesize);
  region->flags = Flags;
  region->allocated = true;
  if (Code code = CreateSharedPages(region->size, &region->fd, &region->base); code != Code::kOk) {
    return code;
  }
  // Registered with the current context's host now, so that quota and failures surface here.
  uint64_t handle = 0;
  const Code code = RegionOnHost(region.get(), ctx->client, &handle);
  if (code != Code::kOk && code != Code::kNotSupported) return code;
  void* base = region->base;
  if (!objects().pinned.Insert(reinterpret_cast<uintptr_t>(base), region->size, region)) {
    return Code::kUnknown;  // fresh pages overlapping a region: the map is wrong
  }
  *pp = base;
  return Code::kOk;
}

Code MemAllocHost_v2(CUctx_st* ctx, void** pp, size_t bytesize) {
  return MemHostAlloc(ctx, pp, bytesize, 0);
}

Code MemFreeHost(void* p) {
  return ReleaseRegion(p, /*allocated=*/true) != nullptr ? Code::kOk : Code::kInvalidValue;
}

Code MemHostGetFlags(unsigned int* pFlags, void* p) {
  size_t offset = 0;
  Ref<PinnedRegion> region = FindPinned(p, 1, &offset);
  if (region == nullptr) return Code::kInvalidValue;
  *pFlags = region->flags;
  return Code::kOk;
}

Code MemHostGetDevicePointer_v2(CUctx_st* ctx, CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  if (Flags != 0) return Code::kInvalidValue;
  size_t offset = 0;
  Ref<PinnedRegion> region = FindPinned(p, 1, &offset);
  if (region == nullptr) return Code::kInvalidValue;
  {
    MutexLock lock(&region->mutex);
    auto it = region->device_pointers.find(ctx);
    if (it != region->device_pointers.end()) {
      *pdptr = it->second + offset;
      return Code::kOk;
    }
  }
  uint64_t handle = 0;
  // Registered application memory cannot be shared with the host's kernels (kNotSupported).
  if (Code code = RegionOnHost(region.get(), ctx->client, &handle); code != Code::kOk) {
    return code;
  }
  protocol::HostRegionMapRequest request;
  request.ctx = ctx->handle;
  request.region = handle;
  protocol::HostRegionMapReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return code;
  {
    MutexLock lock(&region->mutex);
    region->device_pointers[ctx] = reply.dptr;
  }
  objects().device_memory.Assign(reply.dptr, region->size, ctx);
  *pdptr = reply.dptr + offset;
  return Code::kOk;
}

Code MemHostRegister_v2(CUctx_st* ctx, void* p, size_t bytesize, unsigned int Flags) {
  if (bytesize == 0 || (Flags & ~kRegisterFlags) != 0) return Code::kInvalidValue;
  if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return Code::kNotSupported;
  auto region = std::make_shared<PinnedRegion>();
  region->base = p;
  region->size = bytesize;
  region->flags = Flags;
  region->fd = SharedFileAt(p, bytesize);
  if (!objects().pinned.Insert(reinterpret_cast<uintptr_t>(p), bytesize, std::move(region))) {
    return Code::kHostMemoryAlreadyRegistered;
  }
  return Code::kOk;
}

Code MemHostUnregister(void* p) {
  return ReleaseRegion(p, /*allocated=*/false) != nullptr ? Code::kOk
                                                          : Code::kHostMemoryNotRegistered;
}

}  // namespace api
}  // namespace pvgpu::guest
