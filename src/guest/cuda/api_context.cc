// Driver API: created contexts, the per-thread current-context stack, and what a context
// answers about itself (device, flags, limits, synchronization).
//
// A context is created on the host with a guest-chosen handle. Destroyed CUctx_st records are
// kept (not freed) so that a stale handle can never alias a newer context: the store check
// then reliably reports CUDA_ERROR_CONTEXT_IS_DESTROYED / INVALID_CONTEXT.
#include "guest/cuda/contexts.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/host_func.h"
#include "guest/cuda/mem_pool.h"

namespace pvgpu::guest::api {

namespace {

bool ValidLimit(CUctx_st* ctx, CUlimit limit) {
  return limit >= 0 && limit < CU_LIMIT_MAX && static_cast<size_t>(limit) < std::size(ctx->limits);
}

}  // namespace

Code CtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                  const Device& dev) {
  if (!ValidContextFlags(flags)) return Code::kInvalidValue;
  if (ctxCreateParams != nullptr &&
      (ctxCreateParams->execAffinityParams != nullptr || ctxCreateParams->cigParams != nullptr)) {
    PVGPU_WARN("cuCtxCreate: execution affinity and CIG parameters are not supported");
    return Code::kNotSupported;
  }
  Ref<CUctx_st> ctx = NewContext(dev, flags, /*primary=*/false);
  if (Code code = CreateOnHost(ctx.get()); code != Code::kOk) return code;
  CUctx_st* handle = objects().contexts.Add(std::move(ctx));
  ContextStack().push_back(handle);  // a new context is pushed onto the stack
  *pctx = handle;
  return Code::kOk;
}

// CUDA 11.4: execution affinity parameters, now part of CUctxCreateParams.
Code CtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                  unsigned int flags, const Device& dev) {
  if (numParams < 0) return Code::kInvalidValue;
  if (numParams == 0) return CtxCreate_v4(pctx, nullptr, flags, dev);
  // Passed on so that cuCtxCreate_v4 rejects (or one day honours) them in one place.
  CUctxCreateParams params{};
  params.execAffinityParams = paramsArray;
  params.numExecAffinityParams = numParams;
  return CtxCreate_v4(pctx, &params, flags, dev);
}

// CUDA 3.2: no creation parameters.
Code CtxCreate_v2(CUcontext* pctx, unsigned int flags, const Device& dev) {
  return CtxCreate_v4(pctx, nullptr, flags, dev);
}

Code CtxDestroy_v2(CUctx_st* ctx) {
  if (ctx->primary) return Code::kInvalidContext;  // primaries go through Release
  // Of two threads destroying it at once, one takes it from the store.
  if (objects().contexts.Take(ctx) == nullptr) return Code::kInvalidContext;
  PopEverywhereOnThisThread(ctx);
  return DestroyOnHost(ctx);
}

Code CtxSetCurrent(CUcontext ctx) {
  auto& stack = ContextStack();
  // A primary context's record is a valid handle before it is retained: the CUDA runtime
  // gets it from its interface table, makes it current, and retains it next.
  if (ctx != nullptr && !LiveContext(ctx) && !IsPrimaryContextRecord(ctx)) {
    return Code::kInvalidContext;
  }
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
  } else if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
  return Code::kOk;
}

Code CtxGetCurrent(CUcontext* pctx) {
  *pctx = CurrentContext();
  return Code::kOk;
}

Code CtxPushCurrent_v2(CUctx_st* ctx) {
  ContextStack().push_back(ctx);
  return Code::kOk;
}

Code CtxPopCurrent_v2(CUcontext* pctx) {
  auto& stack = ContextStack();
  if (stack.empty()) return Code::kInvalidContext;
  if (pctx != nullptr) *pctx = stack.back();
  stack.pop_back();
  return Code::kOk;
}

Code CtxGetDevice(CUctx_st* ctx, CUdevice* device) {
  *device = ctx->device;
  return Code::kOk;
}

// CUDA 13's form, naming the context (null: the current one); the 13.0 runtime resolves
// cuCtxGetDevice to it.
Code CtxGetDevice_v2(CUdevice* device, CUctx_st* ctx) {
  if (ctx == nullptr) ctx = CurrentContext();
  if (ctx == nullptr || !LiveContext(ctx)) return Code::kInvalidContext;
  *device = ctx->device;
  return Code::kOk;
}

// The id is the host side's: a context reset by cuDevicePrimaryCtxReset is a new context.
Code CtxGetId(CUctx_st* ctx, unsigned long long* ctxId) {
  if (ctx == nullptr) ctx = CurrentContext();  // null: the current context
  if (ctx == nullptr || !LiveContext(ctx)) return Code::kInvalidContext;
  *ctxId = ctx->id;
  return Code::kOk;
}

// CUDA 2.x's use count: cuCtxAttach takes one more use of the current context, cuCtxDetach
// gives one back and destroys the context with its last use. A primary context's uses are its
// retains, so they go through the primary context's own count.
Code CtxAttach(CUctx_st* ctx, CUcontext* pctx, unsigned int flags) {
  if (flags != 0) return Code::kInvalidValue;
  if (ctx->primary) {
    const Device* device = DriverState::Get().device(ctx->device);
    CUcontext retained = nullptr;
    if (Code code = DevicePrimaryCtxRetain(&retained, *device); code != Code::kOk) return code;
    *pctx = retained;
    return Code::kOk;
  }
  ctx->uses.fetch_add(1, std::memory_order_relaxed);
  *pctx = ctx;
  return Code::kOk;
}

Code CtxDetach(CUctx_st* ctx) {
  if (ctx != CurrentContext()) return Code::kInvalidContext;  // as CUDA requires
  if (ctx->primary) return DevicePrimaryCtxRelease_v2(*DriverState::Get().device(ctx->device));
  // Of two threads giving back the last use at once, one destroys the context.
  int uses = ctx->uses.load(std::memory_order_relaxed);
  do {
    if (uses <= 0) return Code::kInvalidContext;
  } while (!ctx->uses.compare_exchange_weak(uses, uses - 1, std::memory_order_acq_rel));
  return uses == 1 ? CtxDestroy_v2(ctx) : Code::kOk;
}

Code CtxGetFlags(CUctx_st* ctx, unsigned int* flags) {
  *flags = ctx->flags;
  return Code::kOk;
}

Code CtxGetApiVersion(CUctx_st* ctx, unsigned int* version) {
  if (ctx == nullptr) ctx = CurrentContext();  // null: the current context
  if (!LiveContext(ctx)) return Code::kInvalidContext;
  *version = 3020;  // the context API generation of every context since CUDA 3.2
  return Code::kOk;
}

Code CtxSynchronize(CUctx_st* ctx) {
  if (Code code = CheckUnsafeCall(); code != Code::kOk) return code;  // during stream capture
  if (Code code = WaitForAllHostFuncs(ctx); code != Code::kOk) return code;
  const Code code = SynchronizeContext(ctx, ctx->last_seq, [&] {
    protocol::CtxSynchronizeRequest request;
    request.ctx = ctx->handle;
    return ctx->client->Call(request);
  });
  // As CUDA does at synchronization: pools give back what they hold above their thresholds.
  if (code == Code::kOk) ReleasePoolMemoryAfterSync(ctx);
  return code;
}

// CUDA 13's form, naming the context (null: the current one); the 13.0 runtime resolves
// cuCtxSynchronize to it.
Code CtxSynchronize_v2(CUctx_st* ctx) {
  if (ctx == nullptr) ctx = CurrentContext();
  if (ctx == nullptr || !LiveContext(ctx)) return Code::kInvalidContext;
  return CtxSynchronize(ctx);
}

Code CtxSetLimit(CUctx_st* ctx, CUlimit limit, size_t value) {
  if (!ValidLimit(ctx, limit)) return Code::kUnsupportedLimit;
  protocol::CtxSetLimitRequest request;
  request.ctx = ctx->handle;
  request.limit = static_cast<uint32_t>(limit);
  request.value = value;
  const Code code = ctx->client->Call(request);
  if (code == Code::kOk) ctx->limits[limit] = value;
  return code;
}

Code CtxGetLimit(CUctx_st* ctx, size_t* pvalue, CUlimit limit) {
  if (!ValidLimit(ctx, limit)) return Code::kUnsupportedLimit;
  static constexpr size_t kDefaults[] = {1024, 1u << 20, 8u << 20, 2, 2048, 64, 0, 0};
  const size_t stored = ctx->limits[limit];
  *pvalue =
      stored != 0 || static_cast<size_t>(limit) >= std::size(kDefaults) ? stored : kDefaults[limit];
  return Code::kOk;
}

// The cpu adapter has no L1/shared split to prefer; valid preferences are accepted.
Code CtxSetCacheConfig(CUctx_st* ctx, CUfunc_cache config) {
  return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL
             ? Code::kOk
             : Code::kInvalidValue;
}

Code CtxGetCacheConfig(CUctx_st* ctx, CUfunc_cache* pconfig) {
  *pconfig = CU_FUNC_CACHE_PREFER_NONE;
  return Code::kOk;
}

Code CtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  if (leastPriority != nullptr) *leastPriority = 0;
  if (greatestPriority != nullptr) *greatestPriority = -5;
  return Code::kOk;
}

// cuProfilerStart / cuProfilerStop only bracket what an attached profiler records. With no
// profiler (pvgpu never has one) the driver accepts them in any valid context, and frameworks
// (torch.cuda.profiler, cudaProfilerStart) treat an error here as fatal, so they succeed
// instead of being NOT_SUPPORTED stubs. cuProfilerInitialize, deprecated since CUDA 11, stays
// a stub.
Code ProfilerStart(CUctx_st* ctx) { return Code::kOk; }
Code ProfilerStop(CUctx_st* ctx) { return Code::kOk; }

}  // namespace pvgpu::guest::api
