// Pinned host memory: the lookups copies use, and registration of a region with a host.
#include <sys/mman.h>
#include <unistd.h>

#include "guest/cuda/state.h"

namespace pvgpu::guest {

PinnedRegion::~PinnedRegion() {
  if (allocated && base != nullptr) munmap(base, size);
  if (fd >= 0) close(fd);
}

Ref<PinnedRegion> FindPinned(const void* p, size_t size, size_t* offset) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto range = objects().pinned.Find(address, size);
  if (!range.has_value()) return nullptr;
  *offset = address - range->base;
  return range->value;
}

Code RegionOnHost(PinnedRegion* region, Client* client, uint64_t* handle) {
  if (region->fd < 0) return Code::kNotSupported;
  {
    MutexLock lock(&region->mutex);
    auto it = region->handles.find(client);
    if (it != region->handles.end()) {
      *handle = it->second;
      return Code::kOk;
    }
  }
  const uint64_t fresh = Client::NewHandle();
  const Code code = client->CreateRegion(region->fd, fresh, region->size, region->flags);
  if (code != Code::kOk) return code;
  MutexLock lock(&region->mutex);
  region->handles[client] = fresh;
  *handle = fresh;
  return Code::kOk;
}

}  // namespace pvgpu::guest
