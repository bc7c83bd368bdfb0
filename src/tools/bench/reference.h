// The plain C++ baselines of the nbody and matmul benchmarks: what a programmer would write for
// the host's cores without any GPU API. Compiled -O3 -march=native (see CMakeLists.txt), so the
// ratio against pvgpu is against fast code, not against an unoptimized build.
#pragma once

#include <vector>

namespace pvgpu::tools::bench {

// Bodies as the kernel lays them out: x, y, z, mass per body (positions) and x, y, z, unused
// (velocities), 4 floats each.
struct NbodyState {
  std::vector<float> positions;
  std::vector<float> velocities;
  int n = 0;
};

struct NbodyParameters {
  float dt = 0.01f;
  float softening2 = 0.01f;  // softening 0.1, squared, as in the CUDA samples
};

// `steps` steps of the same all-pairs algorithm as bench_nbody_step, bodies split across
// `threads` std::threads (1 = single-threaded). Sums over other bodies in index order, like the
// kernel, so results differ from it only by rounding.
void NbodySimulate(NbodyState& state, const NbodyParameters& parameters, int steps,
                   unsigned threads);

// sum(A * A^T) for a row-major n x n matrix, single-threaded: C is formed in float, as the
// GPU does, and summed in double.
double SumOfProductWithTranspose(const std::vector<float>& a, int n);

// The sum of x, in index order, single-threaded: the reduction's baseline.
double SumInOrder(const std::vector<float>& x);

}  // namespace pvgpu::tools::bench
