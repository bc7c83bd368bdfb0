// Session handlers: virtual memory management (docs/memory.md).
//
// The session keeps each context's reservations, physical allocations and mappings, and checks
// every request against them here, before the adapter sees it: sizes and offsets are multiples
// of the adapter's granularity, a mapping lies inside its reservation over unmapped addresses
// and inside its physical memory, unmapping and access name whole mappings. Handles are scoped
// to the context, so a guest can only ever map its own memory into its own reservations. An
// accessible mapping becomes one of the context's allocations, tagged with its reservation, so
// that copies and kernels may cross from one mapping into the next of the same reservation.
// Physical memory leaves a session only as a POSIX file descriptor the guest asked for
// (VmmExport), and enters one from a descriptor the adapter checks (VmmImport).
#include <unistd.h>

#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

namespace {

// cuda.h's CUmemAccess_flags.
constexpr uint32_t kAccessNone = 0;
constexpr uint32_t kAccessRead = 1;
constexpr uint32_t kAccessReadWrite = 3;

bool Multiple(uint64_t value, uint64_t granularity) { return value % granularity == 0; }

}  // namespace

Outcome Session::Execute(const VmmReserveRequest& request, Span, ContextState& ctx) {
  const uint64_t granularity = ctx.impl->granularity();
  if (granularity == 0) return Code::kNotSupported;
  uint64_t alignment = request.alignment == 0 ? granularity : request.alignment;
  if (request.size == 0 || !Multiple(request.size, granularity) ||
      (alignment & (alignment - 1)) != 0) {
    return Code::kInvalidValue;
  }
  alignment = std::max(alignment, granularity);
  if (ctx.reservations.budget().full()) return Code::kOutOfMemory;
  auto base = ctx.impl->ReserveAddress(request.size, alignment);
  if (!base.ok()) {
    PVGPU_DEBUG("session " << id_ << ": reservation refused: " << base.status().message());
    return base.status().code();
  }
  if (ctx.reservations.Add(request.reservation, *ctx.impl, budgets_.allocations, *base,
                           request.size) == nullptr) {
    (void)ctx.impl->FreeAddress(*base, request.size);
    return Code::kOutOfMemory;
  }
  VmmReserveReply reply;
  reply.result = 0;
  reply.dptr = *base;
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::Execute(const VmmFreeRequest& request, Span, ContextState& ctx,
                         Reservation& reservation) {
  if (!reservation.mappings.empty()) return Code::kInvalidValue;  // unmap it first, as CUDA asks
  ctx.reservations.Erase(request.reservation);
  return Code::kOk;
}

Outcome Session::Execute(const VmmCreateRequest& request, Span, ContextState& ctx) {
  const uint64_t granularity = ctx.impl->granularity();
  if (granularity == 0) return Code::kNotSupported;
  if (request.size == 0 || !Multiple(request.size, granularity)) return Code::kInvalidValue;
  const adapters::Adapter& adapter = *policy_.adapters[ctx.device];
  const uint64_t total = adapter.info().total_memory;
  if (request.size > total || adapter.used_bytes() > total - request.size ||
      !WithinQuota(request.size) || ctx.physicals.budget().full()) {
    return Code::kOutOfMemory;
  }
  auto memory = ctx.impl->CreatePhysical(request.size);
  if (!memory.ok()) return memory.status().code();
  auto physical = std::make_shared<PhysicalState>(std::move(*memory));
  if (ctx.physicals.Add(request.physical, std::move(physical)) == nullptr) {
    return Code::kOutOfMemory;
  }
  return Code::kOk;
}

Outcome Session::Execute(const VmmExportRequest&, Span, ContextState&,
                         std::shared_ptr<PhysicalState>& physical) {
  StatusOr<int> fd = physical->impl->ExportFd();
  if (!fd.ok()) {
    PVGPU_DEBUG("session " << id_ << ": export refused: " << fd.status().message());
    return fd.status().code();
  }
  // Before the reply, which tells the guest to take it; a channel without descriptor passing
  // (a remote guest) sends nothing.
  const Status sent = endpoint_->SendFd(*fd);
  close(*fd);
  if (!sent.ok()) {
    PVGPU_DEBUG("session " << id_ << ": export not passed: " << sent.message());
    return sent.code() == Code::kNotSupported ? Code::kNotSupported : Code::kDeviceUnavailable;
  }
  return Code::kOk;
}

Outcome Session::Execute(const VmmImportRequest& request, Span, ContextState& ctx) {
  // The descriptor comes first, whatever the answer, so that the next one stays in step.
  auto fd = TakeGuestDescriptor();
  if (!fd.ok()) return Violation("VmmImport without its descriptor: " + fd.status().message());
  VmmImportReply reply;
  reply.size = 0;
  auto answer = [&](Code code) -> Outcome {
    reply.result = static_cast<int32_t>(code);
    SendReply(reply);
    return code;
  };
  auto memory = [&]() -> StatusOr<std::unique_ptr<adapters::PhysicalMemory>> {
    if (const Code fault = ctx.errors.sticky; fault != Code::kOk) {
      return Error(fault, "the context has faulted");
    }
    if (ctx.impl->granularity() == 0) {
      return Error(Code::kNotSupported, "the adapter has no virtual memory management");
    }
    if (ctx.physicals.budget().full()) {
      return Error(Code::kOutOfMemory, "the session holds its limit of physical allocations");
    }
    return ctx.impl->ImportPhysical(*fd);
  }();
  close(*fd);
  if (!memory.ok()) {
    PVGPU_DEBUG("session " << id_ << ": import refused: " << memory.status().message());
    return answer(memory.status().code());
  }
  // Counted as the session's own from here: over its quota, it gives the memory back.
  const uint64_t size = (*memory)->size();
  if (!WithinQuota(0)) return answer(Code::kOutOfMemory);
  auto physical = std::make_shared<PhysicalState>(std::move(*memory));
  if (ctx.physicals.Add(request.physical, std::move(physical)) == nullptr) {
    return answer(Code::kOutOfMemory);
  }
  reply.size = size;
  return answer(Code::kOk);
}

Outcome Session::Execute(const VmmReleaseRequest& request, Span, ContextState& ctx,
                         std::shared_ptr<PhysicalState>&) {
  // The memory stays while a mapping holds it (Reservation::Mapping's reference).
  ctx.physicals.Erase(request.physical);
  return Code::kOk;
}

Outcome Session::Execute(const VmmMapRequest& request, Span, ContextState& ctx,
                         Reservation& reservation, std::shared_ptr<PhysicalState>& physical) {
  const uint64_t granularity = ctx.impl->granularity();
  const uint64_t physical_size = physical->impl->size();
  if (granularity == 0 || request.size == 0 || !Multiple(request.address, granularity) ||
      !Multiple(request.size, granularity) || !Multiple(request.offset, granularity) ||
      !reservation.Holds(request.address, request.size) || request.offset > physical_size ||
      request.size > physical_size - request.offset) {
    return Code::kInvalidValue;
  }
  if (!budgets_.allocations.Take()) return Code::kOutOfMemory;
  if (!reservation.mappings.Insert(request.address, request.size,
                                   Reservation::Mapping{physical, request.offset, false})) {
    budgets_.allocations.Give();
    return Code::kInvalidValue;  // over an existing mapping
  }
  Status mapped =
      ctx.impl->MapPhysical(request.address, request.size, *physical->impl, request.offset);
  if (!mapped.ok()) {
    PVGPU_DEBUG("session " << id_ << ": mapping refused: " << mapped.message());
    reservation.mappings.erase(request.address);
    budgets_.allocations.Give();
    return mapped.code();
  }
  return Code::kOk;
}

Outcome Session::Execute(const VmmUnmapRequest& request, Span, ContextState& ctx,
                         Reservation& reservation) {
  size_t count = 0;
  const bool whole = reservation.WholeMappings(
      request.address, request.size, [&](uint64_t address, uint64_t, Reservation::Mapping& m) {
        if (m.accessible) ctx.EraseAllocation(address);
        ++count;
      });
  if (!whole) return Code::kInvalidValue;
  Status unmapped = ctx.impl->UnmapPhysical(request.address, request.size);
  for (auto it = reservation.mappings.FindBase(request.address); count > 0; --count) {
    it = reservation.mappings.erase(it);
    budgets_.allocations.Give();
  }
  if (!unmapped.ok()) {
    // The addresses are gone from every check already; the adapter's own state is its to keep.
    PVGPU_WARN("session " << id_ << ": unmapping failed in the adapter: " << unmapped.message());
    return unmapped.code();
  }
  return Code::kOk;
}

Outcome Session::Execute(const VmmSetAccessRequest& request, Span, ContextState& ctx,
                         Reservation& reservation) {
  if (request.flags == kAccessRead) {
    PVGPU_INFO("session " << id_ << ": read-only access to virtual memory is not supported");
    return Code::kNotSupported;
  }
  if (request.flags != kAccessNone && request.flags != kAccessReadWrite) {
    return Code::kInvalidValue;
  }
  if (!reservation.WholeMappings(request.address, request.size)) return Code::kInvalidValue;
  const bool accessible = request.flags == kAccessReadWrite;
  Code result = Code::kOk;
  reservation.WholeMappings(
      request.address, request.size, [&](uint64_t address, uint64_t size, Reservation::Mapping& m) {
        if (result != Code::kOk || m.accessible == accessible) return;
        if (accessible && !ctx.AddAllocation(address, size, true, reservation.base)) {
          result = Code::kOutOfMemory;
          return;
        }
        Status set = ctx.impl->SetAccess(address, size, accessible);
        if (!set.ok()) {
          if (accessible) ctx.EraseAllocation(address);
          result = set.code();
          return;
        }
        if (!accessible) ctx.EraseAllocation(address);
        m.accessible = accessible;
      });
  return result;
}

}  // namespace pvgpu::host
