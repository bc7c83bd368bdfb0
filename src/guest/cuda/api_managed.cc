// Driver API: managed memory (managed.h). The guest proposes the address: it maps the memfd
// where the kernel puts it, and the host maps it at the same place in the daemon. When that
// address is taken there, the guest keeps the mapping (so the kernel cannot hand it out again)
// and tries another, a few times, then gives up with a clear error.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "common/log.h"
#include "common/mutex.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/managed.h"
#include "guest/cuda/state.h"
#include "transport/channel.h"

namespace pvgpu::guest {

namespace {

constexpr int kAddressAttempts = 8;

struct Managed {
  size_t size = 0;
  CUctx_st* ctx = nullptr;
  Client* client = nullptr;
  uint64_t region = 0;  // the host's handle for it
};

Mutex managed_mutex;
std::map<uint64_t, Managed> managed GUARDED_BY(managed_mutex);  // by base address

size_t PageRound(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

// A sealed memfd of `size` bytes, or -1.
int SealedMemfd(size_t size) {
  const int fd = memfd_create("pvgpu-managed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether [ptr, ptr + count) lies in managed memory (for prefetches and advice).
Code CheckRange(CUdeviceptr ptr, size_t count) {
  if (count == 0) return Code::kInvalidValue;
  return IsManaged(ptr, count) ? Code::kOk : Code::kInvalidValue;
}

}  // namespace

bool IsManaged(CUdeviceptr ptr, size_t size) {
  MutexLock lock(&managed_mutex);
  auto it = managed.upper_bound(ptr);
  if (it == managed.begin()) return false;
  --it;
  return ptr - it->first < it->second.size && size <= it->second.size - (ptr - it->first);
}

bool FreeManaged(CUdeviceptr dptr, Code* code) {
  Managed freed;
  {
    MutexLock lock(&managed_mutex);
    auto it = managed.find(dptr);
    if (it == managed.end()) return false;
    freed = it->second;
    managed.erase(it);
  }
  objects().device_memory.TakeBase(dptr);
  // The host's mapping goes once the work submitted before the free is done (the message is
  // in order behind it); the guest's pages can go now. (A destroyed context's allocations are
  // gone already, ReleaseManagedOf; `live` covers a context being destroyed meanwhile.)
  protocol::HostRegionDestroyRequest destroy;
  destroy.region = freed.region;
  const bool live = LiveContext(freed.ctx);
  *code = freed.client->Post(destroy);
  munmap(reinterpret_cast<void*>(dptr), freed.size);
  if (*code == Code::kOk && !live) *code = Code::kContextIsDestroyed;
  return true;
}

void ReleaseManagedOf(CUctx_st* ctx) {
  std::vector<std::pair<uint64_t, Managed>> released;
  {
    MutexLock lock(&managed_mutex);
    for (auto it = managed.begin(); it != managed.end();) {
      if (it->second.ctx == ctx) {
        released.emplace_back(*it);
        it = managed.erase(it);
      } else {
        ++it;
      }
    }
  }
  // As for every allocation of a destroyed context: the host's region goes (it is the
  // session's, so the destroyed context does not hold it up) and so do the guest's pages.
  for (const auto& [base, m] : released) {
    protocol::HostRegionDestroyRequest destroy;
    destroy.region = m.region;
    (void)m.client->Post(destroy);
    munmap(reinterpret_cast<void*>(base), m.size);
  }
}

void AdjustManagedAttributes(Device* device) {
  if (!transport::IsRemoteAddress(device->client->address())) return;
  device->info.attributes[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 0;
  device->info.attributes[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 0;
}

namespace api {

Code MemAllocManaged(CUctx_st* ctx, CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
    return Code::kInvalidValue;
  }
  Client& client = *ctx->client;
  const Device* device = DriverState::Get().device(ctx->device);
  if (device->info.attributes[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] == 0) {
    static std::once_flag once;
    std::call_once(once, [&] {
      if (transport::IsRemoteAddress(client.address())) {
        PVGPU_WARN("cuMemAllocManaged is not supported on a remote host ("
                   << client.address()
                   << "): managed memory needs pages shared with the host (the local channel)");
      } else {
        PVGPU_WARN("cuMemAllocManaged is not supported: device " << ctx->device
                                                                 << " has no managed memory");
      }
    });
    return Code::kNotSupported;
  }
  const size_t size = PageRound(bytesize);
  const int fd = SealedMemfd(size);
  if (fd < 0) return Code::kOutOfMemory;
  std::vector<std::pair<void*, size_t>> rejected;  // addresses taken on the host, held meanwhile
  Code code = Code::kOutOfMemory;
  void* base = nullptr;
  uint64_t region = 0;
  for (int attempt = 0; attempt < kAddressAttempts; ++attempt) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) break;
    protocol::ManagedAllocRequest request;
    request.ctx = ctx->handle;
    request.region = Client::NewHandle();
    request.address = reinterpret_cast<uint64_t>(p);
    request.size = size;
    protocol::ManagedAllocReply reply{};
    code = client.CallWithFd(fd, request, &reply);
    if (code == Code::kOk) {
      base = p;
      region = request.region;
      break;
    }
    rejected.emplace_back(p, size);
    if (!reply.address_taken) break;
  }
  for (auto& [p, n] : rejected) munmap(p, n);
  close(fd);
  if (base == nullptr) {
    if (code == Code::kOutOfMemory && rejected.size() == kAddressAttempts) {
      PVGPU_WARN("cuMemAllocManaged: no address of " << size << " bytes free in both this process "
                                                     << "and the host after " << kAddressAttempts
                                                     << " tries");
    }
    return code;
  }
  {
    MutexLock lock(&managed_mutex);
    managed[reinterpret_cast<uint64_t>(base)] = Managed{size, ctx, &client, region};
  }
  objects().device_memory.Assign(reinterpret_cast<uint64_t>(base), size, ctx);
  *dptr = reinterpret_cast<CUdeviceptr>(base);
  return Code::kOk;
}

// The pages are already where every side reads them: a prefetch only checks its range, in
// stream order like the real one (it must not overtake earlier work's errors, so none).
Code MemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                         unsigned int flags, const StreamRef&) {
  if (flags != 0) return Code::kInvalidValue;
  (void)location;
  return CheckRange(devPtr, count);
}

Code MemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                      const StreamRef& stream) {
  CUmemLocation location{};
  location.type =
      dstDevice == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = dstDevice;
  return MemPrefetchAsync_v2(devPtr, count, location, 0, stream);
}

// Advice shapes where pages migrate; these pages never migrate, so each is accepted and kept
// by no one. The advice itself is checked, as the driver checks it.
Code MemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) {
    return Code::kInvalidValue;
  }
  (void)location;
  return CheckRange(devPtr, count);
}

Code MemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  CUmemLocation location{};
  location.type = device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device;
  return MemAdvise_v2(devPtr, count, advice, location);
}

}  // namespace api
}  // namespace pvgpu::guest
