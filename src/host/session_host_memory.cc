// Session handlers: pinned host memory. The guest's memfd is mapped into the daemon once, so
// copies from and to it need no staging through the ring, and kernels can address it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

Outcome Session::Execute(const HostRegionCreateRequest& request, Span) {
  auto fd = TakeGuestDescriptor();
  if (!fd.ok()) return Violation("HostRegionCreate without its memfd: " + fd.status().message());
  const int memfd = *fd;
  // A guest that could shrink the file would crash the daemon with SIGBUS on access.
  Status sealed = transport::VerifySealedMemfd(memfd, request.size);
  if (!sealed.ok()) {
    close(memfd);
    return Violation("HostRegionCreate: " + sealed.message());
  }
  if (request.size == 0) {
    close(memfd);
    return Code::kInvalidValue;
  }
  if (budgets_.regions.full() || !WithinQuota(request.size)) {
    close(memfd);
    return Code::kOutOfMemory;
  }
  void* data = mmap(nullptr, request.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  close(memfd);
  if (data == MAP_FAILED) {
    PVGPU_WARN("session " << id_ << ": mapping a pinned region of " << request.size
                          << " bytes failed: " << std::strerror(errno));
    return Code::kOutOfMemory;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  (void)regions_.Add(request.region, static_cast<uint8_t*>(data), request.size);
  return Code::kOk;
}

Outcome Session::Execute(const HostRegionDestroyRequest& request, Span, Region&) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) {
    auto mapped = ctx.mapped_regions.find(request.region);
    if (mapped == ctx.mapped_regions.end()) continue;
    (void)ctx.impl->UnmapHostMemory(mapped->second);
    ctx.EraseAllocation(mapped->second);
    ctx.mapped_regions.erase(mapped);
  }
  regions_.Erase(request.region);
  return Code::kOk;
}

Outcome Session::Execute(const HostRegionMapRequest& request, Span, ContextState& ctx,
                         Region& region) {
  HostRegionMapReply reply;
  reply.result = 0;
  auto mapped = ctx.mapped_regions.find(request.region);
  if (mapped != ctx.mapped_regions.end()) {
    reply.dptr = mapped->second;
  } else {
    auto dptr = ctx.impl->MapHostMemory(region.data(), region.size());
    if (!dptr.ok()) return dptr.status().code();
    if (!ctx.AddAllocation(*dptr, region.size(), true)) {
      (void)ctx.impl->UnmapHostMemory(*dptr);
      return Code::kOutOfMemory;
    }
    ctx.mapped_regions[request.region] = *dptr;
    reply.dptr = *dptr;
  }
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::CopyWithRegion(ContextState& ctx, const Region& region, uint64_t offset,
                                uint64_t size, uint64_t device_address,
                                FunctionRef<Status(std::span<uint8_t>)> copy) {
  if (!region.Holds(offset, size)) {
    return Violation("range [" + std::to_string(offset) + ", +" + std::to_string(size) +
                     ") outside a host region of " + std::to_string(region.size()) + " bytes");
  }
  if (!ctx.InAllocation(device_address, size)) {
    RecordFault(ctx, Error(Code::kInvalidValue, "region copy outside allocations"), "copy");
    return Code::kInvalidValue;
  }
  // The guest may write the region concurrently (that is its race to avoid, as with DMA from
  // pinned memory on a GPU); the copy reads it once and never trusts it.
  Status status = copy({region.data() + offset, size});
  if (!status.ok()) RecordFault(ctx, status, "copy");
  return status.code();
}

Outcome Session::Execute(const MemcpyHtoDRegionRequest& request, Span, ContextState& ctx, Stream*,
                         Region& region) {
  return CopyWithRegion(
      ctx, region, request.offset, request.size, request.dst,
      [&](std::span<uint8_t> host) {
        Flow(ctx.device).bytes_htod.fetch_add(host.size(), std::memory_order_relaxed);
        return ctx.impl->Write(request.dst, host);
      });
}

Outcome Session::Execute(const MemcpyDtoHRegionRequest& request, Span, ContextState& ctx, Stream*,
                         Region& region) {
  return CopyWithRegion(ctx, region, request.offset, request.size, request.src,
                        [&](std::span<uint8_t> host) {
                          Flow(ctx.device).bytes_dtoh.fetch_add(host.size(),
                                                                std::memory_order_relaxed);
                          return ctx.impl->Read(request.src, host);
                        });
}

}  // namespace pvgpu::host
