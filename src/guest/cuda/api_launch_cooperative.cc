// Driver API: cooperative launches (cuLaunchCooperativeKernel; cuLaunchKernelEx with
// CU_LAUNCH_ATTRIBUTE_COOPERATIVE comes here through PostLaunch too). The grid is refused at
// the call, as NVIDIA's driver refuses it, when its blocks cannot all be resident: the limit is
// the one the occupancy calculator reports, so a program that sizes its grid from
// cuOccupancyMaxActiveBlocksPerMultiprocessor x the multiprocessor count always fits. The host
// checks again (a guest may not be pvgpu's) and keeps every block resident.
#include <algorithm>

#include "common/log.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/launch.h"

namespace pvgpu::guest {

Code CheckCooperativeLaunch(CUfunc_st* f, uint64_t blocks, uint64_t block_threads,
                            size_t dynamic_shared) {
  const int* attrs = DriverState::Get().device(f->module->ctx->device)->info.attributes;
  if (attrs[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH] == 0) {
    PVGPU_WARN("cooperative launch: the device does not support cooperative launches");
    return Code::kNotSupported;
  }
  int per_sm = 0;
  if (Code code = api::OccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, f, static_cast<int>(std::min<uint64_t>(block_threads, 1u << 30)),
          dynamic_shared);
      code != Code::kOk) {
    return code;
  }
  const uint64_t resident = uint64_t(std::max(0, per_sm)) *
                            uint64_t(std::max(0, attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT]));
  if (blocks > resident) {
    PVGPU_DEBUG("cooperative launch of " << blocks << " blocks: at most " << resident << " ("
                                         << per_sm << " per multiprocessor) can be resident");
    return Code::kCooperativeLaunchTooLarge;
  }
  return Code::kOk;
}

namespace api {

Code LaunchCooperativeKernel(CUfunc_st* f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes,
                             const StreamRef& hStream, void** kernelParams) {
  return PostLaunch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes, hStream, kernelParams, /*extra=*/nullptr,
                    /*cooperative=*/true);
}

}  // namespace api
}  // namespace pvgpu::guest
