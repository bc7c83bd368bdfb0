// The CUDA runtime's stream-ordered allocator: cudaMallocAsync and cudaFreeAsync on the
// device's default pool across two streams ordered by an event, an explicit pool
// (cudaMemPoolCreate, cudaMallocFromPoolAsync) with its counters and release threshold, and a
// reduction over pool memory checked against a CPU reference.
#include <cstdint>
#include <vector>

#include "runtime_check.h"

__global__ void scale_add(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void block_sums(int n, const float* x, float* sums) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0];
}

int main() {
  int supported = 0;
  CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
  EXPECT_TRUE(supported == 1);

  const int n = 50000, blocks = (n + 255) / 256;
  std::vector<float> x(n), y(n), out(n), sums(blocks);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97) * 0.5f;
    y[i] = static_cast<float>(i % 13);
  }
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t ready;
  CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));

  // Allocated and filled on s1, used and freed on s2 after an event.
  float *dx = nullptr, *dy = nullptr, *dsums = nullptr;
  CHECK(cudaMallocAsync(&dx, n * sizeof(float), s1));
  CHECK(cudaMallocAsync(&dy, n * sizeof(float), s1));
  CHECK(cudaMemcpyAsync(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1));
  CHECK(cudaMemcpyAsync(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1));
  CHECK(cudaEventRecord(ready, s1));
  CHECK(cudaStreamWaitEvent(s2, ready, 0));
  scale_add<<<blocks, 256, 0, s2>>>(n, 3.0f, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost, s2));
  CHECK(cudaFreeAsync(dx, s2));
  CHECK(cudaFreeAsync(dy, s2));
  CHECK(cudaStreamSynchronize(s2));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(out[i] == 3.0f * x[i] + y[i]);

  // An explicit pool that keeps its memory between uses.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t threshold = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  CHECK(cudaMallocFromPoolAsync(&dx, n * sizeof(float), pool, s1));
  CHECK(cudaMallocFromPoolAsync(&dsums, blocks * sizeof(float), pool, s1));
  uint64_t used = 0, reserved = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  EXPECT_TRUE(used >= (n + blocks) * sizeof(float) && reserved >= used);
  CHECK(cudaMemcpyAsync(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1));
  block_sums<<<blocks, 256, 0, s1>>>(n, dx, dsums);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpyAsync(sums.data(), dsums, blocks * sizeof(float), cudaMemcpyDeviceToHost, s1));
  CHECK(cudaFreeAsync(dx, s1));
  CHECK(cudaFreeAsync(dsums, s1));
  CHECK(cudaStreamSynchronize(s1));
  for (int b = 0; b < blocks; ++b) {
    float expected = 0.0f;
    for (int i = b * 256; i < n && i < (b + 1) * 256; ++i) expected += x[i];
    EXPECT_TRUE(std::fabs(sums[b] - expected) <= 1e-3f * (1.0f + expected));
  }
  uint64_t kept = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept));
  EXPECT_TRUE(used == 0 && kept == reserved);  // kept, above a threshold of "everything"
  CHECK(cudaMemPoolTrimTo(pool, 0));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept));
  EXPECT_TRUE(kept == 0);
  CHECK(cudaMemPoolDestroy(pool));

  // The default pool the runtime's cudaMallocAsync uses.
  cudaMemPool_t default_pool;
  CHECK(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  CHECK(cudaMemPoolGetAttribute(default_pool, cudaMemPoolAttrUsedMemCurrent, &used));
  EXPECT_TRUE(used == 0);
  CHECK(cudaEventDestroy(ready));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  std::printf("mempool_async: cudaMallocAsync, cudaFreeAsync and an explicit pool correct\n");
  return 0;
}
