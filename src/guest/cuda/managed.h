// Managed memory (cuMemAllocManaged): a sealed memfd mapped at one address in the guest and,
// by the host, at the same address in the daemon, where the context's adapter makes it a
// device address (host/session_managed.cc). The program and its kernels use one pointer over
// the same pages, so nothing migrates and prefetches and advice have nothing to do. Only the
// local channel passes memfds: over tcp:// and tls:// cuMemAllocManaged is NOT_SUPPORTED and
// the devices say they have no managed memory. api_managed.cc.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/status.h"
#include "guest/cuda/objects.h"

namespace pvgpu::guest {

// cuMemFree on managed memory: true when `dptr` starts a managed allocation, which is then
// freed with *code the result.
bool FreeManaged(CUdeviceptr dptr, Code* code);
// A context's managed allocations, when it is destroyed or reset: freed on both sides.
void ReleaseManagedOf(CUctx_st* ctx);
// Whether [ptr, ptr + size) lies in one managed allocation.
bool IsManaged(CUdeviceptr ptr, size_t size = 1);
// A device's attributes as its channel allows: no managed memory over remote channels.
void AdjustManagedAttributes(Device* device);

}  // namespace pvgpu::guest
