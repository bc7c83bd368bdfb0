// A failing device assert(): the launch's error is cudaErrorAssert, sticky for the context as
// on hardware, and cudaDeviceReset gives a working device back.
#include <cassert>

#include "runtime_check.h"

__global__ void CheckPositive(const int* values, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(values[i] > 0);
}

__global__ void Fill(int* values, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] = value;
}

int main() {
  const int n = 64;
  int* values;
  CHECK(cudaMalloc(&values, n * sizeof(int)));
  Fill<<<1, n>>>(values, n, 1);
  CHECK_LAUNCH();
  CheckPositive<<<1, n>>>(values, n);  // holds: no error
  CHECK_LAUNCH();

  Fill<<<1, n>>>(values, n, -1);
  CheckPositive<<<1, n>>>(values, n);
  CHECK(cudaGetLastError());  // the launch itself was fine
  EXPECT_ERROR(cudaErrorAssert, cudaDeviceSynchronize());
  EXPECT_ERROR(cudaErrorAssert, cudaMalloc(&values, 4));  // sticky
  EXPECT_ERROR(cudaErrorAssert, cudaGetLastError());      // read (and cleared) once

  CHECK(cudaDeviceReset());
  CHECK(cudaMalloc(&values, n * sizeof(int)));
  Fill<<<1, n>>>(values, n, 7);
  CHECK_LAUNCH();
  int host[n];
  CHECK(cudaMemcpy(host, values, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(host[i] == 7);
  std::printf("device assert: reported as cudaErrorAssert, device usable after reset: ok\n");
  return 0;
}
