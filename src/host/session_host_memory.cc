// Session handlers: pinned host memory. The guest's memfd is mapped into the daemon once, so
// copies from and to it need no staging through the ring, and kernels can address it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

namespace {
// How long the host waits for the memfd that must precede HostRegionCreate.
constexpr int kFdTimeoutMs = 5000;
}  // namespace

Session::Region::~Region() { munmap(data, size); }

Session::Region* Session::FindRegion(uint64_t handle, uint64_t offset, uint64_t size) {
  auto it = regions_.find(handle);
  if (it == regions_.end()) {
    Fatal("unknown host region handle " + std::to_string(handle));
    return nullptr;
  }
  Region* region = it->second.get();
  if (offset > region->size || size > region->size - offset) {
    Fatal("range [" + std::to_string(offset) + ", +" + std::to_string(size) +
          ") outside a host region of " + std::to_string(region->size) + " bytes");
    return nullptr;
  }
  return region;
}

Code Session::Execute(const HostRegionCreateRequest& request, std::span<const uint8_t>) {
  if (request.region == 0 || regions_.count(request.region) != 0) {
    return Fatal("HostRegionCreate: region handle reused or zero");
  }
  auto fd = endpoint_->ReceiveFd(kFdTimeoutMs);
  if (!fd.ok()) return Fatal("HostRegionCreate without its memfd: " + fd.status().message());
  const int memfd = *fd;
  // A guest that could shrink the file would crash the daemon with SIGBUS on access.
  Status sealed = transport::VerifySealedMemfd(memfd, request.size);
  if (!sealed.ok()) {
    close(memfd);
    return Fatal("HostRegionCreate: " + sealed.message());
  }
  if (request.size == 0) {
    close(memfd);
    return Code::kInvalidValue;
  }
  if (policy_.memory_quota != 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t used = UsedBytes();
    if (request.size > policy_.memory_quota || used > policy_.memory_quota - request.size) {
      close(memfd);
      return Code::kOutOfMemory;
    }
  }
  void* data = mmap(nullptr, request.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  close(memfd);
  if (data == MAP_FAILED) {
    PVGPU_WARN("session " << id_ << ": mapping a pinned region of " << request.size
                          << " bytes failed: " << std::strerror(errno));
    return Code::kOutOfMemory;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  regions_[request.region] = std::make_unique<Region>(static_cast<uint8_t*>(data), request.size);
  return Code::kOk;
}

Code Session::Execute(const HostRegionDestroyRequest& request, std::span<const uint8_t>) {
  auto it = regions_.find(request.region);
  if (it == regions_.end()) return Fatal("HostRegionDestroy: unknown region handle");
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) {
    auto mapped = ctx->mapped_regions.find(request.region);
    if (mapped == ctx->mapped_regions.end()) continue;
    (void)ctx->impl->UnmapHostMemory(mapped->second);
    ctx->allocations.erase(mapped->second);
    ctx->mapped_regions.erase(mapped);
  }
  regions_.erase(it);
  return Code::kOk;
}

Code Session::Execute(const HostRegionMapRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr) return Code::kInvalidContext;
  Region* region = FindRegion(request.region, 0, 0);
  if (region == nullptr) return Code::kInvalidValue;
  if (ctx->errors.sticky != Code::kOk) return ctx->errors.sticky;
  HostRegionMapReply reply;
  reply.result = 0;
  auto mapped = ctx->mapped_regions.find(request.region);
  if (mapped != ctx->mapped_regions.end()) {
    reply.dptr = mapped->second;
  } else {
    auto dptr = ctx->impl->MapHostMemory(region->data, region->size);
    if (!dptr.ok()) return dptr.status().code();
    std::lock_guard<std::mutex> lock(mutex_);
    ctx->mapped_regions[request.region] = *dptr;
    (void)ctx->allocations.Insert(*dptr, region->size, {true});
    reply.dptr = *dptr;
  }
  SendReply(reply);
  return Code::kOk;
}

Code Session::Execute(const MemcpyHtoDRegionRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr || !ValidStream(*ctx, request.stream)) return Code::kInvalidContext;
  Region* region = FindRegion(request.region, request.offset, request.size);
  if (region == nullptr) return Code::kInvalidValue;
  if (ctx->errors.sticky != Code::kOk) return ctx->errors.sticky;
  if (!InAllocation(*ctx, request.dst, request.size)) {
    RecordFault(*ctx, Error(Code::kInvalidValue, "HtoD destination outside allocations"), "copy");
    return Code::kInvalidValue;
  }
  // The guest may write the region concurrently (that is its race to avoid, as with DMA from
  // pinned memory on a GPU); the copy reads it once and never trusts it.
  Status status = ctx->impl->Write(request.dst, {region->data + request.offset, request.size});
  if (!status.ok()) RecordFault(*ctx, status, "copy");
  return status.code();
}

Code Session::Execute(const MemcpyDtoHRegionRequest& request, std::span<const uint8_t>) {
  ContextState* ctx = FindContext(request.ctx);
  if (ctx == nullptr || !ValidStream(*ctx, request.stream)) return Code::kInvalidContext;
  Region* region = FindRegion(request.region, request.offset, request.size);
  if (region == nullptr) return Code::kInvalidValue;
  if (ctx->errors.sticky != Code::kOk) return ctx->errors.sticky;
  if (!InAllocation(*ctx, request.src, request.size)) {
    RecordFault(*ctx, Error(Code::kInvalidValue, "DtoH source outside allocations"), "copy");
    return Code::kInvalidValue;
  }
  Status status = ctx->impl->Read(request.src, {region->data + request.offset, request.size});
  if (!status.ok()) RecordFault(*ctx, status, "copy");
  return status.code();
}

}  // namespace pvgpu::host
