// Driver API: error names and descriptions, from a table generated out of cuda.h.
#include "guest/cuda/cuda_errors_autogen.h"
#include "guest/cuda/state.h"

namespace {

const CudaErrorEntry* Find(CUresult error) {
  for (const auto& entry : kCudaErrors) {
    if (entry.value == static_cast<int>(error)) return &entry;
  }
  return nullptr;
}

}  // namespace

// Internal codes are CUresult values; a mismatch would silently report wrong errors.
static_assert(static_cast<int>(pvgpu::Code::kInvalidPtx) == CUDA_ERROR_INVALID_PTX);
static_assert(static_cast<int>(pvgpu::Code::kIllegalAddress) == CUDA_ERROR_ILLEGAL_ADDRESS);
static_assert(static_cast<int>(pvgpu::Code::kMisalignedAddress) == CUDA_ERROR_MISALIGNED_ADDRESS);
static_assert(static_cast<int>(pvgpu::Code::kLaunchFailed) == CUDA_ERROR_LAUNCH_FAILED);
static_assert(static_cast<int>(pvgpu::Code::kAssert) == CUDA_ERROR_ASSERT);
static_assert(static_cast<int>(pvgpu::Code::kDeviceUnavailable) == CUDA_ERROR_DEVICE_UNAVAILABLE);
static_assert(static_cast<int>(pvgpu::Code::kNoBinaryForGpu) == CUDA_ERROR_NO_BINARY_FOR_GPU);
static_assert(static_cast<int>(pvgpu::Code::kNotSupported) == CUDA_ERROR_NOT_SUPPORTED);
static_assert(static_cast<int>(pvgpu::Code::kContextIsDestroyed) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
static_assert(static_cast<int>(pvgpu::Code::kLaunchOutOfResources) == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
static_assert(static_cast<int>(pvgpu::Code::kHardwareStackError) == CUDA_ERROR_HARDWARE_STACK_ERROR);
static_assert(static_cast<int>(pvgpu::Code::kIllegalInstruction) == CUDA_ERROR_ILLEGAL_INSTRUCTION);

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CudaErrorEntry* entry = Find(error);
  if (entry == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = entry->name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CudaErrorEntry* entry = Find(error);
  if (entry == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = entry->text;
  return CUDA_SUCCESS;
}

}  // extern "C"
