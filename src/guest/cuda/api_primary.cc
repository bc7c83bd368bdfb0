// Driver API: primary contexts, one per device, reference counted across the process.
#include "guest/cuda/contexts.h"
#include "guest/cuda/cuda_api_autogen.h"

namespace pvgpu::guest {
namespace {

Ref<CUctx_st>& RecordLocked(DriverState& state, PrimaryContext& primary, const Device& device)
    REQUIRES(state.primaries_mutex) {
  if (primary.record == nullptr)
    primary.record = NewContext(device, primary.flags, /*primary=*/true);
  return primary.record;
}

}  // namespace

CUctx_st* PrimaryContextRecord(CUdevice device) {
  DriverState& state = DriverState::Get();
  MutexLock lock(&state.primaries_mutex);
  return RecordLocked(state, state.primaries[device], *state.device(device)).get();
}

bool IsPrimaryContextRecord(const CUctx_st* ctx) {
  if (ctx == nullptr) return false;
  DriverState& state = DriverState::Get();
  MutexLock lock(&state.primaries_mutex);
  for (const PrimaryContext& primary : state.primaries) {
    if (primary.record.get() == ctx) return true;
  }
  return false;
}

namespace api {

Code DevicePrimaryCtxRetain(CUcontext* pctx, const Device& dev) {
  DriverState& state = DriverState::Get();
  MutexLock lock(&state.primaries_mutex);
  PrimaryContext& primary = state.primaries[dev.ordinal];
  if (primary.refcount == 0) {
    // Created on the host under the lock, so that two threads retaining at once create one;
    // always under the device's one record (its handle), as the CUDA runtime needs.
    Ref<CUctx_st>& ctx = RecordLocked(state, primary, dev);
    ctx->flags = primary.flags;
    if (Code code = CreateOnHost(ctx.get()); code != Code::kOk) return code;
    primary.ctx = objects().contexts.Add(ctx);
  }
  ++primary.refcount;
  *pctx = primary.ctx;
  return Code::kOk;
}

Code DevicePrimaryCtxRelease_v2(const Device& dev) {
  DriverState& state = DriverState::Get();
  CUctx_st* ctx = nullptr;
  {
    MutexLock lock(&state.primaries_mutex);
    PrimaryContext& primary = state.primaries[dev.ordinal];
    if (primary.refcount == 0) return Code::kInvalidContext;
    if (--primary.refcount > 0) return Code::kOk;
    ctx = primary.ctx;
    primary.ctx = nullptr;
    objects().contexts.Take(ctx);
  }
  PopEverywhereOnThisThread(ctx);
  return DestroyOnHost(ctx);
}

Code DevicePrimaryCtxReset_v2(const Device& dev) {
  DriverState& state = DriverState::Get();
  CUctx_st* ctx = nullptr;
  {
    MutexLock lock(&state.primaries_mutex);
    ctx = state.primaries[dev.ordinal].ctx;
  }
  if (ctx == nullptr) return Code::kOk;  // nothing to reset
  // The handle the application holds stays valid; everything in it is destroyed.
  if (Code code = DestroyOnHost(ctx); code != Code::kOk) return code;
  return CreateOnHost(ctx);
}

Code DevicePrimaryCtxGetState(const Device& dev, unsigned int* flags, int* active) {
  DriverState& state = DriverState::Get();
  MutexLock lock(&state.primaries_mutex);
  const PrimaryContext& primary = state.primaries[dev.ordinal];
  *flags = primary.flags;
  *active = primary.refcount > 0 ? 1 : 0;
  return Code::kOk;
}

Code DevicePrimaryCtxSetFlags_v2(const Device& dev, unsigned int flags) {
  if (!ValidContextFlags(flags)) return Code::kInvalidValue;
  DriverState& state = DriverState::Get();
  MutexLock lock(&state.primaries_mutex);
  PrimaryContext& primary = state.primaries[dev.ordinal];
  primary.flags = flags;
  if (primary.ctx != nullptr) primary.ctx->flags = flags;
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
