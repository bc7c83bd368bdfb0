#include "tools/bench/reference.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace pvgpu::tools::bench {
namespace {

// Eight bodies at a time: the fixed-width inner arrays let the compiler keep them in one
// vector register each and vectorize across bodies, while every body still adds its
// neighbours in index order.
constexpr int kLanes = 8;

void NbodyStepRange(const std::vector<float>& pos, std::vector<float>& vel, std::vector<float>& out,
                    int n, const NbodyParameters& p, int first, int last) {
  for (int i0 = first; i0 < last; i0 += kLanes) {
    float xi[kLanes], yi[kLanes], zi[kLanes], ax[kLanes] = {}, ay[kLanes] = {}, az[kLanes] = {};
    const int lanes = std::min(kLanes, last - i0);
    for (int l = 0; l < kLanes; ++l) {
      const int i = i0 + std::min(l, lanes - 1);
      xi[l] = pos[4 * i];
      yi[l] = pos[4 * i + 1];
      zi[l] = pos[4 * i + 2];
    }
    for (int j = 0; j < n; ++j) {
      const float xj = pos[4 * j], yj = pos[4 * j + 1], zj = pos[4 * j + 2], mj = pos[4 * j + 3];
      for (int l = 0; l < kLanes; ++l) {
        const float dx = xj - xi[l], dy = yj - yi[l], dz = zj - zi[l];
        const float dist2 = dx * dx + dy * dy + dz * dz + p.softening2;
        const float inv = 1.0f / std::sqrt(dist2);
        const float s = mj * inv * inv * inv;
        ax[l] += dx * s;
        ay[l] += dy * s;
        az[l] += dz * s;
      }
    }
    for (int l = 0; l < lanes; ++l) {
      const int i = i0 + l;
      float* v = &vel[4 * i];
      v[0] += ax[l] * p.dt;
      v[1] += ay[l] * p.dt;
      v[2] += az[l] * p.dt;
      out[4 * i] = xi[l] + v[0] * p.dt;
      out[4 * i + 1] = yi[l] + v[1] * p.dt;
      out[4 * i + 2] = zi[l] + v[2] * p.dt;
      out[4 * i + 3] = pos[4 * i + 3];
    }
  }
}

}  // namespace

void NbodySimulate(NbodyState& state, const NbodyParameters& parameters, int steps,
                   unsigned threads) {
  const int n = state.n;
  threads = std::max(1u, threads);
  std::vector<float> next(state.positions.size());
  // Whole groups of kLanes per thread, so no two threads write the same group.
  const int groups = (n + kLanes - 1) / kLanes;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t) {
      const int first = std::min(n, static_cast<int>(groups * t / threads) * kLanes);
      const int last = std::min(n, static_cast<int>(groups * (t + 1) / threads) * kLanes);
      if (first >= last) continue;
      if (threads == 1) {
        NbodyStepRange(state.positions, state.velocities, next, n, parameters, first, last);
      } else {
        workers.emplace_back(NbodyStepRange, std::cref(state.positions), std::ref(state.velocities),
                             std::ref(next), n, std::cref(parameters), first, last);
      }
    }
    for (std::thread& worker : workers) worker.join();
    state.positions.swap(next);
  }
}

double SumOfProductWithTranspose(const std::vector<float>& a, int n) {
  // C[i][j] is the dot product of rows i and j, both contiguous; eight partial sums give the
  // compiler independent chains to vectorize without reassociating one long sum.
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const float* row_i = &a[static_cast<size_t>(i) * n];
    for (int j = 0; j < n; ++j) {
      const float* row_j = &a[static_cast<size_t>(j) * n];
      float partial[8] = {};
      int k = 0;
      for (; k + 8 <= n; k += 8) {
        for (int l = 0; l < 8; ++l) partial[l] += row_i[k + l] * row_j[k + l];
      }
      float c = 0;
      for (int l = 0; l < 8; ++l) c += partial[l];
      for (; k < n; ++k) c += row_i[k] * row_j[k];
      total += c;
    }
  }
  return total;
}

double SumInOrder(const std::vector<float>& x) {
  double sum = 0;
  for (float v : x) sum += v;
  return sum;
}

}  // namespace pvgpu::tools::bench
