// Driver API: contexts (created, primary, and the per-thread current-context stack).
//
// A context is created on the host with a guest-chosen handle. Destroyed CUctx_st records are
// kept (not freed) so that a stale handle can never alias a newer context: the registry check
// then reliably reports CUDA_ERROR_CONTEXT_IS_DESTROYED / INVALID_CONTEXT.
#include <algorithm>

#include "guest/cuda/context_storage.h"
#include "guest/cuda/host_func.h"
#include "guest/cuda/runtime_slots.h"
#include "guest/cuda/state.h"
#include "host/version.h"

using pvgpu::Code;
using pvgpu::guest::Client;
using pvgpu::guest::DriverState;
using pvgpu::guest::ToCu;
namespace protocol = pvgpu::protocol;

namespace {

constexpr unsigned int kSchedMask = CU_CTX_SCHED_MASK;
constexpr unsigned int kKnownFlags = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST |
                                     CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE |
                                     CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;

bool ValidFlags(unsigned int flags) {
  if ((flags & ~kKnownFlags) != 0) return false;
  const unsigned int sched = flags & kSchedMask;
  return sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN ||
         sched == CU_CTX_SCHED_YIELD || sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

// Creates the host side of `ctx` under a fresh handle.
CUresult CreateOnHost(CUctx_st* ctx) {
  const pvgpu::guest::Device* device = DriverState::Get().device(ctx->device);
  ctx->client = device->client;
  protocol::CtxCreateRequest request;
  request.ctx = Client::NewHandle();
  request.device = device->remote_index;
  request.flags = ctx->flags;
  request.is_primary = ctx->primary ? 1 : 0;
  const Code code = ctx->client->Call(request);
  if (code != Code::kOk) return ToCu(code);
  ctx->handle = request.ctx;
  ctx->last_seq = 0;
  return CUDA_SUCCESS;
}

// Forgets the guest records owned by `ctx`; state mutex held.
void DropOwnedObjects(DriverState& state, CUctx_st* ctx) {
  auto drop = [ctx](auto& registry) {
    for (auto it = registry.begin(); it != registry.end();) {
      if ((*it)->ctx == ctx) {
        delete *it;
        it = registry.erase(it);
      } else {
        ++it;
      }
    }
  };
  drop(state.modules);
  drop(state.streams);
  drop(state.events);
  for (auto it = state.allocations.begin(); it != state.allocations.end();) {
    it = it->second.second == ctx ? state.allocations.erase(it) : std::next(it);
  }
}

// Destroys the host side of `ctx` and the guest objects it owned.
CUresult DestroyOnHost(CUctx_st* ctx) {
  pvgpu::guest::RunContextStorageDestructors(ctx);  // the runtime's state goes first
  // Pending host functions of the context run first (they hold it); the context's work is
  // already submitted, so they finish.
  (void)pvgpu::guest::WaitForAllHostFuncs(ctx);
  protocol::CtxDestroyRequest request;
  request.ctx = ctx->handle;
  const Code code = ctx->client->Call(request);
  auto& state = DriverState::Get();
  std::lock_guard<std::mutex> lock(state.mutex());
  DropOwnedObjects(state, ctx);
  return ToCu(code);
}

void PopEverywhereOnThisThread(CUctx_st* ctx) {
  auto& stack = pvgpu::guest::ContextStack();
  stack.erase(std::remove(stack.begin(), stack.end(), ctx), stack.end());
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                             CUdevice dev) {
  PVGPU_API_TRACE("cuCtxCreate_v4", pctx << ", " << params << ", " << flags << ", " << dev);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (pctx == nullptr || !ValidFlags(flags)) return CUDA_ERROR_INVALID_VALUE;
  if (state.device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (params != nullptr && (params->execAffinityParams != nullptr || params->cigParams != nullptr)) {
    PVGPU_WARN("cuCtxCreate: execution affinity and CIG parameters are not supported");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  auto* ctx = new CUctx_st();
  ctx->device = dev;
  ctx->flags = flags;
  if (CUresult r = CreateOnHost(ctx); r != CUDA_SUCCESS) {
    delete ctx;
    return r;
  }
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    state.contexts.insert(ctx);
  }
  pvgpu::guest::ContextStack().push_back(ctx);  // a new context is pushed onto the stack
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  PVGPU_API_TRACE("cuCtxDestroy_v2", ctx);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    if (ctx == nullptr || state.contexts.count(ctx) == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;  // primaries go through Release
    state.contexts.erase(ctx);
  }
  PopEverywhereOnThisThread(ctx);
  return DestroyOnHost(ctx);
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  PVGPU_API_TRACE("cuCtxSetCurrent", ctx);
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  auto& stack = pvgpu::guest::ContextStack();
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  // The runtime makes a primary context current before it retains it.
  if (!pvgpu::guest::LiveContext(ctx) && !pvgpu::guest::IsPrimaryContextRecord(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  PVGPU_API_TRACE("cuCtxGetCurrent", pctx);
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = pvgpu::guest::CurrentContext();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  PVGPU_API_TRACE("cuCtxPushCurrent_v2", ctx);
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  if (!pvgpu::guest::LiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  pvgpu::guest::ContextStack().push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) {
  PVGPU_API_TRACE("cuCtxPopCurrent_v2", pctx);
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  auto& stack = pvgpu::guest::ContextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  PVGPU_API_TRACE("cuCtxGetDevice", device);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int* flags) {
  PVGPU_API_TRACE("cuCtxGetFlags", flags);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  PVGPU_API_TRACE("cuCtxGetApiVersion", ctx << ", " << version);
  if (CUresult init = DriverState::Get().CheckInit(); init != CUDA_SUCCESS) return init;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) ctx = pvgpu::guest::CurrentContext();
  if (!pvgpu::guest::LiveContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // the context API generation of every context since CUDA 3.2
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize() {
  PVGPU_API_TRACE("cuCtxSynchronize", "");
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (CUresult r = pvgpu::guest::WaitForAllHostFuncs(ctx); r != CUDA_SUCCESS) return r;
  uint64_t seq = 0;
  {
    auto& state = DriverState::Get();
    std::lock_guard<std::mutex> lock(state.mutex());
    seq = ctx->last_seq;
  }
  return pvgpu::guest::SynchronizeContext(ctx, seq, [&] {
    protocol::CtxSynchronizeRequest request;
    request.ctx = ctx->handle;
    return ToCu(ctx->client->Call(request));
  });
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  PVGPU_API_TRACE("cuCtxSetLimit", static_cast<int>(limit) << ", " << value);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (limit < 0 || limit >= CU_LIMIT_MAX || static_cast<size_t>(limit) >= std::size(ctx->limits)) {
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
  protocol::CtxSetLimitRequest request;
  request.ctx = ctx->handle;
  request.limit = static_cast<uint32_t>(limit);
  request.value = value;
  const Code code = ctx->client->Call(request);
  if (code == Code::kOk) ctx->limits[limit] = value;
  return ToCu(code);
}

CUresult CUDAAPI cuCtxGetLimit(size_t* value, CUlimit limit) {
  PVGPU_API_TRACE("cuCtxGetLimit", value << ", " << static_cast<int>(limit));
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (limit < 0 || limit >= CU_LIMIT_MAX || static_cast<size_t>(limit) >= std::size(ctx->limits)) {
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  }
  static constexpr size_t kDefaults[] = {1024, 1u << 20, 8u << 20, 2, 2048, 64, 0, 0};
  const size_t stored = ctx->limits[limit];
  *value = stored != 0 || static_cast<size_t>(limit) >= std::size(kDefaults) ? stored
                                                                              : kDefaults[limit];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  PVGPU_API_TRACE("cuDevicePrimaryCtxRetain", pctx << ", " << dev);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (state.device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state.mutex());
  auto& primary = state.primary(dev);
  if (primary.refcount == 0) {
    // One record per device for the process's life: its address is the handle the runtime
    // got from CUDART_INTERFACE[2] before this retain.
    CUctx_st* ctx = pvgpu::guest::PrimaryContextRecord(dev);
    ctx->device = dev;
    ctx->flags = primary.flags;
    ctx->primary = true;
    if (CUresult r = CreateOnHost(ctx); r != CUDA_SUCCESS) return r;
    primary.ctx = ctx;
    state.contexts.insert(ctx);
  }
  ++primary.refcount;
  *pctx = primary.ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  PVGPU_API_TRACE("cuDevicePrimaryCtxRelease_v2", dev);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (state.device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    auto& primary = state.primary(dev);
    if (primary.refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--primary.refcount > 0) return CUDA_SUCCESS;
    ctx = primary.ctx;
    primary.ctx = nullptr;
    state.contexts.erase(ctx);
  }
  PopEverywhereOnThisThread(ctx);
  return DestroyOnHost(ctx);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  PVGPU_API_TRACE("cuDevicePrimaryCtxReset_v2", dev);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (state.device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(state.mutex());
    ctx = state.primary(dev).ctx;
  }
  if (ctx == nullptr) return CUDA_SUCCESS;  // nothing to reset
  // The handle the application holds stays valid; everything in it is destroyed.
  if (CUresult r = DestroyOnHost(ctx); r != CUDA_SUCCESS) return r;
  return CreateOnHost(ctx);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  PVGPU_API_TRACE("cuDevicePrimaryCtxGetState", dev << ", " << flags << ", " << active);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (state.device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(state.mutex());
  const auto& primary = state.primary(dev);
  *flags = primary.flags;
  *active = primary.refcount > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  PVGPU_API_TRACE("cuDevicePrimaryCtxSetFlags_v2", dev << ", " << flags);
  auto& state = DriverState::Get();
  if (CUresult init = state.CheckInit(); init != CUDA_SUCCESS) return init;
  if (state.device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (!ValidFlags(flags)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state.mutex());
  auto& primary = state.primary(dev);
  primary.flags = flags;
  if (primary.ctx != nullptr) primary.ctx->flags = flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
