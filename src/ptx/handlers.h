// Handlers that lowering code outside their family needs to name.
#pragma once

#include "ptx/ir.h"

namespace pvgpu::ptx {

bool ExecRet(const Inst& in, Warp& w, uint32_t mask);
bool ExecExit(const Inst& in, Warp& w, uint32_t mask);
// a[0]: dst (64-bit class), aux: 0 clock (32-bit dst), 1 clock64, 2 globaltimer
bool ExecReadClock(const Inst& in, Warp& w, uint32_t mask);

}  // namespace pvgpu::ptx
