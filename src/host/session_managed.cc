// Session handler: managed memory (cuMemAllocManaged). The guest's sealed memfd is mapped into
// the daemon at the very address the guest mapped it, and the context's adapter makes that
// address a device address: one pointer, valid in the guest program and inside kernels, over
// the same pages. Only the local channel passes memfds; remote guests never get here.
//
// Why the same address in the daemon too: the cpu adapter would do with any (kernels reach
// memory through its address table), but the cuda adapter registers the pages with the GPU
// driver, whose device pointer for them is their host pointer under unified addressing.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

Outcome Session::Execute(const ManagedAllocRequest& request, Span, ContextState& ctx) {
  auto fd = TakeGuestDescriptor();
  if (!fd.ok()) return Violation("ManagedAlloc without its memfd: " + fd.status().message());
  const int memfd = *fd;
  Status sealed = transport::VerifySealedMemfd(memfd, request.size);
  if (!sealed.ok()) {
    close(memfd);
    return Violation("ManagedAlloc: " + sealed.message());
  }
  ManagedAllocReply reply;
  reply.address_taken = 0;
  auto answer = [&](Code code) -> Outcome {
    reply.result = static_cast<int32_t>(code);
    SendReply(reply);
    return code;
  };
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (request.size == 0 || request.address == 0 || request.address % page != 0 ||
      request.address + request.size < request.address) {
    close(memfd);
    return answer(Code::kInvalidValue);
  }
  if (const Code fault = ctx.errors.sticky; fault != Code::kOk) {
    close(memfd);
    return answer(fault);
  }
  if (budgets_.regions.full() || !WithinQuota(request.size)) {
    close(memfd);
    return answer(Code::kOutOfMemory);
  }
  void* wanted = reinterpret_cast<void*>(request.address);
  void* data = mmap(wanted, request.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
                    memfd, 0);
  close(memfd);
  if (data == MAP_FAILED || data != wanted) {
    // EEXIST: the daemon already uses the address (another session's memory, its own heap).
    // Kernels before 4.17 ignore the flag and may map elsewhere: the same answer.
    const int error = errno;
    if (data != MAP_FAILED) munmap(data, request.size);
    PVGPU_DEBUG("session " << id_ << ": managed memory at 0x" << std::hex << request.address
                           << std::dec << " (" << request.size << " bytes) not mapped there: "
                           << (data == MAP_FAILED ? std::strerror(error) : "placed elsewhere"));
    reply.address_taken = 1;
    return answer(Code::kOutOfMemory);
  }
  Region* region = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    region = regions_.Add(request.region, static_cast<uint8_t*>(data), request.size);
  }
  auto drop = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    regions_.Erase(request.region);  // unmaps it from the daemon
  };
  auto mapped = ctx.impl->MapHostMemoryAt(region->data(), region->size(), request.address);
  if (!mapped.ok()) {
    PVGPU_INFO("session " << id_ << ": managed memory refused: " << mapped.status().ToString());
    drop();
    // kInvalidValue: the address collides with the adapter's own device addresses.
    const bool taken = mapped.status().code() == Code::kInvalidValue;
    reply.address_taken = taken ? 1 : 0;
    return answer(taken ? Code::kOutOfMemory : mapped.status().code());
  }
  if (!ctx.AddAllocation(request.address, request.size, true)) {
    (void)ctx.impl->UnmapHostMemory(request.address);
    drop();
    return answer(Code::kOutOfMemory);
  }
  // HostRegionDestroy unmaps it from the context, as for pinned memory mapped with DEVICEMAP.
  ctx.mapped_regions[request.region] = request.address;
  return answer(Code::kOk);
}

}  // namespace pvgpu::host
