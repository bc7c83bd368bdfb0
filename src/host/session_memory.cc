// Session handlers: device memory, copies and memsets. Every range is checked against the
// context's allocations here, once, before any adapter sees it.
#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

bool Session::WithinQuota(uint64_t size) const {
  if (policy_.memory_quota == 0) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t used = UsedBytes();
  if (size <= policy_.memory_quota && used <= policy_.memory_quota - size) return true;
  PVGPU_DEBUG("session " << id_ << ": " << size << " bytes refused by the quota of "
                         << policy_.memory_quota);
  return false;
}

Outcome Session::Execute(const MemAllocRequest& request, Span, ContextState& ctx) {
  if (request.size == 0) return Code::kInvalidValue;
  const adapters::Adapter& adapter = *policy_.adapters[ctx.device];
  const uint64_t total = adapter.info().total_memory;
  if (request.size > total || adapter.used_bytes() > total - request.size ||
      !WithinQuota(request.size)) {
    return Code::kOutOfMemory;
  }
  auto dptr = ctx.impl->Allocate(request.size);
  if (!dptr.ok()) return dptr.status().code();
  if (!ctx.AddAllocation(*dptr, request.size, false)) {
    (void)ctx.impl->Free(*dptr);
    PVGPU_DEBUG("session " << id_ << ": allocation refused: " << budgets_.allocations.limit()
                           << " is the session's limit");
    return Code::kOutOfMemory;
  }
  MemAllocReply reply;
  reply.result = 0;
  reply.dptr = *dptr;
  SendReply(reply);
  return Code::kOk;
}

Outcome Session::Execute(const MemFreeRequest& request, Span, ContextState& ctx) {
  if (!ctx.FreeableAt(request.dptr)) return Code::kInvalidValue;
  Status freed = ctx.impl->Free(request.dptr);
  if (!freed.ok()) return freed.code();
  ctx.EraseAllocation(request.dptr);
  return ctx.errors.sticky;  // freed even in a poisoned context, which still reports its fault
}

Outcome Session::Execute(const MemcpyHtoDRequest& request, Span data, ContextState& ctx,
                         Stream* stream) {
  return Execute(request, transport::MessageView{data, {}}, ctx, stream);
}

Outcome Session::Execute(const MemcpyHtoDRequest& request, const transport::MessageView& data,
                         ContextState& ctx, Stream*) {
  if (!ctx.InAllocation(request.dst, data.size())) {
    RecordFault(ctx, Error(Code::kInvalidValue, "HtoD destination outside allocations"), "copy");
    return Code::kInvalidValue;
  }
  Flow(ctx.device).bytes_htod.fetch_add(data.size(), std::memory_order_relaxed);
  // In two pieces when the bytes wrap around the end of the channel's ring.
  Status status = ctx.impl->Write(request.dst, data.first);
  if (status.ok() && !data.second.empty()) {
    status = ctx.impl->Write(request.dst + data.first.size(), data.second);
  }
  if (!status.ok()) RecordFault(ctx, status, "copy");
  return status.code();
}

Outcome Session::Execute(const MemcpyDtoHRequest& request, Span, ContextState& ctx, Stream*) {
  const size_t limit =
      endpoint_->max_message_size() - sizeof(MessageHeader) - sizeof(MemcpyDtoHReply);
  if (request.size > limit) return Violation("DtoH chunk larger than the channel allows");
  if (!ctx.InAllocation(request.src, request.size)) return Code::kInvalidValue;
  Flow(ctx.device).bytes_dtoh.fetch_add(request.size, std::memory_order_relaxed);
  MemcpyDtoHReply reply;
  reply.result = 0;
  // The adapter reads straight into the reply in the channel: no staging buffer.
  Status status =
      SendReplyFilled(reply, request.size, [&](std::span<uint8_t> piece, size_t offset) {
        return ctx.impl->Read(request.src + offset, piece);
      });
  if (!status.ok()) {
    // An asynchronous adapter reports an earlier kernel's fault here: it poisons the context.
    if (IsStickyError(status.code())) RecordFault(ctx, status, "asynchronous work");
    return status.code();
  }
  return Code::kOk;
}

Outcome Session::Execute(const MemcpyDtoDRequest& request, Span, ContextState& ctx, Stream*) {
  if (!ctx.InAllocation(request.dst, request.size) ||
      !ctx.InAllocation(request.src, request.size)) {
    RecordFault(ctx, Error(Code::kInvalidValue, "DtoD range outside allocations"), "copy");
    return Code::kInvalidValue;
  }
  Status status = ctx.impl->Copy(request.dst, request.src, request.size);
  if (!status.ok()) RecordFault(ctx, status, "copy");
  return status.code();
}

Outcome Session::Execute(const MemsetRequest& request, Span, ContextState& ctx, Stream*) {
  const uint32_t element = request.element_size;
  const bool shape_ok = (element == 1 || element == 2 || element == 4) &&
                        request.width <= (~0ull) / element &&
                        (request.height <= 1 || request.pitch >= request.width * element);
  bool in_range = shape_ok;
  if (shape_ok && request.height > 0 && request.width > 0) {
    // Rows lie at dst + row * pitch; checking the first and last rows suffices when both are in
    // the same allocation, since allocations are contiguous.
    const uint64_t row_bytes = request.width * element;
    const uint64_t last = request.height - 1;
    in_range = (last == 0 || request.pitch <= (~0ull - request.dst) / last) &&
               ctx.InAllocation(request.dst, row_bytes) &&
               ctx.InAllocation(request.dst + last * request.pitch, row_bytes) &&
               ctx.InAllocation(request.dst, last * request.pitch + row_bytes);
  }
  if (!in_range) {
    RecordFault(ctx, Error(Code::kInvalidValue, "memset outside allocations"), "memset");
    return Code::kInvalidValue;
  }
  Status status = ctx.impl->Memset(request.dst, request.pitch, request.value, element,
                                   request.width, request.height);
  if (!status.ok()) RecordFault(ctx, status, "memset");
  return status.code();
}

}  // namespace pvgpu::host
