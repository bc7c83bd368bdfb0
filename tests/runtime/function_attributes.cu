// Function attributes and the occupancy calculator: what cudaFuncGetAttributes reports about a
// kernel's static shared memory and launch bounds, opting into more dynamic shared memory, and
// launch shapes from the occupancy API that must then run.
#include <vector>

#include "runtime_check.h"

constexpr int kStaticShared = 3000;  // ints

__global__ void __launch_bounds__(128) Bounded(int* out) {
  __shared__ int staged[kStaticShared];
  for (int i = threadIdx.x; i < kStaticShared; i += blockDim.x) staged[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = staged[kStaticShared - 1] + blockIdx.x;
}

__global__ void Dynamic(int* out, int n) {
  extern __shared__ int scratch[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) scratch[i] = 2 * i;
  __syncthreads();
  if (threadIdx.x == 0) {
    int sum = 0;
    for (int i = 0; i < n; ++i) sum += scratch[i];
    out[blockIdx.x] = sum;
  }
}

// The architecture the running code was compiled for, as the device code sees it.
__global__ void Arch(int* out) {
#ifdef __CUDA_ARCH__
  out[0] = __CUDA_ARCH__;
#endif
}

int main() {
  cudaFuncAttributes attributes;
  // ptxVersion names the code that runs (CUB and Thrust choose their host-side tuning by it, and
  // it must match the tuning compiled into the device code).
  {
    int* arch;
    CHECK(cudaMalloc(&arch, sizeof(int)));
    Arch<<<1, 1>>>(arch);
    CHECK_LAUNCH();
    int ran = 0;
    CHECK(cudaMemcpy(&ran, arch, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFuncGetAttributes(&attributes, Arch));
    EXPECT_TRUE(ran > 0 && attributes.ptxVersion * 10 == ran);
    CHECK(cudaFree(arch));
  }
  CHECK(cudaFuncGetAttributes(&attributes, Bounded));
  EXPECT_TRUE(attributes.sharedSizeBytes == kStaticShared * sizeof(int));
  EXPECT_TRUE(attributes.maxThreadsPerBlock == 128);
  EXPECT_TRUE(attributes.numRegs >= 0);
  std::printf("Bounded: %zu bytes shared, at most %d threads, %d registers, ptx %d\n",
              attributes.sharedSizeBytes, attributes.maxThreadsPerBlock, attributes.numRegs,
              attributes.ptxVersion);
  int* out;
  CHECK(cudaMalloc(&out, 64 * sizeof(int)));
  Bounded<<<4, 128>>>(out);
  CHECK_LAUNCH();
  int host[64];
  CHECK(cudaMemcpy(host, out, 4 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < 4; ++b) EXPECT_TRUE(host[b] == kStaticShared - 1 + b);

  // More dynamic shared memory than the default 48 KiB needs an opt-in.
  int optin = 0;
  CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const int wanted = std::min(optin, 64 * 1024);
  CHECK(cudaFuncSetAttribute(Dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, wanted));
  CHECK(cudaFuncGetAttributes(&attributes, Dynamic));
  EXPECT_TRUE(attributes.maxDynamicSharedSizeBytes == wanted);
  const int n = wanted / static_cast<int>(sizeof(int));
  Dynamic<<<2, 256, wanted>>>(out, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(host, out, 2 * sizeof(int), cudaMemcpyDeviceToHost));
  const int want = n * (n - 1);  // sum of 2i for i < n
  EXPECT_TRUE(host[0] == want && host[1] == want);

  // Occupancy: a positive answer, and the suggested shape runs.
  int blocks_per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, Bounded, 128, 0));
  EXPECT_TRUE(blocks_per_sm >= 1);
  int min_grid = 0, block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, Dynamic, 1024, 0));
  EXPECT_TRUE(block >= 32 && block <= 1024 && min_grid >= 1);
  Dynamic<<<1, block, 1024>>>(out, 256);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(host, out, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(host[0] == 256 * 255);
  std::printf("occupancy: %d blocks of 128 per multiprocessor; suggested block %d, grid %d: ok\n",
              blocks_per_sm, block, min_grid);
  CHECK(cudaFree(out));
  return 0;
}
