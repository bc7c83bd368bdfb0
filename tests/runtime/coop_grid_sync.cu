// Cooperative groups with a grid-wide barrier: every block of the grid must be resident at once,
// so the grid is sized from the occupancy API, launched with cudaLaunchCooperativeKernel, and
// each phase reads what other blocks wrote before the grid.sync().
#include <cooperative_groups.h>

#include <vector>

#include "runtime_check.h"

namespace cg = cooperative_groups;

// Phase 1: data[i] = i. Phase 2: data[i] += data[(i + 1) % n], the neighbour possibly written
// by another block. Phase 3: thread 0 sums everything after a second barrier.
__global__ void TwoPhases(int* data, int n, long long* sum) {
  cg::grid_group grid = cg::this_grid();
  const int i = static_cast<int>(grid.thread_rank());
  if (i < n) data[i] = i;
  grid.sync();
  const int neighbour = i < n ? data[(i + 1) % n] : 0;
  grid.sync();  // everyone has read before anyone writes
  if (i < n) data[i] += neighbour;
  grid.sync();
  if (i == 0) {
    long long total = 0;
    for (int j = 0; j < n; ++j) total += data[j];
    *sum = total;
  }
}

int main() {
  int device = 0, cooperative = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  EXPECT_TRUE(cooperative == 1);
  const int threads = 128;
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, TwoPhases, threads, 0));
  EXPECT_TRUE(per_sm >= 1);
  // More blocks than a worker could run one after another: the barrier needs them all at once.
  const int blocks = std::min(per_sm * sms, 64);
  int n = blocks * threads - 3;
  int* data;
  long long* sum;
  CHECK(cudaMalloc(&data, n * sizeof(int)));
  CHECK(cudaMalloc(&sum, sizeof(long long)));
  void* args[] = {&data, &n, &sum};
  CHECK(
      cudaLaunchCooperativeKernel(reinterpret_cast<void*>(TwoPhases), blocks, threads, args, 0, 0));
  CHECK(cudaDeviceSynchronize());
  std::vector<int> host(n);
  long long host_sum = 0;
  CHECK(cudaMemcpy(host.data(), data, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&host_sum, sum, sizeof(host_sum), cudaMemcpyDeviceToHost));
  long long want_sum = 0;
  for (int i = 0; i < n; ++i) {
    const int want = i + (i + 1) % n;
    want_sum += want;
    if (host[i] != want) {
      std::fprintf(stderr, "data[%d] = %d, want %d\n", i, host[i], want);
      return 1;
    }
  }
  EXPECT_TRUE(host_sum == want_sum);
  // A grid larger than can be resident is refused, as cudart reports it.
  EXPECT_ERROR(cudaErrorCooperativeLaunchTooLarge,
               cudaLaunchCooperativeKernel(reinterpret_cast<void*>(TwoPhases), per_sm * sms + 1,
                                           threads, args, 0, 0));
  std::printf("cooperative launch: %d blocks x %d threads, 3 grid barriers: ok\n", blocks, threads);
  return 0;
}
