// Stream-ordered memory pools (cuMemAllocAsync, cuMemFreeAsync, cuMemPool*): kept entirely in
// the guest, as suballocations of ordinary device allocations (chunks) the pool takes from the
// host with MemAlloc and gives back with MemFree. An allocation that fits in a chunk already
// taken and a free make no round trip; only a pool that grows or shrinks talks to the host,
// and that host memory is what the session's quota counts (reuse inside a pool is not counted
// again). mem_pool.cc; docs/memory.md says why reuse needs no stream dependencies here.
#pragma once

#include <cuda.h>

#include "common/status.h"
#include "guest/cuda/objects.h"

namespace pvgpu::guest {

// A context destroyed or reset: the host freed its chunks with it, so the pools forget them
// and the allocations they held (contexts.cc, beside the other records a context owns).
void DropPoolMemoryOf(CUctx_st* ctx);
// After a synchronizing call in `ctx` succeeded: what the pools hold unused in `ctx` above
// their release thresholds goes back to the host, as CUDA releases it at synchronization.
void ReleasePoolMemoryAfterSync(CUctx_st* ctx);
// cuMemFree on memory from a pool: true when `dptr` starts such an allocation, which then
// goes back to its pool (*code the result).
bool FreePoolAllocation(CUdeviceptr dptr, Code* code);
// The device's attributes for what the guest decides whatever the adapter: pools (on every
// adapter and channel; no IPC handle types), stream memory operations, and virtual memory
// management (not implemented: 0, even where the host's driver has it).
void AdjustMemoryAttributes(Device* device);

}  // namespace pvgpu::guest
