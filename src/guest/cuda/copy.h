// Copies between host and device memory and within device memory, on a resolved stream: the
// paths behind every copy call (1D, 2D, 3D, unified-address copies). Ranges are checked
// against the guest's record of device memory, so that a bad pointer gets
// CUDA_ERROR_INVALID_VALUE at the call, as with the real driver; the host checks again.
#pragma once

#include <cuda.h>

#include "common/status.h"
#include "guest/cuda/objects.h"

namespace pvgpu::guest {

// Host to device. Posted without waiting: pageable data rides in the ring (the caller's buffer
// is free again on return); large copies from pinned memory shared with the host go straight
// from its pages, and then a synchronous (!async) copy waits for the host.
Code CopyHtoD(CUdeviceptr dst, const void* src, size_t bytes, const StreamRef& stream, bool async);
// Device to host. Pageable copies wait for their data; an asynchronous copy into pinned memory
// shared with the host only submits.
Code CopyDtoH(void* dst, CUdeviceptr src, size_t bytes, const StreamRef& stream, bool async);
// Device to device, posted without waiting; between contexts staged through the guest.
Code CopyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes, const StreamRef& stream);

// The stream work on memory of `owner` runs on: `stream` itself in its own context; another
// context's memory goes on that context's default stream (unified addressing, as in CUDA).
StreamRef StreamFor(CUctx_st* owner, const StreamRef& stream);
// The live context that owns [dptr, dptr + size): kInvalidValue when no memory holds it all.
Code OwnerOf(CUdeviceptr dptr, size_t size, CUctx_st** owner);

}  // namespace pvgpu::guest
