// Driver API: error names and descriptions, from a table generated out of cuda.h.
#include "guest/cuda/cuda_api_autogen.h"
#include "guest/cuda/cuda_errors_autogen.h"
#include "guest/cuda/resolve.h"

namespace {

const CudaErrorEntry* Find(int error) {
  for (const auto& entry : kCudaErrors) {
    if (entry.value == error) return &entry;
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
static_assert(static_cast<int>(pvgpu::Code::kContextIsDestroyed) ==
              CUDA_ERROR_CONTEXT_IS_DESTROYED);
static_assert(static_cast<int>(pvgpu::Code::kLaunchOutOfResources) ==
              CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
static_assert(static_cast<int>(pvgpu::Code::kHardwareStackError) ==
              CUDA_ERROR_HARDWARE_STACK_ERROR);
static_assert(static_cast<int>(pvgpu::Code::kIllegalInstruction) == CUDA_ERROR_ILLEGAL_INSTRUCTION);
static_assert(static_cast<int>(pvgpu::Code::kUnsupportedLimit) == CUDA_ERROR_UNSUPPORTED_LIMIT);
static_assert(static_cast<int>(pvgpu::Code::kHostMemoryAlreadyRegistered) ==
              CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
static_assert(static_cast<int>(pvgpu::Code::kHostMemoryNotRegistered) ==
              CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

namespace pvgpu::guest {

const char* ResultName(Code code) {
  const CudaErrorEntry* entry = Find(static_cast<int>(code));
  return entry != nullptr ? entry->name : "CUDA_ERROR_UNKNOWN_RESULT";
}

namespace api {

Code GetErrorName(CUresult error, const char** pStr) {
  const CudaErrorEntry* entry = Find(error);
  *pStr = entry != nullptr ? entry->name : nullptr;
  return entry != nullptr ? Code::kOk : Code::kInvalidValue;
}

Code GetErrorString(CUresult error, const char** pStr) {
  const CudaErrorEntry* entry = Find(error);
  *pStr = entry != nullptr ? entry->text : nullptr;
  return entry != nullptr ? Code::kOk : Code::kInvalidValue;
}

}  // namespace api
}  // namespace pvgpu::guest
