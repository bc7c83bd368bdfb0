// Driver API: kernel launches (cuLaunchKernel, cuLaunchKernelEx) and the occupancy
// calculators. A launch is checked against the device's and the kernel's limits, its
// parameters packed from the layout the host described at load, and posted without waiting.
#include <algorithm>
#include <cstring>
#include <vector>

#include "guest/cuda/arrays.h"
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/graph.h"
#include "guest/cuda/launch.h"
#include "guest/cuda/resolve.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// The device's per-block and per-multiprocessor limits for occupancy.
struct Limits {
  int max_threads_per_block;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int shared_per_sm;
  int warp;
};

Limits DeviceLimits(CUfunc_st* f) {
  const int* a = DriverState::Get().device(f->module->ctx->device)->info.attributes;
  return {a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK],
          a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR],
          std::max(1, a[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR]),
          a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR],
          std::max(1, a[CU_DEVICE_ATTRIBUTE_WARP_SIZE])};
}

// Resident blocks per multiprocessor for `block` threads and `dynamic_shared` bytes.
int BlocksPerSm(CUfunc_st* f, int block, size_t dynamic_shared) {
  const Limits l = DeviceLimits(f);
  const int kernel_max = f->kernel->max_threads_per_block != 0
                             ? static_cast<int>(f->kernel->max_threads_per_block)
                             : l.max_threads_per_block;
  if (block <= 0 || block > std::min(kernel_max, l.max_threads_per_block)) return 0;
  const int warps = (block + l.warp - 1) / l.warp;
  int blocks = std::min(l.max_blocks_per_sm, l.max_threads_per_sm / (warps * l.warp));
  const size_t shared = f->kernel->shared_bytes + dynamic_shared;
  if (shared > 0) blocks = std::min<int>(blocks, static_cast<int>(l.shared_per_sm / shared));
  return std::max(0, blocks);
}

}  // namespace

Code PackLaunch(CUfunc_st* f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, CUctx_st* ctx, void** kernelParams, void** extra,
                bool cooperative, std::vector<uint8_t>* packed) {
  if (f->module->ctx != ctx) return Code::kInvalidHandle;  // the function's context must be current
  const auto& k = *f->kernel;
  const Device* device = DriverState::Get().device(ctx->device);
  const int* attrs = device->info.attributes;
  if (gridDimX == 0 || gridDimY == 0 || gridDimZ == 0 || blockDimX == 0 || blockDimY == 0 ||
      blockDimZ == 0) {
    return Code::kInvalidValue;
  }
  if (gridDimX > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X]) ||
      gridDimY > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y]) ||
      gridDimZ > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z]) ||
      blockDimX > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X]) ||
      blockDimY > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y]) ||
      blockDimZ > static_cast<unsigned>(attrs[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z])) {
    return Code::kInvalidValue;
  }
  const uint64_t threads = uint64_t{blockDimX} * blockDimY * blockDimZ;
  const uint32_t max_threads = k.max_threads_per_block != 0 ? k.max_threads_per_block : 1024;
  if (threads > max_threads) return Code::kInvalidValue;
  const int opted_in = MaxDynamicSharedSet(*f);
  const uint64_t shared_limit =
      opted_in != 0 ? uint64_t(opted_in) + k.shared_bytes
                    : uint64_t(attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK]);
  if (uint64_t{sharedMemBytes} + k.shared_bytes > shared_limit) {
    return Code::kInvalidValue;
  }
  if (cooperative) {
    const uint64_t blocks = uint64_t{gridDimX} * gridDimY * gridDimZ;
    if (Code code = CheckCooperativeLaunch(f, blocks, threads, sharedMemBytes); code != Code::kOk) {
      return code;
    }
  }

  std::vector<uint8_t> params(k.param_bytes, 0);
  if (kernelParams != nullptr && extra != nullptr) return Code::kInvalidValue;
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < k.param_sizes.size(); ++i) {
      if (kernelParams[i] == nullptr) return Code::kInvalidValue;
      std::memcpy(params.data() + k.param_offsets[i], kernelParams[i], k.param_sizes[i]);
    }
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    size_t size = 0;
    bool have_size = false;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = *static_cast<const size_t*>(extra[i + 1]);
        have_size = true;
      } else {
        return Code::kInvalidValue;
      }
    }
    if (!k.param_sizes.empty() && (buffer == nullptr || !have_size || size < k.param_bytes)) {
      return Code::kInvalidValue;
    }
    if (k.param_bytes > 0) std::memcpy(params.data(), buffer, k.param_bytes);
  } else if (!k.param_sizes.empty()) {
    return Code::kInvalidValue;
  }
  // The module's texture and surface references as the application set them last.
  if (Code code = BindReferences(f->module); code != Code::kOk) return code;
  *packed = std::move(params);
  return Code::kOk;
}

Code PostLaunch(CUfunc_st* f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                unsigned int sharedMemBytes, const StreamRef& hStream, void** kernelParams,
                void** extra, bool cooperative) {
  CUctx_st* ctx = hStream.ctx;
  std::vector<uint8_t> params;
  if (Code code = PackLaunch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                             sharedMemBytes, ctx, kernelParams, extra, cooperative, &params);
      code != Code::kOk) {
    return code;
  }
  if (CaptureActive()) {  // a capturing stream records the launch as a kernel node
    auto node = std::make_unique<CUgraphNode_st>();
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    GraphKernel& kernel = node->kernel;
    kernel.function = FindFunction(f);
    // A CUkernel's function in this context: not in the store, kept alive by its library.
    if (kernel.function == nullptr)
      kernel.function = std::shared_ptr<CUfunc_st>(std::shared_ptr<void>(), f);
    kernel.grid[0] = gridDimX, kernel.grid[1] = gridDimY, kernel.grid[2] = gridDimZ;
    kernel.block[0] = blockDimX, kernel.block[1] = blockDimY, kernel.block[2] = blockDimZ;
    kernel.shared_bytes = sharedMemBytes;
    kernel.cooperative = cooperative;
    kernel.params = params;
    if (auto captured = CaptureNode(hStream, std::move(node))) return *captured;
  }

  protocol::LaunchKernelRequest request;
  request.ctx = ctx->handle;
  request.stream = hStream.wire();
  request.module = f->module->handle;
  request.kernel = f->index;
  request.shared_bytes = sharedMemBytes;
  request.grid[0] = gridDimX;
  request.grid[1] = gridDimY;
  request.grid[2] = gridDimZ;
  request.block[0] = blockDimX;
  request.block[1] = blockDimY;
  request.block[2] = blockDimZ;
  request.cooperative = cooperative ? 1 : 0;
  uint64_t seq = 0;
  if (Code code = ctx->client->Post(request, params, &seq); code != Code::kOk) return code;
  NoteSubmitted(hStream, seq);
  return Code::kOk;
}

Code ApplyLaunchAttribute(const CUlaunchAttribute& attr, const char* call, LaunchOptions* options) {
  const CUlaunchAttributeValue& v = attr.value;
  switch (attr.id) {
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:  // one queue per context: priorities are hints
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      return Code::kOk;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:  // as cuLaunchCooperativeKernel
      options->cooperative = v.cooperative != 0;
      return Code::kOk;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      if (v.clusterDim.x <= 1 && v.clusterDim.y <= 1 && v.clusterDim.z <= 1) return Code::kOk;
      PVGPU_WARN(call << ": thread block clusters of " << v.clusterDim.x << "x" << v.clusterDim.y
                      << "x" << v.clusterDim.z << " blocks are not supported by pvgpu");
      return Code::kNotSupported;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      if (v.programmaticEvent.event == nullptr) return Code::kInvalidValue;
      options->events.emplace_back(v.programmaticEvent.event, v.programmaticEvent.flags);
      return Code::kOk;
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
      if (v.launchCompletionEvent.event == nullptr) return Code::kInvalidValue;
      options->events.emplace_back(v.launchCompletionEvent.event, v.launchCompletionEvent.flags);
      return Code::kOk;
    default:
      PVGPU_WARN(call << ": launch attribute " << static_cast<int>(attr.id)
                      << " is not supported by pvgpu");
      return Code::kNotSupported;
  }
}

namespace api {

Code LaunchKernel(CUfunc_st* f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                  unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                  unsigned int sharedMemBytes, const StreamRef& hStream, void** kernelParams,
                  void** extra) {
  return PostLaunch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes, hStream, kernelParams, extra, /*cooperative=*/false);
}

Code LaunchKernelEx(const CUlaunchConfig* config, CUfunc_st* f, void** kernelParams, void** extra) {
  if (config->numAttrs > 0 && config->attrs == nullptr) return Code::kInvalidValue;
  LaunchOptions options;
  for (unsigned int i = 0; i < config->numAttrs; ++i) {
    if (Code code = ApplyLaunchAttribute(config->attrs[i], "cuLaunchKernelEx", &options);
        code != Code::kOk) {
      return code;
    }
  }
  StreamRef stream;
  if (Code code = ResolveStream(config->hStream, &stream); code != Code::kOk) return code;
  if (Code code = OrderAfterHostFuncs(stream); code != Code::kOk) return code;
  if (Code code = PostLaunch(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                             config->blockDimX, config->blockDimY, config->blockDimZ,
                             config->sharedMemBytes, stream, kernelParams, extra,
                             options.cooperative);
      code != Code::kOk) {
    return code;
  }
  for (const auto& [event, flags] : options.events) {
    Ref<CUevent_st> record;
    if (Code code = ResolveEvent(event, &record); code != Code::kOk) return code;
    if (Code code = EventRecordWithFlags(record.get(), stream, 0); code != Code::kOk) return code;
  }
  return Code::kOk;
}

Code OccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunc_st* func, int blockSize,
                                               size_t dynamicSMemSize) {
  *numBlocks = BlocksPerSm(func, blockSize, dynamicSMemSize);
  return Code::kOk;
}

Code OccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, CUfunc_st* func,
                                                        int blockSize, size_t dynamicSMemSize,
                                                        unsigned int flags) {
  return OccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}

Code OccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunc_st* func,
                                    CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                    size_t dynamicSMemSize, int blockSizeLimit) {
  const Limits l = DeviceLimits(func);
  int limit = blockSizeLimit > 0 ? std::min(blockSizeLimit, l.max_threads_per_block)
                                 : l.max_threads_per_block;
  if (func->kernel->max_threads_per_block != 0) {
    limit = std::min<int>(limit, func->kernel->max_threads_per_block);
  }
  // Largest block (in whole warps) with the most resident threads per multiprocessor.
  int best_block = 0, best_threads = 0, best_blocks = 0;
  for (int block = l.warp; block <= limit; block += l.warp) {
    const size_t shared =
        blockSizeToDynamicSMemSize != nullptr ? blockSizeToDynamicSMemSize(block) : dynamicSMemSize;
    const int blocks = BlocksPerSm(func, block, shared);
    if (blocks * block >= best_threads && blocks > 0) {
      best_threads = blocks * block;
      best_block = block;
      best_blocks = blocks;
    }
  }
  const int sms = DriverState::Get()
                      .device(func->module->ctx->device)
                      ->info.attributes[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
  *blockSize = best_block;
  *minGridSize = best_blocks * std::max(1, sms);
  return Code::kOk;
}

Code OccupancyMaxPotentialBlockSizeWithFlags(int* minGridSize, int* blockSize, CUfunc_st* func,
                                             CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                             size_t dynamicSMemSize, int blockSizeLimit,
                                             unsigned int flags) {
  return OccupancyMaxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                        dynamicSMemSize, blockSizeLimit);
}

// The dynamic shared memory each of `numBlocks` blocks of `blockSize` threads can have with
// all of them resident on one multiprocessor: 0 when they cannot all be resident.
Code OccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunc_st* func, int numBlocks,
                                           int blockSize) {
  if (numBlocks <= 0 || blockSize <= 0) return Code::kInvalidValue;
  *dynamicSmemSize = 0;
  if (BlocksPerSm(func, blockSize, 0) < numBlocks) return Code::kOk;
  const Limits l = DeviceLimits(func);
  const size_t fixed = func->kernel->shared_bytes;
  const size_t per_block = static_cast<size_t>(l.shared_per_sm) / static_cast<size_t>(numBlocks);
  const int opted_in = MaxDynamicSharedSet(*func);
  const int* a = DriverState::Get().device(func->module->ctx->device)->info.attributes;
  const size_t block_limit =
      opted_in != 0
          ? static_cast<size_t>(opted_in)
          : static_cast<size_t>(a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK]) -
                std::min<size_t>(fixed, a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK]);
  *dynamicSmemSize = std::min(per_block > fixed ? per_block - fixed : 0, block_limit);
  return Code::kOk;
}

}  // namespace api
}  // namespace pvgpu::guest
