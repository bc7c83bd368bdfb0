// Handlers that lowering code outside their family needs to name.
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "ptx/ir.h"
#include "ptx/ptx.h"

namespace pvgpu::ptx {

struct LaunchCtx;

// bra: aux is the target pc.
bool ExecBra(const Inst& in, Warp& w, uint32_t mask);
// A backward bra closing a spin loop (its body polls memory): in a cooperative launch the warp
// yields every few iterations so that the blocks it waits for get the worker.
bool ExecBraSpin(const Inst& in, Warp& w, uint32_t mask);
bool ExecRet(const Inst& in, Warp& w, uint32_t mask);
bool ExecExit(const Inst& in, Warp& w, uint32_t mask);
// The engine's implementation of a device runtime (cudadevrt) call nvcc -rdc emits for
// dynamic parallelism, by its external function's name, or nullptr (device_launch.cc).
ExecFn DeviceRuntimeBuiltin(std::string_view name);
// The nesting depth of the grid the calling thread is launching (0: a host launch).
int DeviceLaunchDepth();
// After a grid completes: runs the grids its threads launched, in launch order (each of them
// running its own children the same way), and returns the first error.
Status RunDeviceLaunches(LaunchCtx& parent, const std::function<Status(int kernel,
                         const LaunchConfig&, std::span<const uint8_t>)>& launch);

// Performs the cp.async and cp.async.bulk copies that `lanes` leave pending as they exit:
// hardware completes them whether or not the thread waited (ops_async.cc). False after a fault.
bool FinishAsyncCopies(const Inst& in, Warp& w, uint32_t lanes);
// a[0]: dst (64-bit class), aux: 0 clock (32-bit dst), 1 clock64, 2 globaltimer
bool ExecReadClock(const Inst& in, Warp& w, uint32_t mask);

}  // namespace pvgpu::ptx
