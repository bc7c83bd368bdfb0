// Session handler: stream memory operations (cuStreamWaitValue32/64). Writes need no message
// of their own: the guest sends cuStreamWriteValue as a 4- or 8-byte host-to-device copy, which
// runs in the same order. A wait blocks this session's thread until the value is there: the
// host runs each context's work in submission order (one queue per context), so blocking the
// thread is what blocking the stream means here, and other sessions have threads of their own.
// The wait runs under the kernel watcher, so a guest that hangs up, says Goodbye or destroys
// the context cancels it (the adapter's Cancel), as it cancels a kernel that never ends.
#include "common/log.h"
#include "host/session.h"

namespace pvgpu::host {

using namespace protocol;

Outcome Session::Execute(const StreamWaitValueRequest& request, Span, ContextState& ctx, Stream*) {
  const uint32_t width = request.width;
  const bool shape_ok = (width == 4 || width == 8) && request.address % width == 0 &&
                        request.condition <= static_cast<uint32_t>(adapters::WaitCondition::kNor);
  if (!shape_ok || !ctx.InAllocation(request.address, width)) {
    RecordFault(ctx,
                Error(Code::kInvalidValue, shape_ok ? "stream wait outside allocations"
                                                    : "stream wait of a bad width or condition"),
                "stream wait");
    return Code::kInvalidValue;
  }
  const auto condition = static_cast<adapters::WaitCondition>(request.condition);
  auto satisfied = [&](uint64_t current) {
    return adapters::WaitSatisfied(current, request.value, width, condition);
  };
  auto wait = [&] { return ctx.impl->WaitValue(request.address, width, satisfied); };
  Status status = watcher_.Run(*ctx.impl, request.ctx, wait);
  if (!status.ok()) RecordFault(ctx, status, "stream wait");
  return status.code();
}

}  // namespace pvgpu::host
