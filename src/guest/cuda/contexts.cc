#include "guest/cuda/contexts.h"

#include <algorithm>

#include "guest/cuda/arrays.h"
#include "guest/cuda/context_storage.h"
#include "guest/cuda/host_func.h"
#include "guest/cuda/managed.h"
#include "guest/cuda/mem_pool.h"

namespace pvgpu::guest {

bool ValidContextFlags(unsigned int flags) {
  constexpr unsigned int kKnown = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                                  CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                                  CU_CTX_SYNC_MEMOPS;
  if ((flags & ~kKnown) != 0) return false;
  const unsigned int sched = flags & CU_CTX_SCHED_MASK;
  return sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN || sched == CU_CTX_SCHED_YIELD ||
         sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

Ref<CUctx_st> NewContext(const Device& device, unsigned int flags, bool primary) {
  // Deliberately leaked (see above): the Ref's deleter does nothing.
  auto ctx = Ref<CUctx_st>(new CUctx_st(), [](CUctx_st*) {});
  ctx->client = device.client;
  ctx->device = device.ordinal;
  ctx->flags = flags;
  ctx->primary = primary;
  return ctx;
}

Code CreateOnHost(CUctx_st* ctx) {
  const Device* device = DriverState::Get().device(ctx->device);
  protocol::CtxCreateRequest request;
  request.ctx = Client::NewHandle();
  request.device = device->remote_index;
  request.flags = ctx->flags;
  request.is_primary = ctx->primary ? 1 : 0;
  if (Code code = ctx->client->Call(request); code != Code::kOk) return code;
  ctx->handle = request.ctx;
  ctx->last_seq = 0;
  ctx->id = NextObjectId();
  ctx->legacy_stream_id = NextObjectId();
  return Code::kOk;
}

namespace {

void DropOwnedObjects(CUctx_st* ctx) {
  Objects& objects = pvgpu::guest::objects();
  auto owned = [ctx](const auto& object) { return object.ctx == ctx; };
  DropReferencesOfContext(ctx);
  objects.functions.TakeIf([ctx](const CUfunc_st& f) { return f.module->ctx == ctx; });
  objects.modules.TakeIf(owned);
  objects.streams.TakeIf(owned);
  objects.events.TakeIf(owned);
  objects.device_memory.EraseIf([ctx](CUctx_st* owner) { return owner == ctx; });
  ReleaseManagedOf(ctx);
  DropPoolMemoryOf(ctx);
  DropVirtualMemoryOf(ctx);
}

}  // namespace

Code DestroyOnHost(CUctx_st* ctx) {
  // The CUDA runtime's state in the context goes first: it does not delete its entries before
  // cuDevicePrimaryCtxReset, and its destructors may still use the context.
  RunContextStorageDestructors(ctx);
  // Pending host functions of the context run first (they hold it); the context's work is
  // already submitted, so they finish.
  (void)WaitForAllHostFuncs(ctx);
  protocol::CtxDestroyRequest request;
  request.ctx = ctx->handle;
  const Code code = ctx->client->Call(request);
  DropOwnedObjects(ctx);
  return code;
}

void PopEverywhereOnThisThread(CUctx_st* ctx) {
  auto& stack = ContextStack();
  stack.erase(std::remove(stack.begin(), stack.end(), ctx), stack.end());
}

}  // namespace pvgpu::guest
