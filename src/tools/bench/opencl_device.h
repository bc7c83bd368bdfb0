// PoCL, the reference the cpu adapter's compiling engine is measured against: the bench
// kernels written in OpenCL C (bench/kernels/bench_kernels.cl), run by PoCL's CPU device as a
// bench Device. OpenCL is loaded at run time (libOpenCL.so.1, Debian's ocl-icd with
// pocl-opencl-icd), so pvgpu neither links nor needs it; without it the row is skipped with a
// note saying what to install.
#pragma once

#include <memory>
#include <string>

#include "tools/bench/device.h"

namespace pvgpu::tools::bench {

class OpenClDevice : public Device {
 public:
  // PoCL's CPU device with the bench program built, or kNotFound with a note for the report
  // ("no PoCL: ...") when OpenCL or PoCL is not installed.
  static StatusOr<std::unique_ptr<OpenClDevice>> OpenPocl();
  ~OpenClDevice() override = default;
  // PoCL's version string, for reports.
  virtual std::string version() const = 0;
  // Compute units PoCL runs the kernels on (its worker threads).
  virtual unsigned compute_units() const = 0;

 protected:
  OpenClDevice() = default;
};

}  // namespace pvgpu::tools::bench
