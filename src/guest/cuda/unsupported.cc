#include "guest/cuda/unsupported.h"

#include <cuda.h>

#include "common/log.h"

namespace pvgpu::guest {

int NotSupported(const char* name, OnceFlag* once) {
  // A busy program may call an unsupported function in a loop; one warning per name is enough
  // to find what a new client needs, and PVGPU_LOG=trace still shows every call.
  PVGPU_TRACE(name << "() -> CUDA_ERROR_NOT_SUPPORTED");
  if (!once->exchange(true, std::memory_order_relaxed)) {
    PVGPU_WARN(name << " is not supported by pvgpu");
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace pvgpu::guest
