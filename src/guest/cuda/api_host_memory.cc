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

#include "guest/cuda/state.h"

using pvgpu::Code;
using pvgpu::guest::Client;
using pvgpu::guest::DriverState;
using pvgpu::guest::PinnedRegion;
using pvgpu::guest::ToCu;
namespace protocol = pvgpu::protocol;

namespace {

constexpr unsigned int kAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned int kRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE |
                                        CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                                        CU_MEMHOSTREGISTER_READ_ONLY;

size_t PageRound(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

// Creates a sealed, shared memfd of `size` bytes and maps it.
CUresult CreateSharedPages(size_t size, int* fd_out, void** base) {
  const int fd = memfd_create("pvgpu-pinned", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *fd_out = fd;
  *base = p;
  return CUDA_SUCCESS;
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

PinnedRegion* RegionAt(void* base) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  auto it = state.pinned.find(reinterpret_cast<uintptr_t>(base));
  return it == state.pinned.end() ? nullptr : it->second;
}

// Tells every host that mapped the region to let go of it, then forgets it.
void ReleaseRegion(PinnedRegion* region) {
  auto& state = DriverState::Get();
  std::map<Client*, uint64_t> handles;
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    state.pinned.erase(reinterpret_cast<uintptr_t>(region->base));
    for (auto& [ctx, dptr] : region->device_pointers) state.allocations.erase(dptr);
    handles.swap(region->handles);
  }
  for (auto& [client, handle] : handles) {
    protocol::HostRegionDestroyRequest request;
    request.region = handle;
    (void)client->Post(request);
  }
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  PVGPU_API_TRACE("cuMemHostAlloc", pp << ", " << bytesize << ", " << Flags);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (pp == nullptr || bytesize == 0 || (Flags & ~kAllocFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* region = new PinnedRegion();
  region->size = PageRound(bytesize);
  region->flags = Flags;
  region->allocated = true;
  if (CUresult r = CreateSharedPages(region->size, &region->fd, &region->base); r != CUDA_SUCCESS) {
    delete region;
    return r;
  }
  // Registered with the current context's host now, so that quota and failures surface here.
  uint64_t handle = 0;
  const Code code = pvgpu::guest::RegionOnHost(region, ctx->client, &handle);
  if (code != Code::kOk && code != Code::kNotSupported) {
    munmap(region->base, region->size);
    close(region->fd);
    delete region;
    return ToCu(code);
  }
  {
    auto& state = DriverState::Get();
    std::lock_guard<std::mutex> lock(state.mutex());
    state.pinned[reinterpret_cast<uintptr_t>(region->base)] = region;
  }
  *pp = region->base;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocHost(void** pp, size_t bytesize) {
  PVGPU_API_TRACE("cuMemAllocHost_v2", pp << ", " << bytesize);
  return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
  PVGPU_API_TRACE("cuMemFreeHost", p);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  PinnedRegion* region = RegionAt(p);
  if (region == nullptr || !region->allocated) return CUDA_ERROR_INVALID_VALUE;
  ReleaseRegion(region);
  munmap(region->base, region->size);
  close(region->fd);
  delete region;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  PVGPU_API_TRACE("cuMemHostGetFlags", pFlags << ", " << p);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  PinnedRegion* region = nullptr;
  size_t offset = 0;
  if (!pvgpu::guest::FindPinned(p, 1, &region, &offset)) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = region->flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  PVGPU_API_TRACE("cuMemHostGetDevicePointer_v2", pdptr << ", " << p << ", " << Flags);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  PinnedRegion* region = nullptr;
  size_t offset = 0;
  if (!pvgpu::guest::FindPinned(p, 1, &region, &offset)) return CUDA_ERROR_INVALID_VALUE;
  auto& state = DriverState::Get();
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    auto it = region->device_pointers.find(ctx);
    if (it != region->device_pointers.end()) {
      *pdptr = it->second + offset;
      return CUDA_SUCCESS;
    }
  }
  uint64_t handle = 0;
  if (Code code = pvgpu::guest::RegionOnHost(region, ctx->client, &handle); code != Code::kOk) {
    // Registered application memory cannot be shared with the host's kernels.
    return code == Code::kNotSupported ? CUDA_ERROR_NOT_SUPPORTED : ToCu(code);
  }
  protocol::HostRegionMapRequest request;
  request.ctx = ctx->handle;
  request.region = handle;
  protocol::HostRegionMapReply reply;
  if (Code code = ctx->client->Call(request, {}, &reply); code != Code::kOk) return ToCu(code);
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    region->device_pointers[ctx] = reply.dptr;
    state.allocations[reply.dptr] = {region->size, ctx};
  }
  *pdptr = reply.dptr + offset;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  PVGPU_API_TRACE("cuMemHostRegister_v2", p << ", " << bytesize << ", " << Flags);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (p == nullptr || bytesize == 0 || (Flags & ~kRegisterFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  const auto base = reinterpret_cast<uintptr_t>(p);
  auto next = state.pinned.lower_bound(base);
  if (next != state.pinned.end() && next->first < base + bytesize) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  if (next != state.pinned.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second->size > base) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  auto* region = new PinnedRegion();
  region->base = p;
  region->size = bytesize;
  region->flags = Flags;
  region->fd = SharedFileAt(p, bytesize);
  state.pinned[base] = region;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void* p) {
  PVGPU_API_TRACE("cuMemHostUnregister", p);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  PinnedRegion* region = RegionAt(p);
  if (region == nullptr || region->allocated) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  ReleaseRegion(region);
  if (region->fd >= 0) close(region->fd);
  delete region;
  return CUDA_SUCCESS;
}

}  // extern "C"
