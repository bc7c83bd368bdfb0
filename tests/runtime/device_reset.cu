// cudaDeviceReset and reuse: after each reset the runtime sets the device up again and launches
// the same kernels (whose module it does not reload), and device variables start again from
// their initializers because the context they lived in is gone.
#include <vector>

#include "runtime_check.h"

__device__ int generation = 5;

__global__ void Stamp(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = generation * 1000 + i;
}

int RunOnce(int n) {
  int* data;
  CHECK(cudaMalloc(&data, n * sizeof(int)));
  Stamp<<<(n + 127) / 128, 128>>>(data, n);
  CHECK_LAUNCH();
  std::vector<int> host(n);
  CHECK(cudaMemcpy(host.data(), data, n * sizeof(int), cudaMemcpyDeviceToHost));
  int value = 0;
  CHECK(cudaMemcpyFromSymbol(&value, generation, sizeof(value)));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(host[i] == value * 1000 + i);
  // Left allocated on purpose: the reset must free it.
  return value;
}

int main() {
  const int n = 3000;
  EXPECT_TRUE(RunOnce(n) == 5);
  for (int round = 0; round < 3; ++round) {
    const int changed = 9 + round;
    CHECK(cudaMemcpyToSymbol(generation, &changed, sizeof(changed)));
    int value = 0;
    CHECK(cudaMemcpyFromSymbol(&value, generation, sizeof(value)));
    EXPECT_TRUE(value == changed);
    CHECK(cudaDeviceReset());
    EXPECT_TRUE(RunOnce(n) == 5);  // a fresh context: the initializer again
  }
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaDeviceReset());
  // Everything the runtime held for the old context is gone; new objects work.
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaStreamDestroy(stream));
  std::printf("cudaDeviceReset and reuse, 4 resets: ok\n");
  return 0;
}
