// Handlers that lowering code outside their family needs to name.
#pragma once

#include "ptx/ir.h"

namespace pvgpu::ptx {

// bra: aux is the target pc.
bool ExecBra(const Inst& in, Warp& w, uint32_t mask);
// A backward bra closing a spin loop (its body polls memory): in a cooperative launch the warp
// yields every few iterations so that the blocks it waits for get the worker.
bool ExecBraSpin(const Inst& in, Warp& w, uint32_t mask);
bool ExecRet(const Inst& in, Warp& w, uint32_t mask);
bool ExecExit(const Inst& in, Warp& w, uint32_t mask);
// Performs the cp.async and cp.async.bulk copies that `lanes` leave pending as they exit:
// hardware completes them whether or not the thread waited (ops_async.cc). False after a fault.
bool FinishAsyncCopies(const Inst& in, Warp& w, uint32_t lanes);
// a[0]: dst (64-bit class), aux: 0 clock (32-bit dst), 1 clock64, 2 globaltimer
bool ExecReadClock(const Inst& in, Warp& w, uint32_t mask);

}  // namespace pvgpu::ptx
