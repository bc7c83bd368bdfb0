// The "CUDA runtime" row of `pvgpu bench nbody`: the same simulation as an ordinary nvcc-built
// CUDA runtime program (bench/runtime/nbody.cu, installed as PREFIX/libexec/pvgpu/nbody), run
// against the benchmark's host exactly as `pvgpu run` would run it, so that what NVIDIA's
// runtime layer costs shows beside the driver-API row.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "tools/bench/host_session.h"

namespace pvgpu::tools::bench {

struct RuntimeNbodyRun {
  double seconds = 0;            // the timed steps, wall clock, as the program measured them
  std::vector<float> positions;  // final positions, 4 floats per body
};

// The program's path under `layout`.
std::string RuntimeNbodyPath(const InstallLayout& layout);

// Runs the program with N bodies and `steps` timed steps after one warm-up, its output going to
// a private file; kNotFound when it was not built (no nvcc at build time).
StatusOr<RuntimeNbodyRun> RunRuntimeNbody(const HostSession& host, int n, int steps);

}  // namespace pvgpu::tools::bench
