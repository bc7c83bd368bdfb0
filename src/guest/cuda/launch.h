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

// What launch attributes (cuLaunchKernelEx, graph kernel node attributes) ask of a launch.
struct LaunchOptions {
  bool cooperative = false;
  // Events to record once the kernel has completed (PROGRAMMATIC_EVENT,
  // LAUNCH_COMPLETION_EVENT: CUDA may fire them earlier, at the blocks' trigger or start;
  // completion is the conservative point every program must accept), with their flags.
  std::vector<std::pair<CUevent, int>> events;
};
// Applies one attribute to `options`: kOk for the attributes pvgpu honours (cooperative, the
// events) or that are hints whose absence changes no result (priority, L2 access policy
// windows, memory synchronization domains, programmatic stream serialization, which allows an
// overlap the host's in-order queue simply does not use, scheduling and carveout preferences,
// a cluster of one block), kNotSupported with a log line for the rest (clusters of several
// blocks, device-updatable graph nodes). `call` names the API call for the log.
Code ApplyLaunchAttribute(const CUlaunchAttribute& attr, const char* call, LaunchOptions* options);

// Whether `blocks` blocks of `block_threads` threads with `dynamic_shared` bytes can all be
// resident on f's device at once: at most cuOccupancyMaxActiveBlocksPerMultiprocessor times
// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, else kCooperativeLaunchTooLarge (as NVIDIA's driver
// answers); kNotSupported on a device whose CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0.
Code CheckCooperativeLaunch(CUfunc_st* f, uint64_t blocks, uint64_t block_threads,
                            size_t dynamic_shared);

}  // namespace pvgpu::guest
