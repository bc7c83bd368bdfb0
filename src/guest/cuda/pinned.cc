#include "guest/cuda/state.h"

namespace pvgpu::guest {

bool FindPinned(const void* p, size_t size, PinnedRegion** region, size_t* offset) {
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto it = state.pinned.upper_bound(address);
  if (it == state.pinned.begin()) return false;
  --it;
  const size_t off = address - it->first;
  if (off >= it->second->size || size > it->second->size - off) return false;
  *region = it->second;
  *offset = off;
  return true;
}

Code RegionOnHost(PinnedRegion* region, Client* client, uint64_t* handle) {
  auto& state = DriverState::Get();
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    if (region->fd < 0) return Code::kNotSupported;
    auto it = region->handles.find(client);
    if (it != region->handles.end()) {
      *handle = it->second;
      return Code::kOk;
    }
  }
  const uint64_t fresh = Client::NewHandle();
  const Code code = client->CreateRegion(region->fd, fresh, region->size, region->flags);
  if (code != Code::kOk) return code;
  std::lock_guard<std::mutex> lock(state.mutex());
  region->handles[client] = fresh;
  *handle = fresh;
  return Code::kOk;
}

}  // namespace pvgpu::guest
