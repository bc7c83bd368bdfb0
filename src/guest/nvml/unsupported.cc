#include "guest/nvml/unsupported.h"

#include "common/log.h"
#include "guest/nvml/nvml_api.h"

namespace pvgpu::guest::nvml {

int ReportUnsupported(const char* name, std::atomic<bool>* reported) {
  PVGPU_TRACE(name << "(...) -> NVML_ERROR_NOT_SUPPORTED");
  if (!reported->exchange(true)) {
    PVGPU_WARN(name << " is not supported by pvgpu's NVML; returning NVML_ERROR_NOT_SUPPORTED");
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

}  // namespace pvgpu::guest::nvml
