// Driver API: error names and descriptions, from a table generated out of cuda.h.
#include <utility>

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

// Internal codes are CUresult values; a mismatch would silently report wrong errors.
constexpr std::pair<pvgpu::Code, CUresult> kSameValue[] = {
    {pvgpu::Code::kInvalidPtx, CUDA_ERROR_INVALID_PTX},
    {pvgpu::Code::kIllegalAddress, CUDA_ERROR_ILLEGAL_ADDRESS},
    {pvgpu::Code::kMisalignedAddress, CUDA_ERROR_MISALIGNED_ADDRESS},
    {pvgpu::Code::kLaunchFailed, CUDA_ERROR_LAUNCH_FAILED},
    {pvgpu::Code::kAssert, CUDA_ERROR_ASSERT},
    {pvgpu::Code::kDeviceUnavailable, CUDA_ERROR_DEVICE_UNAVAILABLE},
    {pvgpu::Code::kNoBinaryForGpu, CUDA_ERROR_NO_BINARY_FOR_GPU},
    {pvgpu::Code::kNotSupported, CUDA_ERROR_NOT_SUPPORTED},
    {pvgpu::Code::kContextIsDestroyed, CUDA_ERROR_CONTEXT_IS_DESTROYED},
    {pvgpu::Code::kLaunchOutOfResources, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES},
    {pvgpu::Code::kHardwareStackError, CUDA_ERROR_HARDWARE_STACK_ERROR},
    {pvgpu::Code::kIllegalInstruction, CUDA_ERROR_ILLEGAL_INSTRUCTION},
    {pvgpu::Code::kUnsupportedLimit, CUDA_ERROR_UNSUPPORTED_LIMIT},
    {pvgpu::Code::kHostMemoryAlreadyRegistered, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED},
    {pvgpu::Code::kHostMemoryNotRegistered, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED},
};
constexpr bool AllSame() {
  for (const auto& [code, result] : kSameValue) {
    if (static_cast<int>(code) != static_cast<int>(result)) return false;
  }
  return true;
}
static_assert(AllSame(), "a pvgpu::Code differs from the CUresult of its name");

}  // namespace

namespace pvgpu::guest {

const char* ResultName(Code code) {
  const CudaErrorEntry* entry = Find(static_cast<int>(code));
  return entry != nullptr ? entry->name : "CUDA_ERROR_UNKNOWN_RESULT";
}

namespace api {

namespace {

// The `field` of `error`'s entry; null and kInvalidValue for a value that is no CUresult.
Code Describe(CUresult error, const char* CudaErrorEntry::*field, const char** out) {
  const CudaErrorEntry* entry = Find(error);
  *out = entry != nullptr ? entry->*field : nullptr;
  return entry != nullptr ? Code::kOk : Code::kInvalidValue;
}

}  // namespace

Code GetErrorName(CUresult error, const char** pStr) {
  return Describe(error, &CudaErrorEntry::name, pStr);
}

Code GetErrorString(CUresult error, const char** pStr) {
  return Describe(error, &CudaErrorEntry::text, pStr);
}

}  // namespace api
}  // namespace pvgpu::guest
