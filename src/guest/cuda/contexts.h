// Context records and their host side, shared by the created (api_context.cc) and primary
// (api_primary.cc) contexts' calls.
#pragma once

#include <cuda.h>

#include "common/status.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

// The CU_CTX_* flags pvgpu accepts: known bits and one scheduling mode.
bool ValidContextFlags(unsigned int flags);

// A new context record on `device`. Records are never freed, so that a stale handle never
// aliases a newer context: the store then reliably reports it gone.
Ref<CUctx_st> NewContext(const Device& device, unsigned int flags, bool primary);

// Creates the host side of `ctx` under a fresh handle.
Code CreateOnHost(CUctx_st* ctx);
// Destroys the host side of `ctx` and forgets the guest objects it owned (its modules,
// functions, streams, events and memory).
Code DestroyOnHost(CUctx_st* ctx);

// Removes `ctx` from the calling thread's context stack, wherever it stands in it.
void PopEverywhereOnThisThread(CUctx_st* ctx);

}  // namespace pvgpu::guest
