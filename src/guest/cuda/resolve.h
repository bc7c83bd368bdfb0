// What the generated export shells (cuda_shells_autogen.cc, from exports.txt) call before a
// body: the initialization check, and the resolution of each kind of handle against its store
// (state.h), with the error the driver API gives for a handle that is not live. Bodies use the
// same functions where they resolve a handle themselves (the stream inside a launch
// configuration, a library's module in the current context).
#pragma once

#include <cuda.h>

#include "common/status.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

inline Code CheckInit() { return DriverState::Get().CheckInit(); }

// A live context (kInvalidContext); the optional form passes null through.
Code ResolveContext(CUcontext handle, CUctx_st** ctx);
Code ResolveOptionalContext(CUcontext handle, CUctx_st** ctx);
// A created stream that is live (kInvalidHandle), not a default stream.
Code ResolveCreatedStream(CUstream handle, Ref<CUstream_st>* stream);
// Live records of each kind (kInvalidHandle).
Code ResolveEvent(CUevent handle, Ref<CUevent_st>* event);
Code ResolveModule(CUmodule handle, Ref<CUmod_st>* module);
Code ResolveFunction(CUfunction handle, Ref<CUfunc_st>* function);
Code ResolveLibrary(CUlibrary handle, Ref<CUlib_st>* library);
Code ResolveKernel(CUkernel handle, Ref<CUkern_st>* kernel);
Code ResolveLink(CUlinkState handle, Ref<CUlinkState_st>* link);
// A CUfunction, or a CUkernel passed in its place: the kernel's function in the current
// context, its library loaded there on first use (api_library.cc).
Code ResolveFunctionOrKernel(CUfunction handle, Ref<CUfunc_st>* function);
// A device ordinal of a visible device (kInvalidDevice).
Code ResolveDevice(int ordinal, const Device** device);

// The name of a result, as cuGetErrorName gives it ("CUDA_ERROR_INVALID_VALUE").
const char* ResultName(Code code);

}  // namespace pvgpu::guest
