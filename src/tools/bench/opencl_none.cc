// PoCL's rows in a build without OpenCL's headers.
#include "tools/bench/opencl_device.h"

namespace pvgpu::tools::bench {

StatusOr<std::unique_ptr<OpenClDevice>> OpenClDevice::OpenPocl() {
  return Status(Code::kNotFound,
                "no PoCL row: pvgpu was built without OpenCL headers (Debian: opencl-c-headers)");
}

}  // namespace pvgpu::tools::bench
