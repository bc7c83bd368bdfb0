// What the launch entry points share: cuLaunchKernel and cuLaunchKernelEx (api_launch.cc) and
// cuLaunchCooperativeKernel (api_launch_cooperative.cc) all end in one checked, packed post.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

// Checks a launch of `f` against the device's and the kernel's limits, packs its parameters
// (kernelParams or extra, as cuLaunchKernel takes them) and posts it on `stream` without
// waiting. cooperative: every block of the grid must be resident at once
// (CheckCooperativeLaunch first), and the host keeps them so.
Code PostLaunch(CUfunc_st* f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, const StreamRef& stream, void** kernelParams,
                void** extra, bool cooperative);

// PostLaunch's checks and packing without the post: the parameters of a launch of `f` in
// `ctx` (graph kernel nodes, api_graph.cc).
Code PackLaunch(CUfunc_st* f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUctx_st* ctx, void** kernelParams, void** extra,
                bool cooperative, std::vector<uint8_t>* packed);

// Whether `blocks` blocks of `block_threads` threads with `dynamic_shared` bytes can all be
// resident on f's device at once: at most cuOccupancyMaxActiveBlocksPerMultiprocessor times
// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, else kCooperativeLaunchTooLarge (as NVIDIA's driver
// answers); kNotSupported on a device whose CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0.
Code CheckCooperativeLaunch(CUfunc_st* f, uint64_t blocks, uint64_t block_threads,
                            size_t dynamic_shared);

}  // namespace pvgpu::guest
