// Driver API: function attributes and cache preferences, extended launches, stream waits on
// events, and the occupancy calculators.
#include <algorithm>

#include "guest/cuda/state.h"

using pvgpu::guest::DriverState;
using pvgpu::guest::LiveFunction;

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

extern "C" {

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  PVGPU_API_TRACE("cuFuncSetAttribute", hfunc << ", " << static_cast<int>(attrib) << ", " << value);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveFunction(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  const int* a = DriverState::Get().device(hfunc->module->ctx->device)->info.attributes;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 ||
          static_cast<int64_t>(value) + hfunc->kernel->shared_bytes >
              a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      hfunc->max_dynamic_shared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      // A hint about the L1/shared split; the cpu adapter has no such split.
      return value >= -1 && value <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  PVGPU_API_TRACE("cuFuncSetCacheConfig", hfunc << ", " << static_cast<int>(config));
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (!LiveFunction(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config) {
  PVGPU_API_TRACE("cuCtxSetCacheConfig", static_cast<int>(config));
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  return config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache* config) {
  PVGPU_API_TRACE("cuCtxGetCacheConfig", config);
  CUctx_st* ctx = nullptr;
  if (CUresult r = pvgpu::guest::CurrentLiveContext(&ctx); r != CUDA_SUCCESS) return r;
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *config = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                  void** extra) {
  PVGPU_API_TRACE("cuLaunchKernelEx", config << ", " << f);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (unsigned int i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& attr = config->attrs[i];
    switch (attr.id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:  // one queue per context: priorities are hints
        break;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        if (attr.value.cooperative != 0) {
          PVGPU_WARN("cuLaunchKernelEx: cooperative launches are not supported");
          return CUDA_ERROR_NOT_SUPPORTED;
        }
        break;
      default:
        PVGPU_WARN("cuLaunchKernelEx: launch attribute " << static_cast<int>(attr.id)
                                                         << " is not supported");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ,
                        config->blockDimX, config->blockDimY, config->blockDimZ,
                        config->sharedMemBytes, config->hStream, kernelParams, extra);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  PVGPU_API_TRACE("cuStreamWaitEvent", hStream << ", " << hEvent << ", " << Flags);
  CUctx_st* ctx = nullptr;
  uint64_t wire = 0;
  if (CUresult r = pvgpu::guest::ResolveStream(hStream, &ctx, &wire); r != CUDA_SUCCESS) return r;
  if (Flags != CU_EVENT_WAIT_DEFAULT && Flags != CU_EVENT_WAIT_EXTERNAL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUctx_st* event_ctx = nullptr;
  uint64_t record_seq = 0;
  {
    auto& state = DriverState::Get();
    std::lock_guard<std::mutex> lock(state.mutex());
    if (hEvent == nullptr || state.events.count(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
    event_ctx = hEvent->ctx;
    record_seq = hEvent->record_seq;
  }
  // A host runs one session's work in submission order, so work submitted after this call
  // already follows the event's record. Only an event from another host needs a wait here.
  if (event_ctx->client == ctx->client || record_seq == 0) return CUDA_SUCCESS;
  return pvgpu::guest::ToCu(event_ctx->client->WaitDone(record_seq));
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                             int blockSize,
                                                             size_t dynamicSMemSize) {
  PVGPU_API_TRACE("cuOccupancyMaxActiveBlocksPerMultiprocessor", func << ", " << blockSize);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (numBlocks == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveFunction(func)) return CUDA_ERROR_INVALID_HANDLE;
  *numBlocks = BlocksPerSm(func, blockSize, dynamicSMemSize);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks,
                                                                      CUfunction func,
                                                                      int blockSize,
                                                                      size_t dynamicSMemSize,
                                                                      unsigned int flags) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize,
                                                  CUfunction func,
                                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                  size_t dynamicSMemSize, int blockSizeLimit) {
  PVGPU_API_TRACE("cuOccupancyMaxPotentialBlockSize", func << ", " << blockSizeLimit);
  if (CUresult r = DriverState::Get().CheckInit(); r != CUDA_SUCCESS) return r;
  if (minGridSize == nullptr || blockSize == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!LiveFunction(func)) return CUDA_ERROR_INVALID_HANDLE;
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
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int* minGridSize, int* blockSize, CUfunction func, CUoccupancyB2DSize blockSizeToDynamicSMemSize,
    size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags) {
  return cuOccupancyMaxPotentialBlockSize(minGridSize, blockSize, func,
                                          blockSizeToDynamicSMemSize, dynamicSMemSize,
                                          blockSizeLimit);
}

}  // extern "C"
