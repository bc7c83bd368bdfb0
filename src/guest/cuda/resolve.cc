#include "guest/cuda/resolve.h"

namespace pvgpu::guest {

namespace {

template <typename T>
Code Found(Ref<T> found, Ref<T>* out) {
  if (found == nullptr) return Code::kInvalidHandle;
  *out = std::move(found);
  return Code::kOk;
}

}  // namespace

Code ResolveContext(CUcontext handle, CUctx_st** ctx) {
  Ref<CUctx_st> found = objects().contexts.Find(handle);
  if (found == nullptr) return Code::kInvalidContext;
  *ctx = found.get();  // never freed: no reference to hold
  return Code::kOk;
}

Code ResolveOptionalContext(CUcontext handle, CUctx_st** ctx) {
  if (handle == nullptr) {
    *ctx = nullptr;
    return Code::kOk;
  }
  return ResolveContext(handle, ctx);
}

Code ResolveCreatedStream(CUstream handle, Ref<CUstream_st>* stream) {
  return Found(objects().streams.Find(handle), stream);
}

Code ResolveEvent(CUevent handle, Ref<CUevent_st>* event) {
  Ref<CUevent_st> found = objects().events.Find(handle);
  if (found != nullptr && !LiveContext(found->ctx)) found = nullptr;
  return Found(std::move(found), event);
}

Code ResolveModule(CUmodule handle, Ref<CUmod_st>* module) {
  return Found(objects().modules.Find(handle), module);
}

Code ResolveFunction(CUfunction handle, Ref<CUfunc_st>* function) {
  return Found(objects().functions.Find(handle), function);
}

Code ResolveLibrary(CUlibrary handle, Ref<CUlib_st>* library) {
  return Found(objects().libraries.Find(handle), library);
}

Code ResolveKernel(CUkernel handle, Ref<CUkern_st>* kernel) {
  return Found(objects().kernels.Find(handle), kernel);
}

Code ResolveLink(CUlinkState handle, Ref<CUlinkState_st>* link) {
  return Found(objects().links.Find(handle), link);
}

Code ResolveDevice(int ordinal, const Device** device) {
  *device = DriverState::Get().device(ordinal);
  return *device != nullptr ? Code::kOk : Code::kInvalidDevice;
}

}  // namespace pvgpu::guest
