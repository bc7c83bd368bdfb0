// Host functions in streams (cuLaunchHostFunc, cuStreamAddCallback).
//
// The host runs a context's work in submission order and knows nothing of guest functions, so
// the guest orders them itself: a host function runs on a guest thread once the work submitted
// before it on its stream is done (read from the shared completion fence), and stream-ordered
// work submitted after it on a stream that must follow it is held back in the submitting call
// until it has returned. "Must follow": the same stream; any stream after a host function on
// the default stream; the default stream after a host function on a blocking stream (the
// legacy default stream's semantics, which the per-thread default stream shares here).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/status.h"

struct CUctx_st;

namespace pvgpu::guest {

using HostCall = void (*)(void* data, CUresult status);

// Runs `call(data, status)` after the work up to `after_seq` of `ctx` is done; status is that
// work's outcome as far as the fence tells (CUDA_SUCCESS, or CUDA_ERROR_DEVICE_UNAVAILABLE when
// the host went away).
void EnqueueHostFunc(CUctx_st* ctx, CUstream stream, unsigned int stream_flags, uint64_t after_seq,
                     HostCall call, void* data);

// Blocks until every pending host function that work on `stream` must follow has returned.
// Returns kNotPermitted when called from a host function (which may not call CUDA).
Code WaitForHostFuncs(CUctx_st* ctx, CUstream stream);
// Blocks until every pending host function of `ctx` has returned.
Code WaitForAllHostFuncs(CUctx_st* ctx);
// Whether a host function that work on `stream` must follow is still pending (no waiting).
bool HostFuncsPending(CUctx_st* ctx, CUstream stream);

}  // namespace pvgpu::guest
