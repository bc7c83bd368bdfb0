// The CONTEXT_LOCAL_STORAGE slots: the runtime's view of ContextStorage, where a null context
// means the calling thread's current one.
#include "guest/cuda/context_storage.h"
#include "guest/cuda/runtime_slots.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {
namespace {

// The context a slot works on; nullptr when `ctx` is null and no context is current.
CUctx_st* Resolve(CUcontext ctx) { return ctx != nullptr ? ctx : CurrentContext(); }

}  // namespace

CUresult ContextStoragePut(CUcontext ctx, void* key, void* value,
                           void (*destructor)(CUcontext, void*, void*)) {
  PVGPU_SLOT_TRACE("CONTEXT_LOCAL_STORAGE put", ctx << ", " << key << ", " << value);
  CUctx_st* target = Resolve(ctx);
  // Values only live in live contexts: a destroyed one would never run their destructors.
  if (target == nullptr || !LiveContext(target)) return CUDA_ERROR_INVALID_CONTEXT;
  ProcessContextStorage().Put(target, key, value, destructor);
  return CUDA_SUCCESS;
}

CUresult ContextStorageDelete(CUcontext ctx, void* key) {
  PVGPU_SLOT_TRACE("CONTEXT_LOCAL_STORAGE delete", ctx << ", " << key);
  CUctx_st* target = Resolve(ctx);
  if (target == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  return ProcessContextStorage().Delete(target, key) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult ContextStorageGet(void** value, CUcontext ctx, void* key) {
  CUctx_st* target = Resolve(ctx);
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (target == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // The runtime asks at the start of every call; a miss tells it to set the context up.
  const bool found = ProcessContextStorage().Get(target, key, value);
  PVGPU_SLOT_TRACE("CONTEXT_LOCAL_STORAGE get", ctx << ", " << key << (found ? "" : " -> miss"));
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace pvgpu::guest
